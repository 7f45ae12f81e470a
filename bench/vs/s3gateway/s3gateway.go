// Package s3gateway measures the S3 gateway next to its ceilings in one run:
// a trivial net/http server on the local disk (the HTTP ceiling of this
// machine) and core/client used directly (the file system under the
// gateway). `flyfs bench s3` prints the table.
package s3gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/cluster/frontend"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/gateway"
)

// Config sizes the run; zero values take the defaults.
type Config struct {
	Dir         string        // scratch directory (default: a temporary one)
	Clients     int           // concurrent clients (16)
	BigBytes    int64         // large object size (64 MiB)
	BigObjects  int           // large objects per system (32)
	SmallFor    time.Duration // duration of each 4 KiB measurement (5 s)
	MPUBytes    int64         // multipart object for the completion latency (1 GiB)
	MPUPart     int64         // its part size (64 MiB)
	ListEntries int           // entries of the listed directory (100 000)
	NoSync      bool          // acknowledge writes before the disk has them (both sides)
	Nodes       int           // storage services (1)
	CopyBytes   int64         // an extra object, uploaded in parts, whose shared copy is timed (0: none)
}

// Row is one line of the table.
type Row struct {
	What, Unit          string
	Gateway, HTTP, Core float64 // 0: not measured
	Ratio               float64 // Gateway / HTTP (or / local readdir)
	Target              string
}

const (
	ak = "BENCHROOT"
	sk = "bench-root-secret"
)

