package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
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
	put := func(key string, body []byte) string { return putBytes(t, c, "cpy", key, body) }
	get := func(key string) ([]byte, string) { return getBytes(t, c, "cpy", key) }
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

// TestLiveUploadPartCopyShares: parts copied from an object share its
// chunks; parts that are the object end to end complete into an object
// that reads through the source's layer (no byte written), with S3's ETag;
// a part copied from an object that changed later keeps the bytes of the
// copy; parts mixed with uploaded ones are assembled and read right.
func TestLiveUploadPartCopyShares(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "mpcopy")
	r := rand.New(rand.NewPCG(11, 12))
	big := make([]byte, 12<<20+3)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	put := func(key string, body []byte) { putBytes(t, c, "mpcopy", key, body) }
	get := func(key string) ([]byte, string) { return getBytes(t, c, "mpcopy", key) }
	type part struct {
		from, to int64 // a copy of [from, to) of "src"; from < 0: upload body
		body     []byte
	}
	upload := func(key string, parts []part, change func(i int)) string {
		t.Helper()
		cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpcopy"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		var done []types.CompletedPart
		for i, p := range parts {
			if change != nil {
				change(i)
			}
			var etag *string
			if p.from < 0 {
				o, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpcopy"), Key: aws.String(key), UploadId: cu.UploadId,
					PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p.body)})
				if err != nil {
					t.Fatal(err)
				}
				etag = o.ETag
			} else {
				o, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("mpcopy"), Key: aws.String(key), UploadId: cu.UploadId,
					PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String("mpcopy/src"),
					CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", p.from, p.to-1))})
				if err != nil {
					t.Fatal(err)
				}
				etag = o.CopyPartResult.ETag
			}
			done = append(done, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: etag})
		}
		out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpcopy"), Key: aws.String(key), UploadId: cu.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ETag)
	}
	s3ETag := func(parts ...[]byte) string {
		h := md5.New()
		for _, p := range parts {
			s := md5.Sum(p)
			h.Write(s[:])
		}
		return fmt.Sprintf(`"%x-%d"`, h.Sum(nil), len(parts))
	}
	layers := func(key string) int {
		t.Helper()
		in, err := l.fs.Meta().Resolve(ctx, "/mpcopy/"+key, false)
		if err != nil {
			t.Fatal(err)
		}
		return len(in.Layers)
	}

	put("src", big)
	const P = 5 << 20
	etag := upload("whole", []part{{from: 0, to: P}, {from: P, to: 2 * P}, {from: 2 * P, to: int64(len(big))}}, nil)
	if want := s3ETag(big[:P], big[P:2*P], big[2*P:]); etag != want {
		t.Fatalf("ETag %s, want %s", etag, want)
	}
	if b, e := get("whole"); !bytes.Equal(b, big) || e != etag {
		t.Fatalf("whole copy: %d bytes, ETag %s", len(b), e)
	}
	if layers("whole") == 0 {
		t.Fatal("the copy in parts does not share the source's chunks")
	}

	// Mixed with an uploaded part: assembled.
	extra := bytes.Repeat([]byte("x"), 1<<20)
	upload("mixed", []part{{from: 0, to: P}, {from: -1, body: extra}}, nil)
	if b, _ := get("mixed"); !bytes.Equal(b, append(bytes.Clone(big[:P]), extra...)) {
		t.Fatalf("mixed upload: %d bytes", len(b))
	}

	// The source overwritten between two part copies: each part keeps the
	// bytes of its copy.
	newer := bytes.Repeat([]byte("N"), len(big))
	upload("changed", []part{{from: 0, to: P}, {from: P, to: 2 * P}}, func(i int) {
		if i == 1 {
			put("src", newer)
		}
	})
	if b, _ := get("changed"); !bytes.Equal(b, append(bytes.Clone(big[:P]), newer[P:2*P]...)) {
		t.Fatalf("copy across the source's overwrite: %d bytes", len(b))
	}
	if b, _ := get("whole"); !bytes.Equal(b, big) {
		t.Fatal("the shared copy changed with its source")
	}
	r2, err := l.fs.Meta().Fsck(ctx)
	if err != nil || len(r2.Problems) > 0 {
		t.Fatalf("fsck: %v %+v", err, r2)
	}
}

// putBytes PUTs body as bucket/key and returns its ETag.
func putBytes(t testing.TB, c *s3.Client, bucket, key string, body []byte) string {
	t.Helper()
	out, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.ETag)
}

// getBytes GETs bucket/key: its bytes and its ETag.
func getBytes(t testing.TB, c *s3.Client, bucket, key string) ([]byte, string) {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
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
