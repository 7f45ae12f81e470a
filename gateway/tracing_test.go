package gateway

import (
	"bytes"
	"context"
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
// the SigV4 payload hash, a checksum a client asks for) run under it here.
func TestLargePutsUnderExecutionTrace(t *testing.T) {
	l := startGW(t)
	c := l.sdk(t, rootAK, rootSK)
	mustBucket(t, c, "traced")
	if err := trace.Start(io.Discard); err != nil {
		t.Skipf("an execution trace is already running: %v", err)
	}
	defer trace.Stop()
	body := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 4 {
				key := fmt.Sprintf("w%d/o%d", w, i)
				in := &s3.PutObjectInput{Bucket: aws.String("traced"), Key: aws.String(key), Body: bytes.NewReader(body)}
				if algos := []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc64nvme, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha256}; algos[w%4] != "" {
					in.ChecksumAlgorithm = algos[w%4]
				}
				if _, err := c.PutObject(context.Background(), in); err != nil {
					errs <- err
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
