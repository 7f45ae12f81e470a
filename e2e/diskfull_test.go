package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/cluster/frontend"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/gateway"
)

// A full disk costs writes, not reads, and heals by itself: on a storage
// disk that is a small file system, writes end in ENOSPC (client.ErrNoSpace)
// while every file written before reads back and the target stays serving;
// once files are removed and collected, writes work again with no restart.
func TestDiskFullCostsWritesNotReads(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	disk := filepath.Join(dir, "disk0") // the cluster's first storage disk
	if err := os.MkdirAll(disk, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", 0, "size=160m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	defer syscall.Unmount(disk, syscall.MNT_DETACH)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{Dir: dir, NoSync: true, Nodes: 1, Replicas: 1, Chains: 2, Metads: 1,
		HeartbeatTimeout: time.Second, ScanInterval: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fs, err := c.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	s3addr, err := frontend.StartGateway(ctx, c, frontend.Listen{Addr: "127.0.0.1:0"}, gateway.Config{RootAccessKey: "FULLROOT", RootSecretKey: "full-root-secret"})
	if err != nil {
		t.Fatal(err)
	}
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + s3addr), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("FULLROOT", "full-root-secret", "")})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("full")}); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) error {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		f, err := fs.Create(wctx, name, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.WriteAt(data, 0)
		return errors.Join(werr, f.Close())
	}
	data := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, 8<<20) }
	var written []string
	var full error
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("/full/f%02d", i)
		if err := write(name, data(i)); err != nil {
			full = err
			break
		}
		written = append(written, name)
	}
	if full == nil {
		t.Fatal("40 files of 8 MiB fit a 160 MiB disk")
	}
	if !errors.Is(full, client.ErrNoSpace) || client.Errno(full) != syscall.ENOSPC {
		t.Fatalf("the write that found the disk full: %v (errno %v), want client.ErrNoSpace and ENOSPC", full, client.Errno(full))
	}
	if len(written) == 0 {
		t.Fatal("nothing fit")
	}
	// Writes keep failing cleanly, and everything written before reads back,
	// through S3 too: a PUT is 507 InsufficientStorage naming the cause.
	if err := write("/more", data(99)); !errors.Is(err, client.ErrNoSpace) {
		t.Fatalf("a write on the full disk: %v", err)
	}
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("full"), Key: aws.String("more"), Body: bytes.NewReader(data(98))})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InsufficientStorage" || !strings.Contains(ae.ErrorMessage(), "full") {
		t.Fatalf("an S3 PUT on the full disk: %v", err)
	}
	if out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("full"), Key: aws.String("f00")}); err != nil {
		t.Fatalf("an S3 GET on the full disk: %v", err)
	} else {
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, data(0)) {
			t.Fatalf("an S3 GET on the full disk read %d bytes, wrong", len(got))
		}
	}
	for i, name := range written {
		f, err := fs.Open(ctx, name)
		if err != nil {
			t.Fatalf("open %s on a full disk: %v", name, err)
		}
		got := make([]byte, 8<<20)
		n, _ := f.ReadAt(got, 0)
		f.Close()
		if n != len(got) || !bytes.Equal(got, data(i)) {
			t.Fatalf("%s read back %d bytes, wrong", name, n)
		}
	}
	info, err := c.Routing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range info.Chains {
		if r := ch.Readable(); len(r) == 0 {
			t.Fatalf("chain %d has no readable target while its disk is full: %s", ch.ID, cluster.Describe(info))
		}
		for _, tg := range ch.Targets {
			if tg.Public != routing.Serving {
				t.Fatalf("a full disk's target is %v, want serving: %s", tg.Public, cluster.Describe(info))
			}
		}
	}
	// Space returns: remove the files, collect them now.
	for _, name := range written {
		if err := fs.Remove(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fs.Meta().Collect(ctx, true); err != nil {
		t.Fatal(err)
	}
	// Within a few heartbeats routing says the disk has room again.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := write("/after", data(5))
		if err == nil {
			break
		}
		if !errors.Is(err, client.ErrNoSpace) || time.Now().After(deadline) {
			t.Fatalf("a write after space returned: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