// Run measures and prints the table to w.
func Run(ctx context.Context, cfg Config, w io.Writer) (rows []Row, err error) {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.Clients, 16)
	def(&cfg.BigObjects, 32)
	def(&cfg.ListEntries, 100_000)
	def(&cfg.Nodes, 1)
	if cfg.BigBytes <= 0 {
		cfg.BigBytes = 64 << 20
	}
	if cfg.SmallFor <= 0 {
		cfg.SmallFor = 5 * time.Second
	}
	if cfg.MPUBytes <= 0 {
		cfg.MPUBytes = 1 << 30
	}
	if cfg.MPUPart <= 0 {
		cfg.MPUPart = 64 << 20
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flyfs-bench-s3-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}

	fmt.Fprintf(w, "flyfs bench s3: %d clients, %d x %d MiB objects, 4 KiB ops for %v, no-sync=%v, %d storage node(s)\n",
		cfg.Clients, cfg.BigObjects, cfg.BigBytes>>20, cfg.SmallFor, cfg.NoSync, cfg.Nodes)
	c, err := cluster.Start(ctx, cluster.Config{Dir: filepath.Join(dir, "cluster"), NoSync: cfg.NoSync,
		Nodes: cfg.Nodes, Replicas: 1, Chains: 8, Metads: 1, ChunkSize: 4 << 20, Stripe: 8,
		Local: true}) // the roles and the front end in one process, as flyfs server runs them
	if err != nil {
		return nil, err
	}
	defer c.Close()
	gwAddr, err := frontend.StartGateway(ctx, c, frontend.Listen{Addr: "127.0.0.1:0"}, gateway.Config{RootAccessKey: ak, RootSecretKey: sk})
	if err != nil {
		return nil, err
	}
	gwURL := "http://" + gwAddr
	fs, err := c.FS(ctx)
	if err != nil {
		return nil, err
	}
	local := filepath.Join(dir, "trivial")
	os.MkdirAll(local, 0o755)
	triv := &trivial{dir: local, sync: !cfg.NoSync}
	trURL, stopTR, err := serve(triv)
	if err != nil {
		return nil, err
	}
	defer stopTR()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * cfg.Clients, DisableCompression: true}, Timeout: 10 * time.Minute}
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(gwURL), UsePathStyle: true, HTTPClient: hc,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, "")})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")}); err != nil {
		return nil, err
	}
	g := &gwClient{url: gwURL, hc: hc, signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })}
	t := &trClient{url: trURL, hc: hc}

	big := make([]byte, cfg.BigBytes)
	rand.Read(big)
	fs.MkdirAll(ctx, "/core", 0o755)
	// Large objects: PUT, then GET, each system in turn.
	type sys struct {
		put func(ctx context.Context, key string, data []byte) error
		get func(ctx context.Context, key string, n int64) error
	}
	systems := []sys{
		{func(ctx context.Context, k string, d []byte) error { return g.put(ctx, "big/"+k, d) }, func(ctx context.Context, k string, n int64) error { return g.get(ctx, "big/"+k, n) }},
		{func(ctx context.Context, k string, d []byte) error { return t.put(ctx, "big-"+k, d) }, func(ctx context.Context, k string, n int64) error { return t.get(ctx, "big-"+k, n) }},
		{func(ctx context.Context, k string, d []byte) error { return corePut(ctx, fs, "/core/big-"+k, d) }, func(ctx context.Context, k string, n int64) error { return coreGet(ctx, fs, "/core/big-"+k, n) }},
	}
	var putMBs, getMBs [3]float64
	for i, s := range systems {
		secs, err := fixedWork(cfg.Clients, cfg.BigObjects, func(j int) error { return s.put(ctx, fmt.Sprint(j), big) })
		if err != nil {
			return nil, fmt.Errorf("large PUT (system %d): %w", i, err)
		}
		putMBs[i] = float64(cfg.BigObjects) * float64(cfg.BigBytes) / secs / (1 << 20)
		secs, err = fixedWork(cfg.Clients, cfg.BigObjects, func(j int) error { return s.get(ctx, fmt.Sprint(j), cfg.BigBytes) })
		if err != nil {
			return nil, fmt.Errorf("large GET (system %d): %w", i, err)
		}
		getMBs[i] = float64(cfg.BigObjects) * float64(cfg.BigBytes) / secs / (1 << 20)
	}
	rows = append(rows, Row{fmt.Sprintf("PUT %d MiB objects", cfg.BigBytes>>20), "MiB/s", putMBs[0], putMBs[1], putMBs[2], putMBs[0] / putMBs[1], ">= 0.6"})
	rows = append(rows, Row{fmt.Sprintf("GET %d MiB objects", cfg.BigBytes>>20), "MiB/s", getMBs[0], getMBs[1], getMBs[2], getMBs[0] / getMBs[1], ">= 0.6"})

	// 4 KiB objects: as many PUTs as fit in the window, then GETs of them.
	small := big[:4096]
	fs.MkdirAll(ctx, "/core/small", 0o755)
	var putOps, getOps [3]float64
	smallSys := []sys{
		{func(ctx context.Context, k string, d []byte) error { return g.put(ctx, "small/"+k, d) }, func(ctx context.Context, k string, n int64) error { return g.get(ctx, "small/"+k, n) }},
		{func(ctx context.Context, k string, d []byte) error { return t.put(ctx, "small-"+k, d) }, func(ctx context.Context, k string, n int64) error { return t.get(ctx, "small-"+k, n) }},
		{func(ctx context.Context, k string, d []byte) error { return corePut(ctx, fs, "/core/small/"+k, d) }, func(ctx context.Context, k string, n int64) error { return coreGet(ctx, fs, "/core/small/"+k, n) }},
	}
	for i, s := range smallSys {
		var written [64]atomic.Int64
		n, d, err := bench.Drive(ctx, cfg.SmallFor, cfg.Clients, func(ctx context.Context, worker int, j int64) error {
			err := s.put(ctx, fmt.Sprintf("%d-%d", worker, j), small)
			if err == nil {
				written[worker%64].Store(j + 1)
			}
			return cutShort(ctx, err)
		})
		if err != nil {
			return nil, fmt.Errorf("4 KiB PUT (system %d): %w", i, err)
		}
		putOps[i] = float64(n) / d.Seconds()
		n, d, err = bench.Drive(ctx, cfg.SmallFor, cfg.Clients, func(ctx context.Context, worker int, j int64) error {
			have := written[worker%64].Load()
			if have == 0 {
				return errors.New("no object written by this worker")
			}
			return cutShort(ctx, s.get(ctx, fmt.Sprintf("%d-%d", worker, j%have), 4096))
		})
		if err != nil {
			return nil, fmt.Errorf("4 KiB GET (system %d): %w", i, err)
		}
		getOps[i] = float64(n) / d.Seconds()
	}
	rows = append(rows, Row{"PUT 4 KiB objects", "ops/s", putOps[0], putOps[1], putOps[2], putOps[0] / putOps[1], ">= 0.3"})
	rows = append(rows, Row{"GET 4 KiB objects", "ops/s", getOps[0], getOps[1], getOps[2], getOps[0] / getOps[1], ">= 0.5"})

	// Multipart completion latency, at two sizes: it must not grow.
	for _, size := range []int64{cfg.MPUBytes / 8, cfg.MPUBytes} {
		lat, err := completeLatency(ctx, s3c, size, cfg.MPUPart, big, cfg.Clients)
		if err != nil {
			return nil, fmt.Errorf("multipart: %w", err)
		}
		rows = append(rows, Row{fmt.Sprintf("CompleteMultipartUpload of %d MiB (%d parts)", size>>20, (size+cfg.MPUPart-1)/cfg.MPUPart), "ms", lat.Seconds() * 1000, 0, 0, 0, "flat in size"})
	}

	// CopyObject of those objects: sharing their chunks, then (the source
	// touched through the file system, so its ETag must be computed anew)
	// by copying the bytes. Sharing must not grow with the size.
	copySizes := []int64{cfg.MPUBytes / 8, cfg.MPUBytes}
	if cfg.CopyBytes > 0 {
		if _, err := completeLatency(ctx, s3c, cfg.CopyBytes, cfg.MPUPart, big, cfg.Clients); err != nil {
			return nil, fmt.Errorf("multipart upload of the copy source: %w", err)
		}
		copySizes = append(copySizes, cfg.CopyBytes)
	}
	for _, size := range copySizes {
		shared, byBytes, err := copyLatency(ctx, s3c, fs, fmt.Sprintf("mpu-%d", size), size <= 5<<30)
		if err != nil {
			return nil, fmt.Errorf("copy: %w", err)
		}
		row := Row{fmt.Sprintf("CopyObject of %d MiB, chunks shared (HTTP col: the copy by bytes)", size>>20), "ms",
			shared.Seconds() * 1000, byBytes.Seconds() * 1000, 0, 0, "flat in size"}
		if byBytes > 0 { // over 5 GiB a copy by bytes is refused, as S3 refuses it
			row.Ratio = shared.Seconds() / byBytes.Seconds()
		}
		rows = append(rows, row)
	}

	// Listing a big directory with a delimiter, all pages, next to readdir.
	cold, warm, localPerSec, err := listing(ctx, fs, s3c, local, cfg.ListEntries, cfg.Clients)
	if err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	rows = append(rows, Row{fmt.Sprintf("ListObjectsV2 of %d entries, delimiter '/', cold (HTTP col: local readdir)", cfg.ListEntries), "keys/s", cold, localPerSec, 0, cold / localPerSec, ">= 0.2"})
	rows = append(rows, Row{fmt.Sprintf("ListObjectsV2 of %d entries, delimiter '/', warm (HTTP col: local readdir)", cfg.ListEntries), "keys/s", warm, localPerSec, 0, warm / localPerSec, ">= 0.2"})

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tunit\tS3 gateway\ttrivial HTTP\tcore/client\tgateway/HTTP\ttarget\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.What, r.Unit, num(r.Gateway), num(r.HTTP), num(r.Core), ratio(r.Ratio), r.Target)
	}
	return rows, tw.Flush()
}

