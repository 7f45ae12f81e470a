package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestLiveCopySharesChunks: CopyObject of an object whose ETag describes its
// bytes shares the source's chunks (the copy reads through a layer, no byte
// moved) and keeps its ETag; overwriting either side, over S3 or through the
// file system, leaves the other as it was; a source changed through the
// file system since its upload is copied byte by byte with the ETag of its
// bytes now.
func TestLiveCopySharesChunks(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "cpy")
	r := rand.New(rand.NewPCG(3, 4))
	orig := make([]byte, 3<<20+7)
	for i := range orig {
		orig[i] = byte(r.Uint32())
	}
	put := func(key string, body []byte) string {
		t.Helper()
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cpy"), Key: aws.String(key), Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	get := func(key string) ([]byte, string) {
		t.Helper()
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cpy"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b, aws.ToString(out.ETag)
	}
	copyObj := func(from, to string) string {
		t.Helper()
		out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("cpy"), Key: aws.String(to), CopySource: aws.String("cpy/" + from)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.CopyObjectResult.ETag)
	}
	layers := func(key string) int {
		t.Helper()
		in, err := l.fs.Meta().Resolve(ctx, "/cpy/"+key, false)
		if err != nil {
			t.Fatal(err)
		}
		return len(in.Layers)
	}

	etag := put("src", orig)
	if got := copyObj("src", "dst"); got != etag {
		t.Fatalf("copy's ETag %s, source's %s", got, etag)
	}
	if layers("dst") != 1 || layers("src") != 1 {
		t.Fatalf("the copy does not share the source's chunks: layers %d and %d", layers("dst"), layers("src"))
	}
	if b, e := get("dst"); !bytes.Equal(b, orig) || e != etag {
		t.Fatalf("copy reads %d bytes, ETag %s", len(b), e)
	}

	// Overwrite the source over S3: the copy keeps the old bytes.
	put("src", []byte("new source"))
	if b, _ := get("dst"); !bytes.Equal(b, orig) {
		t.Fatalf("copy after the source's overwrite: %d bytes", len(b))
	}

	// Write into the copy through the file system, in place.
	f, err := l.fs.OpenFile(ctx, "/cpy/dst", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("POSIX"), 1<<20-2); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(orig)
	copy(want[1<<20-2:], "POSIX")
	if b, _ := get("dst"); !bytes.Equal(b, want) {
		t.Fatal("the copy does not read its write through the file system")
	}
	// Its ETag no longer describes it: a copy of it is made by bytes, with
	// the ETag of its bytes now.
	sum := md5.Sum(want)
	if got := copyObj("dst", "dst2"); got != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("copy of a source changed through the file system: ETag %s", got)
	}
	if b, _ := get("dst2"); !bytes.Equal(b, want) {
		t.Fatal("the byte copy differs")
	}
	if b, _ := get("src"); string(b) != "new source" {
		t.Fatalf("source: %q", b)
	}
}

// TestLiveSnapshotOverS3: a snapshot of a bucket's prefix lists and reads
// over S3 under .flyfs-snapshots/NAME/, the objects as they were when the
// live ones are overwritten and deleted; writes and deletes into it are
// AccessDenied; DeleteBucket refuses while the bucket holds snapshots.
func TestLiveSnapshotOverS3(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "snaps")
	objs := map[string]string{"run/a.bin": strings.Repeat("a", 2<<20+5), "run/sub/b.txt": "b", "other": "o"}
	for k, v := range objs {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("snaps"), Key: aws.String(k), Body: strings.NewReader(v)}); err != nil {
			t.Fatal(err)
		}
	}
	run, err := l.fs.Meta().Resolve(ctx, "/snaps/run", true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.fs.Meta().SnapshotCreate(ctx, run.ID, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != "/snaps/.flyfs-snapshots/s1/run" {
		t.Fatalf("snapshot at %s", s.Path)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("snaps"), Key: aws.String("run/a.bin"), Body: strings.NewReader("new")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("snaps"), Key: aws.String("run/sub/b.txt")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("snaps"), Prefix: aws.String(".flyfs-snapshots/s1/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if want := []string{".flyfs-snapshots/s1/run/a.bin", ".flyfs-snapshots/s1/run/sub/b.txt"}; strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Fatalf("snapshot listing %v, want %v", keys, want)
	}
	for _, k := range []string{"run/a.bin", "run/sub/b.txt"} {
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("snaps"), Key: aws.String(".flyfs-snapshots/s1/" + k)})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(g.Body)
		g.Body.Close()
		if string(b) != objs[k] {
			t.Fatalf("snapshot's %s: %d bytes", k, len(b))
		}
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("snaps"), Key: aws.String(".flyfs-snapshots/s1/run/x"), Body: strings.NewReader("x")}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("PUT into a snapshot: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("snaps"), Key: aws.String(".flyfs-snapshots/s1/run/a.bin")}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("DELETE in a snapshot: %v", err)
	}
	// Restore by copy: CopyObject out of the snapshot.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("snaps"), Key: aws.String("run/a.bin"), CopySource: aws.String("snaps/.flyfs-snapshots/s1/run/a.bin")}); err != nil {
		t.Fatalf("copy out of the snapshot: %v", err)
	}
	if g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("snaps"), Key: aws.String("run/a.bin")}); err != nil {
		t.Fatal(err)
	} else if b, _ := io.ReadAll(g.Body); string(b) != objs["run/a.bin"] {
		t.Fatalf("restored object: %d bytes", len(b))
	}
	for k := range objs {
		c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("snaps"), Key: aws.String(k)})
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("snaps")}); errCodeOf(err) != "BucketNotEmpty" {
		t.Fatalf("DeleteBucket of a bucket holding snapshots: %v", err)
	}
}
