package gateway

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/client"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// listAll lists every key and common prefix through ListObjectsV2 pages.
func listAll(t testing.TB, c *s3.Client, bucket, prefix, delim string, pageSize int32, startAfter string) (keys, prefixes []string) {
	t.Helper()
	in := &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: aws.String(prefix), MaxKeys: aws.Int32(pageSize)}
	if delim != "" {
		in.Delimiter = aws.String(delim)
	}
	if startAfter != "" {
		in.StartAfter = aws.String(startAfter)
	}
	for {
		out, err := c.ListObjectsV2(context.Background(), in)
		if err != nil {
			t.Fatalf("list %q/%q: %v", prefix, delim, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, *o.Key)
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, *p.Prefix)
		}
		if !*out.IsTruncated {
			return
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// model computes what S3 returns for a set of keys.
func model(all []string, prefix, delim, after string) (keys, prefixes []string) {
	s := slices.Clone(all)
	sort.Strings(s)
	seen := map[string]bool{}
	for _, k := range s {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				cp := k[:len(prefix)+i+len(delim)]
				if !seen[cp] && cp > after {
					prefixes = append(prefixes, cp)
				}
				seen[cp] = true
				continue
			}
		}
		if k > after {
			keys = append(keys, k)
		}
	}
	return
}

func TestLiveListingTrueKeyOrder(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "order")
	// Keys that differ only by '-', '.', '/', '0' and a few deeper trees.
	all := []string{"a", "a-b", "a.c", "a/x", "a/y/z", "a0", "a/", "b/c/d/e", "b/c/d-e", "b/c0", "b-", "c!", "c/d",
		"dir/", "dir/x", "dir/x/", "dir/x/y", "e+f g", "sp ace/k", "zz"}
	// "a" as a file and "a/x" below a directory "a" cannot both be paths: use
	// separate trees for the file/dir pairs the namespace can hold.
	all = slices.DeleteFunc(all, func(k string) bool { return k == "a" || k == "dir/x" })
	for _, k := range all {
		if strings.HasSuffix(k, "/") {
			mustPut(t, c, "order", k, nil)
		} else {
			mustPut(t, c, "order", k, []byte(k))
		}
	}
	for _, tc := range []struct{ prefix, delim, after string }{
		{"", "", ""}, {"", "/", ""}, {"a", "", ""}, {"a", "/", ""}, {"a/", "/", ""}, {"b/c", "/", ""}, {"b/c/", "", ""},
		{"dir/", "/", ""}, {"dir/x/", "", ""}, {"", "-", ""}, {"", "/", "a-b"}, {"", "", "a/x"}, {"", "", "a/"}, {"", "/", "a/"},
		{"b", "d", ""}, {"", "", "b/c/d"}, {"nope/", "/", ""}, {"a/y", "", ""},
	} {
		for _, page := range []int32{1, 2, 1000} {
			keys, prefixes := listAll(t, c, "order", tc.prefix, tc.delim, page, tc.after)
			wk, wp := model(all, tc.prefix, tc.delim, tc.after)
			if !slices.Equal(keys, wk) || !slices.Equal(prefixes, wp) {
				t.Errorf("prefix %q delim %q after %q page %d:\n got  %q %q\n want %q %q", tc.prefix, tc.delim, tc.after, page, keys, prefixes, wk, wp)
			}
		}
	}
	// ListObjects V1 with markers, and encoding-type=url.
	var v1 []string
	in := &s3.ListObjectsInput{Bucket: aws.String("order"), MaxKeys: aws.Int32(3)}
	for {
		out, err := c.ListObjects(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			v1 = append(v1, *o.Key)
		}
		if !*out.IsTruncated {
			break
		}
		in.Marker = out.NextMarker
	}
	if wk, _ := model(all, "", "", ""); !slices.Equal(v1, wk) {
		t.Errorf("V1: %q, want %q", v1, wk)
	}
	resp, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("order"), Prefix: aws.String("e+"), EncodingType: types.EncodingTypeUrl})
	if err != nil || len(resp.Contents) != 1 {
		t.Fatalf("encoding-type=url: %v %+v", err, resp)
	}
	if k, err := url.QueryUnescape(*resp.Contents[0].Key); err != nil || k != "e+f g" {
		t.Fatalf("encoding-type=url: %v %+v", err, resp)
	}
}