// cutShort forgives an error of a call the window's end cut short (the RPC
// layer may report its deadline a moment before the context does).
func cutShort(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 100*time.Millisecond {
		return nil
	}
	return err
}

func num(v float64) string {
	if v == 0 {
		return "-"
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// serve runs h on a loopback listener.
func serve(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	return "http://" + l.Addr().String(), func() { srv.Close() }, nil
}

// fixedWork runs n operations on `clients` goroutines and returns seconds.
func fixedWork(clients, n int, op func(i int) error) (float64, error) {
	took, err := bench.Spread(clients, n, op)
	return took.Seconds(), err
}

// trivial is the HTTP ceiling: PUT writes the body to a file, GET sends it.
type trivial struct {
	dir  string
	sync bool
}

func (t *trivial) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := filepath.Join(t.dir, filepath.Base(r.URL.Path))
	switch r.Method {
	case http.MethodPut:
		f, err := os.Create(p)
		if err == nil {
			_, err = io.Copy(f, r.Body)
			if err == nil && t.sync {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
		}
	case http.MethodGet:
		f, err := os.Open(p)
		if err != nil {
			http.Error(w, err.Error(), 404)
			return
		}
		defer f.Close()
		st, _ := f.Stat()
		w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
		io.Copy(w, f)
	}
}

type trClient struct {
	url string
	hc  *http.Client
}

func (c *trClient) put(ctx context.Context, key string, data []byte) error {
	req, _ := http.NewRequestWithContext(ctx, "PUT", c.url+"/"+key, bytes.NewReader(data))
	return do(c.hc, req, 0)
}

func (c *trClient) get(ctx context.Context, key string, n int64) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/"+key, nil)
	return do(c.hc, req, n)
}

// gwClient sends signed requests with UNSIGNED-PAYLOAD, the way SDKs talk
// to S3 over TLS, so the body is not hashed twice on the client.
type gwClient struct {
	url    string
	hc     *http.Client
	signer *v4.Signer
}

func (c *gwClient) sign(req *http.Request) error {
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	return c.signer.SignHTTP(req.Context(), aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
}

func (c *gwClient) put(ctx context.Context, key string, data []byte) error {
	req, _ := http.NewRequestWithContext(ctx, "PUT", c.url+"/bench/"+key, bytes.NewReader(data))
	if err := c.sign(req); err != nil {
		return err
	}
	return do(c.hc, req, 0)
}

func (c *gwClient) get(ctx context.Context, key string, n int64) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/bench/"+key, nil)
	if err := c.sign(req); err != nil {
		return err
	}
	return do(c.hc, req, n)
}

func do(hc *http.Client, req *http.Request, want int64) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
	}
	if want > 0 && n != want {
		return fmt.Errorf("%s %s: %d bytes, want %d", req.Method, req.URL.Path, n, want)
	}
	return nil
}

