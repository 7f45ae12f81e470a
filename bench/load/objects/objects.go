// Package objects measures an S3 server: PUT, GET, LIST and DELETE of a set
// of objects with many concurrent clients. It speaks plain S3 through the AWS
// SDK (path-style addressing), so it runs against the flyfs gateway and any
// other S3 server alike.
package objects

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/flyfs/flyfs/bench"
)

// Config of a run.
type Config struct {
	Endpoint             string // http(s)://host:port
	AccessKey, SecretKey string
	Region               string
	Bucket               string
	// CreateBucket creates the bucket when it does not exist (and removes
	// it at the end if this run created it).
	CreateBucket bool
	Objects      int
	Size         int64
	Concurrency  int
	// GetRounds is how many times each object is read: the first round is
	// the get phase, the others the reget phase (data a server has read
	// lately, hot in whatever cache it keeps).
	GetRounds int
	// Lists is how many full listings of the run's objects LIST makes.
	Lists       int
	ListMaxKeys int32
	Retries     int
	InsecureTLS bool
	// Keep leaves the objects (and skips the DELETE phase).
	Keep     bool
	Progress io.Writer
}

// Defaults are the flags' defaults.
func Defaults() Config {
	return Config{Region: "us-east-1", CreateBucket: true, Objects: 500, Size: 1 << 20, Concurrency: 16, GetRounds: 1, Lists: 20, ListMaxKeys: 1000}
}

func (c *Config) check() error {
	switch {
	case c.Endpoint == "":
		return errors.New("--endpoint is required (e.g. http://127.0.0.1:9300)")
	case !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://"):
		return fmt.Errorf("--endpoint %q: want an http:// or https:// URL", c.Endpoint)
	case c.Bucket == "":
		return errors.New("--bucket is required")
	case c.AccessKey == "" || c.SecretKey == "":
		return errors.New("--access-key and --secret-key are required")
	case c.Objects < 1:
		return fmt.Errorf("objects %d: want at least 1", c.Objects)
	case c.Size < 0 || c.Size > 5<<30:
		return fmt.Errorf("object size %d: want 0..5GiB (one PUT)", c.Size)
	case c.Concurrency < 1:
		return fmt.Errorf("concurrency %d: want at least 1", c.Concurrency)
	case c.GetRounds < 1:
		return fmt.Errorf("get-rounds %d: want at least 1", c.GetRounds)
	case c.Lists < 0 || c.ListMaxKeys < 1 || c.ListMaxKeys > 1000:
		return errors.New("lists must not be negative and list-max-keys must be 1..1000")
	case c.Retries < 0:
		return errors.New("retries must not be negative")
	}
	return nil
}

// NewClient builds an S3 client from explicit settings only: no shared config
// files and no AWS_* environment (an AWS_CA_BUNDLE meant for another endpoint
// would otherwise break TLS here).
func NewClient(c Config) *s3.Client {
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          c.Concurrency * 2,
		MaxIdleConnsPerHost:   c.Concurrency * 2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: c.InsecureTLS},
	}
	return s3.New(s3.Options{
		Region:       c.Region,
		BaseEndpoint: aws.String(c.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(c.AccessKey, c.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: tr},
		// Plain requests: many S3 servers do not take the SDK's newer
		// trailing checksums, and the benchmark checks the data itself.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           c.Retries + 1,
	})
}

type run struct {
	cfg    Config
	cli    *s3.Client
	prefix string
	block  []byte // the random bytes every object is made of
	rep    *bench.Report
}