func TestLiveMappingRules(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "map")
	for _, tc := range []struct{ key, code string }{
		{"a//b", "InvalidArgument"},
		{"./x", "InvalidArgument"},
		{"x/../y", "InvalidArgument"},
		{"x/.", "InvalidArgument"},
		{"/leading", "InvalidArgument"},
		{"nul\x00byte", "InvalidArgument"},
		{strings.Repeat("s", 256), "KeyTooLongError"},
		{strings.Repeat("abcdefgh/", 114) + "x", "KeyTooLongError"},
	} {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("map"), Key: aws.String(tc.key), Body: strings.NewReader("x")})
		if got := errCodeOf(err); got != tc.code {
			t.Errorf("PUT %q: %s, want %s", tc.key, got, tc.code)
		}
	}
	// A file in the way of a directory, and a directory in the way of a file.
	mustPut(t, c, "map", "f", []byte("file"))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("map"), Key: aws.String("f/g"), Body: strings.NewReader("x")}); errCodeOf(err) != "ObjectConflict" {
		t.Errorf("PUT below a file: %v", err)
	}
	mustPut(t, c, "map", "d/inner", []byte("x"))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("map"), Key: aws.String("d"), Body: strings.NewReader("x")}); errCodeOf(err) != "ObjectConflict" {
		t.Errorf("PUT over a directory: %v", err)
	}
	// Markers: an empty "dir/" PUT is an explicit directory; a body is refused.
	mustPut(t, c, "map", "m/", nil)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("map"), Key: aws.String("m2/"), Body: strings.NewReader("x")}); errCodeOf(err) != "InvalidArgument" {
		t.Errorf("non-empty marker: %v", err)
	}
	in, err := l.fs.Meta().Resolve(ctx, "/map/m", false)
	if err != nil || in.Implicit {
		t.Fatalf("marker: %v %+v", err, in)
	}
	// Explicit directories stay when they empty; implicit ones go.
	mustPut(t, c, "map", "m/obj", []byte("x"))
	mustPut(t, c, "map", "imp/deep/obj", []byte("x"))
	for _, k := range []string{"m/obj", "imp/deep/obj"} {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("map"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.fs.Meta().Resolve(ctx, "/map/m", false); err != nil {
		t.Errorf("explicit directory removed: %v", err)
	}
	if _, err := l.fs.Meta().Resolve(ctx, "/map/imp", false); client.Errno(err) == 0 {
		t.Errorf("implicit directory kept")
	}
	// A directory made through POSIX is never pruned and shows as a marker.
	if err := l.fs.MkdirAll(ctx, "/map/posix/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := l.fs.Create(ctx, "/map/posix/sub/file.txt", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("posix data"), 0)
	f.Close()
	keys, _ := listAll(t, c, "map", "posix/", "", 1000, "")
	if want := []string{"posix/", "posix/sub/", "posix/sub/file.txt"}; !slices.Equal(keys, want) {
		t.Errorf("POSIX tree: %q, want %q", keys, want)
	}
	if got := mustGet(t, c, "map", "posix/sub/file.txt"); string(got) != "posix data" {
		t.Errorf("POSIX file via S3: %q", got)
	}
	c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("map"), Key: aws.String("posix/sub/file.txt")})
	if _, err := l.fs.Meta().Resolve(ctx, "/map/posix/sub", false); err != nil {
		t.Errorf("POSIX directory pruned: %v", err)
	}
	// '+' and '%20' in keys, and a key with spaces via the SDK.
	for _, k := range []string{"plus+sign", "space key", "pct%20literal", "ünïcødé/ключ"} {
		mustPut(t, c, "map", k, []byte(k))
		if got := mustGet(t, c, "map", k); string(got) != k {
			t.Errorf("key %q read back %q", k, got)
		}
	}
	if _, err := l.fs.Meta().Resolve(ctx, "/map/plus+sign", false); err != nil {
		t.Errorf("'+' became another name: %v", err)
	}
	if _, err := l.fs.Meta().Resolve(ctx, "/map/pct%20literal", false); err != nil {
		t.Errorf("'%%20' became another name: %v", err)
	}
}