// corePut and coreGet use core/client directly, in 8 MiB pieces.
func corePut(ctx context.Context, fs *client.FS, p string, data []byte) error {
	f, err := fs.Create(ctx, p, 0o644)
	if err != nil {
		return err
	}
	for off := 0; off < len(data); off += 8 << 20 {
		if _, err := f.WriteAtContext(ctx, data[off:min(off+8<<20, len(data))], int64(off)); err != nil {
			f.Close()
			return err
		}
	}
	return f.CloseContext(ctx)
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 8<<20); return &b }}

func coreGet(ctx context.Context, fs *client.FS, p string, n int64) error {
	f, err := fs.Open(ctx, p)
	if err != nil {
		return err
	}
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	var got int64
	for got < n {
		k, err := f.ReadAtContext(ctx, (*bp)[:min(int64(len(*bp)), n-got)], got)
		got += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if got != n {
		return fmt.Errorf("%s: %d bytes, want %d", p, got, n)
	}
	return nil
}

// completeLatency uploads size bytes in equal parts and times Complete.
func completeLatency(ctx context.Context, c *s3.Client, size, part int64, src []byte, clients int) (time.Duration, error) {
	key := fmt.Sprintf("mpu-%d", size)
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bench"), Key: &key})
	if err != nil {
		return 0, err
	}
	n := int((size + part - 1) / part)
	parts := make([]types.CompletedPart, n)
	body := make([]byte, part)
	for off := 0; off < len(body); off += len(src) {
		copy(body[off:], src)
	}
	_, err = fixedWork(min(clients, 8), n, func(i int) error {
		sz := min(part, size-int64(i)*part)
		o, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bench"), Key: &key, UploadId: cu.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body[:sz])})
		if err != nil {
			return err
		}
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: o.ETag}
		return nil
	})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bench"), Key: &key, UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bench"), Key: &key})
	if err != nil || aws.ToInt64(h.ContentLength) != size {
		return 0, fmt.Errorf("completed object: %v %v", err, h)
	}
	return d, nil
}

