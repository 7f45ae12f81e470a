package objects

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/flyfs/flyfs/e2e/harness/s3gateway"
)

const (
	ak = "BENCHROOT"
	sk = "bench-root-secret-key"
)

func TestAgainstGateway(t *testing.T) {
	url := s3gateway.Start(t, ak, sk)
	ctx := context.Background()
	cfg := Defaults()
	cfg.Endpoint, cfg.AccessKey, cfg.SecretKey, cfg.Bucket = url, ak, sk, "bench"
	cfg.Objects, cfg.Size, cfg.Concurrency, cfg.Lists, cfg.ListMaxKeys, cfg.GetRounds = 40, 300_000, 4, 3, 7, 3
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"put", "get", "reget", "list", "delete"} {
		p, ok := rep.Phase(name)
		if !ok || p.Ops == 0 || p.Latency.P50US <= 0 {
			t.Fatalf("phase %s: %+v (found %v)", name, p, ok)
		}
	}
	if p, _ := rep.Phase("get"); p.Bytes != 40*300_000 {
		t.Errorf("get moved %d bytes", p.Bytes)
	}
	if p, _ := rep.Phase("reget"); p.Bytes != 2*40*300_000 {
		t.Errorf("reget moved %d bytes, want two rounds", p.Bytes)
	}
	var tb bytes.Buffer
	rep.WriteTable(&tb)
	t.Logf("\n%s", tb.String())

	// The run created the bucket, so it removed it again, objects and all.
	cli := NewClient(cfg)
	if _, err := cli.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("bench")}); err == nil {
		t.Error("the bucket the run created is still there")
	}

	// An existing bucket is used and kept; --keep leaves the objects.
	if _, err := cli.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("mine")}); err != nil {
		t.Fatal(err)
	}
	cfg.Bucket, cfg.Keep, cfg.Objects, cfg.Size = "mine", true, 5, 0
	rep, err = Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Phase("delete"); ok {
		t.Error("--keep ran the delete phase")
	}
	lo, err := cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("mine")})
	if err != nil || len(lo.Contents) != 5 {
		t.Fatalf("kept objects: %v, %v", lo, err)
	}
}

// A wrong secret fails the run with the server's refusal, not a panic or a
// silent zero.
func TestWrongKeyFails(t *testing.T) {
	url := s3gateway.Start(t, ak, sk)
	cfg := Defaults()
	cfg.Endpoint, cfg.AccessKey, cfg.SecretKey, cfg.Bucket = url, ak, "wrong", "bench-wrong-key"
	cfg.Objects = 2
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("err = %v", err)
	}
}

func TestObjectReaderAndCheck(t *testing.T) {
	block := make([]byte, 1000)
	for i := range block {
		block[i] = byte(i * 7)
	}
	for _, size := range []int64{0, 5, 16, 17, 2500} {
		r := newObjectReader(block, 3, size)
		got, err := io.ReadAll(r)
		if err != nil || int64(len(got)) != size {
			t.Fatalf("size %d: read %d, %v", size, len(got), err)
		}
		buf, exp := make([]byte, 64), make([]byte, 64)
		if _, err := checkObject(bytes.NewReader(got), buf, exp, block, 3, size); err != nil {
			t.Errorf("size %d: own content refused: %v", size, err)
		}
		if size > 0 {
			if _, err := checkObject(bytes.NewReader(got), buf, exp, block, 4, size); err == nil && size >= 8 {
				t.Errorf("size %d: object 3 passed as object 4", size)
			}
			bad := bytes.Clone(got)
			bad[len(bad)-1] ^= 1
			if _, err := checkObject(bytes.NewReader(bad), buf, exp, block, 3, size); err == nil {
				t.Errorf("size %d: a flipped last byte passed", size)
			}
			if _, err := checkObject(bytes.NewReader(got[:size-1]), buf, exp, block, 3, size); err == nil {
				t.Errorf("size %d: a short body passed", size)
			}
		}
		if _, err := checkObject(bytes.NewReader(append(got, 0)), buf, exp, block, 3, size); err == nil {
			t.Errorf("size %d: a long body passed", size)
		}
		// Seeking back replays the same bytes (the SDK rewinds to retry).
		r.Seek(0, io.SeekStart)
		again, _ := io.ReadAll(r)
		if !bytes.Equal(again, got) {
			t.Errorf("size %d: replay differs", size)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"no endpoint":  func(c *Config) { c.Endpoint = "" },
		"bad scheme":   func(c *Config) { c.Endpoint = "ftp://x" },
		"no bucket":    func(c *Config) { c.Bucket = "" },
		"no keys":      func(c *Config) { c.SecretKey = "" },
		"no objects":   func(c *Config) { c.Objects = 0 },
		"huge object":  func(c *Config) { c.Size = 6 << 30 },
		"no clients":   func(c *Config) { c.Concurrency = 0 },
		"no get round": func(c *Config) { c.GetRounds = 0 },
		"bad max keys": func(c *Config) { c.ListMaxKeys = 5000 },
	} {
		c := Defaults()
		c.Endpoint, c.AccessKey, c.SecretKey, c.Bucket = "http://127.0.0.1:1", "a", "b", "c"
		mod(&c)
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
