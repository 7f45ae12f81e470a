package gateway

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/flyfs/flyfs/posix/fusefs"
	"golang.org/x/sys/unix"
)

// Dual access through the real FUSE mount: S3 writes read through the
// mount, mount writes read (and listed) through S3, and the ETag moves on
// a write through the mount.
func TestLiveDualAccessFUSE(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: this test needs the fuse kernel module")
	}
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mnt := t.TempDir()
	m, err := fusefs.Mount(ctx, l.fs, mnt, fusefs.Options{})
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { m.Unmount() })

	mustBucket(t, c, "dual")
	data := randBytes(3<<20 + 5)
	put := mustPut(t, c, "dual", "from-s3/obj.bin", data)
	got, err := os.ReadFile(filepath.Join(mnt, "dual/from-s3/obj.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("S3 object through the mount: %v (%d bytes)", err, len(got))
	}
	if v := make([]byte, 256); true {
		n, err := getxattr(filepath.Join(mnt, "dual/from-s3/obj.bin"), xattrObject, v)
		if err != nil || !bytes.Contains(v[:n], []byte(`"etag"`)) {
			t.Fatalf("the object's record through the mount: %v %q", err, v[:n])
		}
	}
	// The reverse: a file written through the mount is an object.
	if err := os.MkdirAll(filepath.Join(mnt, "dual/from-posix"), 0o755); err != nil {
		t.Fatal(err)
	}
	posix := bytes.Repeat([]byte("posix "), 100000)
	if err := os.WriteFile(filepath.Join(mnt, "dual/from-posix/file.txt"), posix, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, c, "dual", "from-posix/file.txt"); !bytes.Equal(got, posix) {
		t.Fatal("POSIX file through S3 differs")
	}
	keys, _ := listAll(t, c, "dual", "from-posix/", "", 1000, "")
	if len(keys) != 2 || keys[0] != "from-posix/" || keys[1] != "from-posix/file.txt" {
		t.Fatalf("listing of the POSIX tree: %q", keys)
	}
	// Overwriting the S3 object in place through the mount changes its ETag.
	f, err := os.OpenFile(filepath.Join(mnt, "dual/from-s3/obj.bin"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("changed"), 100)
	f.Close()
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dual"), Key: aws.String("from-s3/obj.bin")})
	if err != nil || *h.ETag == *put.ETag {
		t.Fatalf("ETag after a write through the mount: %v %v (was %v)", err, aws.ToString(h.ETag), *put.ETag)
	}
	if got := mustGet(t, c, "dual", "from-s3/obj.bin"); !bytes.Equal(got[100:107], []byte("changed")) {
		t.Fatal("the write through the mount is not visible through S3")
	}
}

func getxattr(path, name string, dest []byte) (int, error) { return unix.Getxattr(path, name, dest) }