// Run measures the server and returns the report. Objects go under a fresh
// prefix and are deleted by the DELETE phase (or after a failure).
func Run(ctx context.Context, cfg Config) (*bench.Report, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	var id [4]byte
	rand.Read(id[:])
	r := &run{cfg: cfg, cli: NewClient(cfg), prefix: "flyfs-bench-" + hex.EncodeToString(id[:]) + "/", block: make([]byte, 1<<20)}
	rand.Read(r.block)
	r.rep = bench.NewReport("s3", cfg.Endpoint+"/"+cfg.Bucket, map[string]any{
		"objects": cfg.Objects, "size": bench.FormatSize(cfg.Size), "concurrency": cfg.Concurrency,
		"lists": cfg.Lists, "list_max_keys": cfg.ListMaxKeys, "prefix": r.prefix})
	r.rep.Notes = append(r.rep.Notes, "every GET checks the object byte for byte; every LIST checks it saw every object, in order, with its size")
	created, err := r.ensureBucket(ctx)
	if err != nil {
		return nil, err
	}
	err = r.all(ctx)
	if err != nil && !cfg.Keep {
		// Best effort: leave no objects behind after a failure.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r.cleanup(cctx)
		cancel()
	}
	if created && !cfg.Keep {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, derr := r.cli.DeleteBucket(cctx, &s3.DeleteBucketInput{Bucket: aws.String(cfg.Bucket)})
		cancel()
		if derr != nil && err == nil {
			err = fmt.Errorf("remove the bucket this run created: %w", derr)
		}
	}
	return r.rep, err
}

func (r *run) ensureBucket(ctx context.Context) (created bool, err error) {
	_, err = r.cli.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(r.cfg.Bucket)})
	if err == nil {
		return false, nil
	}
	var nf *types.NotFound
	if !errors.As(err, &nf) && errCode(err) != "NotFound" && errCode(err) != "NoSuchBucket" {
		return false, fmt.Errorf("bucket %s: %w", r.cfg.Bucket, err)
	}
	if !r.cfg.CreateBucket {
		return false, fmt.Errorf("bucket %s does not exist (drop --create-bucket=false to create it)", r.cfg.Bucket)
	}
	if _, err := r.cli.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(r.cfg.Bucket)}); err != nil {
		return false, fmt.Errorf("create bucket %s: %w", r.cfg.Bucket, err)
	}
	return true, nil
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func (r *run) all(ctx context.Context) error {
	phases := []bench.Phase{r.put(), r.get("get", 1)}
	if r.cfg.GetRounds > 1 {
		phases = append(phases, r.get("reget", r.cfg.GetRounds-1))
	}
	if r.cfg.Lists > 0 {
		phases = append(phases, r.list())
	}
	if !r.cfg.Keep {
		phases = append(phases, r.del())
	}
	for _, p := range phases {
		p.Progress = r.cfg.Progress
		if p.Workers == 0 {
			p.Workers = r.cfg.Concurrency
		}
		res, err := bench.Run(ctx, p)
		if err != nil {
			return err
		}
		r.rep.Phases = append(r.rep.Phases, res)
	}
	return nil
}

func (r *run) key(i int64) string { return fmt.Sprintf("%sobj%08d", r.prefix, i) }

func (r *run) put() bench.Phase {
	return bench.Phase{Name: "put", Unit: bench.FormatSize(r.cfg.Size) + " object", Count: int64(r.cfg.Objects),
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			_, err := r.cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(r.cfg.Bucket), Key: aws.String(r.key(i)),
				Body: newObjectReader(r.block, i, r.cfg.Size), ContentLength: aws.Int64(r.cfg.Size)})
			if err != nil {
				return 0, err
			}
			return r.cfg.Size, nil
		}}
}

// get reads every object rounds times, in rounds.
func (r *run) get(name string, rounds int) bench.Phase {
	bufs := make([][]byte, r.cfg.Concurrency)
	for w := range bufs {
		bufs[w] = make([]byte, 512<<10) // half read into, half expected
	}
	objects := int64(r.cfg.Objects)
	return bench.Phase{Name: name, Unit: bench.FormatSize(r.cfg.Size) + " object", Count: objects * int64(rounds),
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			i %= objects
			out, err := r.cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(r.cfg.Bucket), Key: aws.String(r.key(i))})
			if err != nil {
				return 0, err
			}
			defer out.Body.Close()
			n, err := checkObject(out.Body, bufs[w][:256<<10], bufs[w][256<<10:], r.block, i, r.cfg.Size)
			if err != nil {
				return n, fmt.Errorf("%s: %w", r.key(i), err)
			}
			return n, nil
		}}
}