func TestLiveETagsAndDualAccess(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "etag")
	data := []byte("hello etag")
	put := mustPut(t, c, "etag", "k", data)
	sum := md5.Sum(data)
	if *put.ETag != `"`+hex.EncodeToString(sum[:])+`"` {
		t.Fatalf("ETag %s is not the MD5", *put.ETag)
	}
	// Rewrite through POSIX: the ETag changes and is never empty.
	f, err := l.fs.OpenFile(ctx, "/etag/k", 1 /* O_WRONLY */, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("J"), 0)
	f.Close()
	h1, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("etag"), Key: aws.String("k")})
	if err != nil || *h1.ETag == *put.ETag || *h1.ETag == `""` {
		t.Fatalf("after a POSIX write: %v %v", err, aws.ToString(h1.ETag))
	}
	// If-Match with the old ETag now fails; with the new one it reads.
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("etag"), Key: aws.String("k"), IfMatch: put.ETag, Range: aws.String("bytes=0-3")}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("If-Match old etag: %v", err)
	}
	g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("etag"), Key: aws.String("k"), IfMatch: h1.ETag, Range: aws.String("bytes=0-3")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(g.Body)
	if string(b) != "Jell" {
		t.Fatalf("range after POSIX write: %q", b)
	}
	// Every further POSIX write moves it again.
	f, _ = l.fs.OpenFile(ctx, "/etag/k", 1, 0)
	f.WriteAt([]byte("K"), 0)
	f.Close()
	h2, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("etag"), Key: aws.String("k")})
	if *h2.ETag == *h1.ETag {
		t.Fatal("a second POSIX write kept the ETag")
	}
	// A file created through POSIX has one too, in listings as well.
	f, _ = l.fs.Create(ctx, "/etag/posix", 0o644)
	f.WriteAt([]byte("p"), 0)
	f.Close()
	h3, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("etag"), Key: aws.String("posix")})
	if err != nil || len(aws.ToString(h3.ETag)) < 10 {
		t.Fatalf("POSIX file etag: %v %v", err, h3)
	}
	lo, _ := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("etag")})
	for _, o := range lo.Contents {
		want := map[string]string{"k": *h2.ETag, "posix": *h3.ETag}[*o.Key]
		if *o.ETag != want {
			t.Errorf("listing ETag of %s = %s, HEAD says %s", *o.Key, *o.ETag, want)
		}
	}
}

