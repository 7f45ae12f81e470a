package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
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