// copyLatency times a CopyObject of key that shares its chunks, and, with
// byBytes, one after the source was touched through the file system (one
// byte rewritten as it was: the gateway no longer knows its ETag, so the
// copy reads and writes every byte). Both copies go again at the end.
func copyLatency(ctx context.Context, c *s3.Client, fs *client.FS, key string, byBytes bool) (shared, bytesCopy time.Duration, err error) {
	cp := func(to string) (time.Duration, error) {
		start := time.Now()
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bench"), Key: aws.String(to), CopySource: aws.String("bench/" + key)})
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		return d, nil
	}
	defer func() {
		for _, k := range []string{key + ".shared", key + ".bytes"} {
			c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bench"), Key: aws.String(k)})
		}
	}()
	if shared, err = cp(key + ".shared"); err != nil || !byBytes {
		return shared, 0, err
	}
	f, err := fs.OpenFile(ctx, "/bench/"+key, os.O_RDWR, 0)
	if err != nil {
		return 0, 0, err
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, 0); err != nil {
		f.Close()
		return 0, 0, err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return 0, 0, err
	}
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	bytesCopy, err = cp(key + ".bytes")
	return shared, bytesCopy, err
}

// listing fills a directory of n files through core/client (and a local one
// with n files), then lists all pages with a delimiter through the gateway
// and reads the local directory; it returns keys/s of both.
func listing(ctx context.Context, fs *client.FS, c *s3.Client, localRoot string, n, clients int) (cold, warm, local float64, err error) {
	meta := fs.Meta()
	if _, err := meta.MkdirAll(ctx, "/bench/big-dir", 0o755, client.Creds{}, true); err != nil {
		return 0, 0, 0, err
	}
	dir, err := meta.Resolve(ctx, "/bench/big-dir", true)
	if err != nil {
		return 0, 0, 0, err
	}
	localDir := filepath.Join(localRoot, "big-dir")
	os.MkdirAll(localDir, 0o755)
	if _, err := fixedWork(clients, n, func(i int) error {
		name := fmt.Sprintf("f%08d", i)
		_, _, _, err := meta.Create(ctx, dir.ID, name, 0o644, os.O_CREATE|os.O_EXCL, client.Creds{})
		if err != nil {
			return err
		}
		f, err := os.Create(filepath.Join(localDir, name))
		if err != nil {
			return err
		}
		return f.Close()
	}); err != nil {
		return 0, 0, 0, err
	}
	listAll := func() (float64, error) {
		start := time.Now()
		total := 0
		in := &s3.ListObjectsV2Input{Bucket: aws.String("bench"), Prefix: aws.String("big-dir/"), Delimiter: aws.String("/")}
		for {
			out, err := c.ListObjectsV2(ctx, in)
			if err != nil {
				return 0, err
			}
			total += len(out.Contents) + len(out.CommonPrefixes)
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.ContinuationToken = out.NextContinuationToken
		}
		if total != n {
			return 0, fmt.Errorf("listed %d keys, want %d", total, n)
		}
		return float64(total) / time.Since(start).Seconds(), nil
	}
	// Cold: the gateway reads every file's object record (one call each);
	// warm: its cache of records still holds (inode, ctime, gen).
	gwRate, err := listAll()
	if err != nil {
		return 0, 0, 0, err
	}
	warmRate, err := listAll()
	if err != nil {
		return 0, 0, 0, err
	}
	// A fresh open and a full read of the local directory (its inodes are
	// in the page cache, as metad's are in Pebble's).
	start := time.Now()
	f, err := os.Open(localDir)
	if err != nil {
		return 0, 0, 0, err
	}
	count := 0
	for {
		names, err := f.Readdirnames(1000)
		count += len(names)
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return 0, 0, 0, err
		}
	}
	f.Close()
	localRate := float64(count) / time.Since(start).Seconds()
	if count != n {
		return 0, 0, 0, fmt.Errorf("local readdir saw %d, want %d", count, n)
	}
	return gwRate, warmRate, localRate, nil
}

var _ = strings.Join