func TestLiveMetadataTaggingCopy(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "meta")
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("src"), Body: strings.NewReader("payload"),
		ContentType: aws.String("text/x-test"), CacheControl: aws.String("max-age=5"), Metadata: map[string]string{"Color": "blue", "n": "1"},
		Tagging: aws.String("a=1&b=two")})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("src")})
	if err != nil || aws.ToString(h.ContentType) != "text/x-test" || h.Metadata["color"] != "blue" || aws.ToString(h.CacheControl) != "max-age=5" {
		t.Fatalf("head: %v %+v", err, h)
	}
	// The metadata is an xattr of the file.
	in, _ := l.fs.Meta().Resolve(ctx, "/meta/src", false)
	if v, err := l.fs.Meta().GetXattr(ctx, in.ID, xattrObject); err != nil || !bytes.Contains(v, []byte("text/x-test")) {
		t.Fatalf("xattr: %v %s", err, v)
	}
	tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("meta"), Key: aws.String("src")})
	if err != nil || len(tg.TagSet) != 2 {
		t.Fatalf("tags: %v %+v", err, tg)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("meta"), Key: aws.String("src"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("x"), Value: aws.String("y")}, {Key: aws.String("x"), Value: aws.String("z")}}}}); errCodeOf(err) != "InvalidTag" {
		t.Fatalf("duplicate tag keys: %v", err)
	}
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: aws.String("meta"), Key: aws.String("src")}); err != nil {
		t.Fatal(err)
	}
	// Copy with COPY keeps metadata; REPLACE replaces it.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String("dst/copy"), CopySource: aws.String("meta/src")}); err != nil {
		t.Fatal(err)
	}
	h2, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("dst/copy")})
	if h2.Metadata["color"] != "blue" || *h2.ETag != *h.ETag {
		t.Fatalf("copy: %+v", h2)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String("src"), CopySource: aws.String("meta/src")}); errCodeOf(err) != "InvalidRequest" {
		t.Fatalf("copy onto itself: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String("src"), CopySource: aws.String("meta/src"),
		MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"color": "red"}}); err != nil {
		t.Fatal(err)
	}
	h3, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("src")})
	if h3.Metadata["color"] != "red" || *h3.ETag != *h.ETag {
		t.Fatalf("replace in place: %+v", h3)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("meta"), Key: aws.String("x"), CopySource: aws.String("meta/src"), CopySourceIfMatch: aws.String(`"nope"`)}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("copy-source-if-match: %v", err)
	}
	// GetObjectAttributes and checksums.
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("sum"), Body: strings.NewReader("checksummed"), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		t.Fatal(err)
	}
	ga, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("meta"), Key: aws.String("sum"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum, types.ObjectAttributesObjectSize}})
	if err != nil || ga.Checksum == nil || aws.ToString(ga.Checksum.ChecksumSHA256) == "" || aws.ToInt64(ga.ObjectSize) != 11 {
		t.Fatalf("attributes: %v %+v", err, ga)
	}
	gs, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("meta"), Key: aws.String("sum"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(gs.ChecksumSHA256) != aws.ToString(ga.Checksum.ChecksumSHA256) {
		t.Fatalf("checksum mode: %v %+v", err, gs)
	}
	io.Copy(io.Discard, gs.Body)
	gs.Body.Close()
	for _, algo := range []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmCrc64nvme} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("sum-" + string(algo)), Body: bytes.NewReader(randBytes(100000)), ChecksumAlgorithm: algo}); err != nil {
			t.Errorf("checksum %s: %v", algo, err)
		}
	}
	// A wrong checksum is refused and leaves nothing.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("meta"), Key: aws.String("badsum"), Body: strings.NewReader("abc"), ChecksumCRC32: aws.String("AAAAAA==")}); errCodeOf(err) != "BadDigest" {
		t.Fatalf("wrong checksum: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("meta"), Key: aws.String("badsum")}); err == nil {
		t.Fatal("a refused PUT left an object")
	}
}

