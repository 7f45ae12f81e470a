package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"runtime/trace"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// An operator may take an execution trace of a running server
// (--pprof-addr, /debug/pprof/trace) while large objects come and go.
// The tracer walks goroutine stacks by frame pointer, so hashing code
// that clobbers the frame pointer (as some SIMD assembly does) crashes
// the whole process under it: the hashes of every body (MD5 for the ETag,
// the SigV4 payload hash, a checksum a client asks for) run under it here,
// and each upload's ETag is its own body's MD5.
func TestLargePutsUnderExecutionTrace(t *testing.T) {
	l := startGW(t)
	c := l.sdk(t, rootAK, rootSK)
	mustBucket(t, c, "traced")
	if err := trace.Start(io.Discard); err != nil {
		t.Skipf("an execution trace is already running: %v", err)
	}
	defer trace.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			// Each writer's own bytes, so an ETag hashed from another
			// upload's body (the uploads' MD5s run together) shows.
			body := bytes.Repeat([]byte(fmt.Sprintf("%02d3456789abcdef", w)), 3<<20/16)
			etag := fmt.Sprintf("%q", fmt.Sprintf("%x", md5.Sum(body)))
			for i := range 4 {
				key := fmt.Sprintf("w%d/o%d", w, i)
				in := &s3.PutObjectInput{Bucket: aws.String("traced"), Key: aws.String(key), Body: bytes.NewReader(body)}
				if algos := []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc64nvme, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha256}; algos[w%4] != "" {
					in.ChecksumAlgorithm = algos[w%4]
				}
				put, err := c.PutObject(context.Background(), in)
				if err != nil {
					errs <- err
					return
				}
				if aws.ToString(put.ETag) != etag {
					errs <- fmt.Errorf("PUT %s: ETag %s, want %s (the body's MD5)", key, aws.ToString(put.ETag), etag)
					return
				}
				out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("traced"), Key: aws.String(key)})
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(out.Body)
				out.Body.Close()
				if err != nil || !bytes.Equal(got, body) {
					errs <- fmt.Errorf("GET %s: %d bytes, %v", key, len(got), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