func (r *run) list() bench.Phase {
	return bench.Phase{Name: "list", Unit: fmt.Sprintf("listing of %d", r.cfg.Objects), Count: int64(r.cfg.Lists),
		Workers: min(r.cfg.Concurrency, r.cfg.Lists),
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			p := s3.NewListObjectsV2Paginator(r.cli, &s3.ListObjectsV2Input{Bucket: aws.String(r.cfg.Bucket),
				Prefix: aws.String(r.prefix), MaxKeys: aws.Int32(r.cfg.ListMaxKeys)})
			var n int
			last := ""
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					return 0, err
				}
				for _, o := range page.Contents {
					k := aws.ToString(o.Key)
					if k <= last {
						return 0, fmt.Errorf("listing out of order: %q after %q", k, last)
					}
					if aws.ToInt64(o.Size) != r.cfg.Size {
						return 0, fmt.Errorf("%s listed with size %d, put %d", k, aws.ToInt64(o.Size), r.cfg.Size)
					}
					last = k
					n++
				}
			}
			if n != r.cfg.Objects {
				return 0, fmt.Errorf("listing found %d objects, put %d", n, r.cfg.Objects)
			}
			return 0, nil
		}}
}

func (r *run) del() bench.Phase {
	return bench.Phase{Name: "delete", Unit: "object", Count: int64(r.cfg.Objects),
		Op: func(ctx context.Context, w int, i int64) (int64, error) {
			_, err := r.cli.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(r.cfg.Bucket), Key: aws.String(r.key(i))})
			return 0, err
		}}
}

// cleanup deletes whatever the run left under its prefix.
func (r *run) cleanup(ctx context.Context) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(r.cli, &s3.ListObjectsV2Input{Bucket: aws.String(r.cfg.Bucket), Prefix: aws.String(r.prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			break
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	var wg sync.WaitGroup
	ch := make(chan string)
	for w := 0; w < r.cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range ch {
				r.cli.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(r.cfg.Bucket), Key: aws.String(k)})
			}
		}()
	}
	for _, k := range keys {
		ch <- k
	}
	close(ch)
	wg.Wait()
}

// objectReader produces object i without holding it in memory: a 16-byte
// stamp (the object's number), then the shared random block over and over.
// It seeks, so the SDK can hash the payload and rewind for a retry.
type objectReader struct {
	block []byte
	stamp [16]byte
	size  int64
	off   int64
}

func newObjectReader(block []byte, i, size int64) *objectReader {
	o := &objectReader{block: block, size: size}
	binary.LittleEndian.PutUint64(o.stamp[0:], uint64(i)+1)
	binary.LittleEndian.PutUint64(o.stamp[8:], uint64(size))
	return o
}

// fill writes the object's content at [off, off+len(p)).
func (o *objectReader) fill(p []byte, off int64) {
	for len(p) > 0 {
		var n int
		if off < 16 {
			n = copy(p, o.stamp[off:])
		} else {
			n = copy(p, o.block[(off-16)%int64(len(o.block)):])
		}
		p, off = p[n:], off+int64(n)
	}
}

func (o *objectReader) Read(p []byte) (int, error) {
	if o.off >= o.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), o.size-o.off)]
	o.fill(p, o.off)
	o.off += int64(len(p))
	return len(p), nil
}

func (o *objectReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.off
	case io.SeekEnd:
		offset += o.size
	default:
		return 0, errors.New("bad whence")
	}
	if offset < 0 {
		return 0, errors.New("negative position")
	}
	o.off = offset
	return offset, nil
}

// checkObject reads a GET's body and checks it is object i, byte for byte,
// comparing as it reads so nothing is held whole.
func checkObject(body io.Reader, buf, exp, block []byte, i, size int64) (int64, error) {
	want := newObjectReader(block, i, size)
	var n int64
	for {
		k, err := body.Read(buf)
		if k > 0 {
			if n+int64(k) > size {
				return n, fmt.Errorf("body longer than the %d bytes put", size)
			}
			want.fill(exp[:k], n)
			if !bytes.Equal(exp[:k], buf[:k]) {
				return n, fmt.Errorf("content differs from what was put, within bytes %d..%d", n, n+int64(k))
			}
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if n != size {
		return n, fmt.Errorf("body of %d bytes, put %d", n, size)
	}
	return n, nil
}