func TestLiveConditionalWrites(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "cond")
	const n = 64
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, fails := 0, map[string]int{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("lock"), Body: strings.NewReader(fmt.Sprint(i)), IfNoneMatch: aws.String("*")})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				fails[errCodeOf(err)]++
			}
		}(i)
	}
	wg.Wait()
	if wins != 1 || fails["PreconditionFailed"] != n-1 {
		t.Fatalf("64 If-None-Match:* PUTs: %d won, failures %v", wins, fails)
	}
	h, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("cond"), Key: aws.String("lock")})
	// If-Match: compare-and-swap.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("lock"), Body: strings.NewReader("v2"), IfMatch: aws.String(`"bad"`)}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("If-Match wrong: %v", err)
	}
	p2, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("lock"), Body: strings.NewReader("v2"), IfMatch: h.ETag})
	if err != nil {
		t.Fatalf("If-Match right: %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("absent"), Body: strings.NewReader("x"), IfMatch: h.ETag}); errCodeOf(err) != "NoSuchKey" {
		t.Fatalf("If-Match on a missing key: %v", err)
	}
	// Conditional delete.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("cond"), Key: aws.String("lock"), IfMatch: h.ETag}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("delete If-Match stale: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("cond"), Key: aws.String("lock"), IfMatch: p2.ETag}); err != nil {
		t.Fatalf("delete If-Match: %v", err)
	}
	// CopyObject and CompleteMultipartUpload take the same conditions.
	mustPut(t, c, "cond", "src", []byte("source"))
	mustPut(t, c, "cond", "dst", []byte("dest"))
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("cond"), Key: aws.String("dst"), CopySource: aws.String("cond/src"), IfNoneMatch: aws.String("*")}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("copy If-None-Match onto an existing key: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("cond"), Key: aws.String("dst2"), CopySource: aws.String("cond/src"), IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatalf("copy If-None-Match onto a free key: %v", err)
	}
	cu, _ := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("cond"), Key: aws.String("dst")})
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("cond"), Key: aws.String("dst"), UploadId: cu.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("mp")})
	if err != nil {
		t.Fatal(err)
	}
	mpDone := &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("cond"), Key: aws.String("dst"), UploadId: cu.UploadId, MultipartUpload: mpDone, IfNoneMatch: aws.String("*")}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("complete If-None-Match onto an existing key: %v", err)
	}
	if got := mustGet(t, c, "cond", "dst"); string(got) != "dest" {
		t.Fatalf("a refused completion replaced the object: %q", got)
	}
	// GET conditions.
	p3 := mustPut(t, c, "cond", "g", []byte("x"))
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cond"), Key: aws.String("g"), IfNoneMatch: p3.ETag}); !strings.Contains(fmt.Sprint(err), "304") {
		t.Fatalf("If-None-Match: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cond"), Key: aws.String("g"), IfUnmodifiedSince: aws.Time(time.Now().Add(-time.Hour))}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("If-Unmodified-Since: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cond"), Key: aws.String("g"), IfModifiedSince: aws.Time(time.Now().Add(time.Hour))}); !strings.Contains(fmt.Sprint(err), "304") {
		t.Fatalf("If-Modified-Since: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cond"), Key: aws.String("g"), Range: aws.String("bytes=5-9")}); errCodeOf(err) != "InvalidRange" {
		t.Fatalf("range past the end: %v", err)
	}
}

func TestLiveMultipart(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "mpu")
	data := randBytes(23<<20 + 12345)
	up := manager.NewUploader(c, func(u *manager.Uploader) { u.PartSize = 5 << 20; u.Concurrency = 4 })
	res, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String("mpu"), Key: aws.String("big/file.bin"), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(aws.ToString(res.ETag), `-5"`) {
		t.Fatalf("multipart ETag %s", aws.ToString(res.ETag))
	}
	// The ETag is md5 of the part md5s.
	var cat []byte
	for off := 0; off < len(data); off += 5 << 20 {
		s := md5.Sum(data[off:min(off+5<<20, len(data))])
		cat = append(cat, s[:]...)
	}
	s := md5.Sum(cat)
	if want := `"` + hex.EncodeToString(s[:]) + `-5"`; aws.ToString(res.ETag) != want {
		t.Fatalf("ETag %s, want %s", aws.ToString(res.ETag), want)
	}
	if got := mustGet(t, c, "mpu", "big/file.bin"); !bytes.Equal(got, data) {
		t.Fatal("multipart object differs")
	}
	// partNumber GET.
	pg, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("mpu"), Key: aws.String("big/file.bin"), PartNumber: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	part2, _ := io.ReadAll(pg.Body)
	if !bytes.Equal(part2, data[5<<20:10<<20]) || aws.ToInt32(pg.PartsCount) != 5 {
		t.Fatalf("part 2: %d bytes, parts count %d", len(part2), aws.ToInt32(pg.PartsCount))
	}
	dl := manager.NewDownloader(c, func(d *manager.Downloader) { d.PartSize = 4 << 20 })
	buf := manager.NewWriteAtBuffer(nil)
	if _, err := dl.Download(ctx, buf, &s3.GetObjectInput{Bucket: aws.String("mpu"), Key: aws.String("big/file.bin")}); err != nil || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("ranged download: %v", err)
	}
	// Zero-copy completion was used (metric).
	if v := testutilCounter(l.gw.metrics.completions.WithLabelValues("true")); v != 1 {
		t.Fatalf("zero-copy completions = %v", v)
	}

	// Out-of-order, irregular parts assemble correctly; errors on the way.
	key := "irregular"
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: &key, ContentType: aws.String("x/y")})
	if err != nil {
		t.Fatal(err)
	}
	parts := map[int32][]byte{1: randBytes(6 << 20), 2: randBytes(5 << 20), 3: randBytes(7 << 20), 4: randBytes(100)}
	etags := map[int32]string{}
	for _, n := range []int32{3, 1, 4, 2} {
		o, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: &key, UploadId: cu.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(parts[n])})
		if err != nil {
			t.Fatal(err)
		}
		etags[n] = *o.ETag
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: &key, UploadId: cu.UploadId, PartNumber: aws.Int32(10001), Body: strings.NewReader("x")}); errCodeOf(err) != "InvalidArgument" {
		t.Fatalf("part 10001: %v", err)
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: &key, UploadId: cu.UploadId})
	if err != nil || len(lp.Parts) != 4 || *lp.Parts[2].Size != 7<<20 || *lp.Parts[0].ETag != etags[1] {
		t.Fatalf("list parts: %v %+v", err, lp)
	}
	lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")})
	if err != nil || len(lu.Uploads) != 1 || *lu.Uploads[0].Key != key {
		t.Fatalf("list uploads: %v %+v", err, lu)
	}
	complete := func(nums ...int32) error {
		var cp []types.CompletedPart
		for _, n := range nums {
			cp = append(cp, types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(etags[n])})
		}
		_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: &key, UploadId: cu.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}})
		return err
	}
	if err := complete(2, 1, 3, 4); errCodeOf(err) != "InvalidPartOrder" {
		t.Fatalf("order: %v", err)
	}
	o5, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: &key, UploadId: cu.UploadId, PartNumber: aws.Int32(5), Body: strings.NewReader("5")})
	if err != nil {
		t.Fatal(err)
	}
	etags[5] = *o5.ETag
	if err := complete(1, 4, 5); errCodeOf(err) != "EntityTooSmall" {
		t.Fatalf("small middle part: %v", err)
	}
	etags[9] = `"0123"`
	if err := complete(1, 9); errCodeOf(err) != "InvalidPart" {
		t.Fatalf("unknown part: %v", err)
	}
	if err := complete(1, 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	want := append(append(append(slices.Clone(parts[1]), parts[2]...), parts[3]...), parts[4]...)
	if got := mustGet(t, c, "mpu", key); !bytes.Equal(got, want) {
		t.Fatal("assembled object differs")
	}
	if h, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: &key}); aws.ToString(h.ContentType) != "x/y" {
		t.Fatalf("content type from CreateMultipartUpload: %+v", h)
	}
	if err := complete(1, 2, 3, 4); errCodeOf(err) != "NoSuchUpload" {
		t.Fatalf("complete twice: %v", err)
	}
	// UploadPartCopy, and abort.
	cu2, _ := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("copied")})
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("mpu"), Key: aws.String("copied"), UploadId: cu2.UploadId, PartNumber: aws.Int32(1),
		CopySource: aws.String("mpu/big/file.bin"), CopySourceRange: aws.String("bytes=0-5242879")})
	if err != nil {
		t.Fatal(err)
	}
	pc2, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("mpu"), Key: aws.String("copied"), UploadId: cu2.UploadId, PartNumber: aws.Int32(2),
		CopySource: aws.String("mpu/irregular")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("copied"), UploadId: cu2.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: pc.CopyPartResult.ETag}, {PartNumber: aws.Int32(2), ETag: pc2.CopyPartResult.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, c, "mpu", "copied"); !bytes.Equal(got, append(slices.Clone(data[:5<<20]), want...)) {
		t.Fatal("UploadPartCopy object differs")
	}
	cu3, _ := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("aborted")})
	c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpu"), Key: aws.String("aborted"), UploadId: cu3.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("x")})
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("aborted"), UploadId: cu3.UploadId}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("mpu"), Key: aws.String("aborted"), UploadId: cu3.UploadId}); errCodeOf(err) != "NoSuchUpload" {
		t.Fatalf("aborted upload: %v", err)
	}
	// Nothing of the uploads is left in the namespace.
	ents, err := l.fs.ReadDir(ctx, "/"+stagingRoot+"/uploads")
	if err != nil || len(ents) != 0 {
		t.Fatalf("leftover uploads: %v %v", err, ents)
	}
}

func TestLiveRenameObject(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "ren")
	mustPut(t, c, "ren", "one/file", []byte("f"))
	if _, err := c.RenameObject(ctx, &s3.RenameObjectInput{Bucket: aws.String("ren"), Key: aws.String("two/moved"), RenameSource: aws.String("ren/one/file")}); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, c, "ren", "two/moved"); string(got) != "f" {
		t.Fatalf("renamed: %q", got)
	}
	if _, err := l.fs.Meta().Resolve(ctx, "/ren/one", false); client.Errno(err) == 0 {
		t.Fatal("the source's implicit parent stayed")
	}
	mustPut(t, c, "ren", "taken", []byte("t"))
	if _, err := c.RenameObject(ctx, &s3.RenameObjectInput{Bucket: aws.String("ren"), Key: aws.String("taken"), RenameSource: aws.String("ren/two/moved"), DestinationIfNoneMatch: aws.String("*")}); errCodeOf(err) != "PreconditionFailed" {
		t.Fatalf("rename onto an existing key with If-None-Match: %v", err)
	}
	// A directory of many objects moves in one transaction while listings
	// run (FLYFS_S3_RENAME_OBJECTS; 10 000 by default, 2 000 under the race
	// detector, 1 000 with -short).
	def := int64(10000)
	if raceOn {
		def = 2000
	}
	if testing.Short() {
		def = 1000
	}
	n := int(envInt("FLYFS_S3_RENAME_OBJECTS", def))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			mustPut(t, c, "ren", fmt.Sprintf("old/%05d", i), []byte("x"))
		}(i)
	}
	wg.Wait()
	renameUnderListing(t, c, "ren", "old/", "new/", func() {
		if _, err := c.RenameObject(ctx, &s3.RenameObjectInput{Bucket: aws.String("ren"), Key: aws.String("new/"), RenameSource: aws.String("ren/old/")}); err != nil {
			t.Fatal(err)
		}
	})
	keys, _ := listAll(t, c, "ren", "new/", "", 1000, "")
	if len(keys) != n {
		t.Fatalf("%d keys under new/, want %d", len(keys), n)
	}
	// The same through POSIX rename(2) of the directory.
	renameUnderListing(t, c, "ren", "new/", "posix/", func() {
		if err := l.fs.Rename(ctx, "/ren/new", "/ren/posix"); err != nil {
			t.Fatal(err)
		}
	})
	if keys, _ := listAll(t, c, "ren", "posix/", "", 1000, ""); len(keys) != n {
		t.Fatalf("%d keys under posix/, want %d", len(keys), n)
	}
}

// renameUnderListing runs rename while listings run: every listing with a
// delimiter shows exactly one of the two prefixes, and a first page under it
// is full (all its objects moved together).
func renameUnderListing(t *testing.T, c *s3.Client, bucket, from, to string, rename func()) {
	t.Helper()
	ctx := context.Background()
	stop := make(chan struct{})
	listErr := make(chan error, 1)
	lists := 0
	go func() {
		defer close(listErr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Delimiter: aws.String("/")})
			if err != nil {
				listErr <- err
				return
			}
			var ps []string
			for _, p := range out.CommonPrefixes {
				if *p.Prefix == from || *p.Prefix == to {
					ps = append(ps, *p.Prefix)
				}
			}
			if len(ps) != 1 {
				listErr <- fmt.Errorf("listing saw %v", ps)
				return
			}
			page, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(ps[0])})
			if err != nil {
				listErr <- err
				return
			}
			if len(page.Contents) != 1000 && len(page.Contents) != 0 {
				listErr <- fmt.Errorf("a page of %s had %d keys", ps[0], len(page.Contents))
				return
			}
			lists++
		}
	}()
	time.Sleep(50 * time.Millisecond)
	rename()
	time.Sleep(50 * time.Millisecond)
	close(stop)
	if err := <-listErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d listings ran across the rename of %s to %s", lists, from, to)
}

func testutilCounter(c prometheus.Counter) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}

var _ = http.MethodGet
