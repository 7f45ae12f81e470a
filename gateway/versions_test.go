package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// versionKeys are keys in true-key-order traps (as TestLiveListingTrueKeyOrder
// has them), with directory markers.
var versionKeys = []string{"a-b", "a.c", "a/", "a/x", "a/y/z", "a0", "b-", "b/c/d-e", "b/c/d/e", "b/c0", "c!", "c/d",
	"dir/", "dir/x/", "dir/x/y", "e+f g", "sp ace/k", "zz"}

func putKeys(t *testing.T, c *s3.Client, bucket string, keys []string) {
	t.Helper()
	for _, k := range keys {
		if strings.HasSuffix(k, "/") {
			mustPut(t, c, bucket, k, nil)
		} else {
			mustPut(t, c, bucket, k, []byte(k))
		}
	}
}

// listVersions lists every version and common prefix through the SDK's
// ListObjectVersions paginator.
func listVersions(t testing.TB, c *s3.Client, in *s3.ListObjectVersionsInput) (versions []types.ObjectVersion, prefixes []string, pages int) {
	t.Helper()
	p := s3.NewListObjectVersionsPaginator(c, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("ListObjectVersions %+v: %v", in, err)
		}
		pages++
		if len(out.DeleteMarkers) != 0 {
			t.Fatalf("delete markers in a bucket that was never versioned: %+v", out.DeleteMarkers)
		}
		versions = append(versions, out.Versions...)
		for _, cp := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(cp.Prefix))
		}
		if aws.ToBool(out.IsTruncated) && (aws.ToString(out.NextKeyMarker) == "" || aws.ToString(out.NextVersionIdMarker) != "null") {
			t.Fatalf("a truncated page without its markers: %q %q", aws.ToString(out.NextKeyMarker), aws.ToString(out.NextVersionIdMarker))
		}
		if pages > 1000 {
			t.Fatal("the listing does not end")
		}
	}
	return versions, prefixes, pages
}

// TestLiveListObjectVersions: every object of an unversioned bucket is
// listed once, as its one version "null" that is the latest, in S3 key
// order, with the paging, prefix, delimiter and encoding of S3.
func TestLiveListObjectVersions(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "vers")
	putKeys(t, c, "vers", versionKeys)
	for _, tc := range []struct{ prefix, delim, after string }{
		{"", "", ""}, {"", "/", ""}, {"a", "", ""}, {"a", "/", ""}, {"a/", "/", ""}, {"b/c", "/", ""}, {"dir/", "/", ""},
		{"", "-", ""}, {"", "/", "a-b"}, {"", "", "a/x"}, {"", "", "a/"}, {"", "/", "a/"}, {"nope/", "/", ""},
	} {
		for _, page := range []int32{1, 2, 1000} {
			in := &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), Prefix: aws.String(tc.prefix), MaxKeys: aws.Int32(page)}
			if tc.delim != "" {
				in.Delimiter = aws.String(tc.delim)
			}
			if tc.after != "" {
				in.KeyMarker = aws.String(tc.after)
			}
			vs, prefixes, _ := listVersions(t, c, in)
			var keys []string
			for _, v := range vs {
				keys = append(keys, aws.ToString(v.Key))
				if aws.ToString(v.VersionId) != "null" || !aws.ToBool(v.IsLatest) || v.LastModified == nil || v.Owner == nil || v.StorageClass != "STANDARD" {
					t.Fatalf("version %+v", v)
				}
			}
			wk, wp := model(versionKeys, tc.prefix, tc.delim, tc.after)
			if !slices.Equal(keys, wk) || !slices.Equal(prefixes, wp) {
				t.Errorf("prefix %q delim %q key-marker %q page %d:\n got  %q %q\n want %q %q", tc.prefix, tc.delim, tc.after, page, keys, prefixes, wk, wp)
			}
		}
	}
	// Each version is the object as HEAD sees it; a marker is the empty object.
	vs, _, _ := listVersions(t, c, &s3.ListObjectVersionsInput{Bucket: aws.String("vers")})
	for _, v := range vs {
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("vers"), Key: v.Key, VersionId: v.VersionId})
		if err != nil || aws.ToString(head.ETag) != aws.ToString(v.ETag) || aws.ToInt64(head.ContentLength) != aws.ToInt64(v.Size) {
			t.Errorf("%s: listed %s %d, HEAD %v %+v", aws.ToString(v.Key), aws.ToString(v.ETag), aws.ToInt64(v.Size), err, head)
		}
		if k := aws.ToString(v.Key); strings.HasSuffix(k, "/") && (aws.ToInt64(v.Size) != 0 || aws.ToString(v.ETag) != `"`+emptyMD5+`"`) {
			t.Errorf("marker %s: %d %s", k, aws.ToInt64(v.Size), aws.ToString(v.ETag))
		}
	}
	// A key marker with the version-id marker "null" resumes after that
	// key's one version, as a key marker alone does.
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), KeyMarker: aws.String("a/x"), VersionIdMarker: aws.String("null"), MaxKeys: aws.Int32(2)})
	if err != nil || len(out.Versions) != 2 || aws.ToString(out.Versions[0].Key) != "a/y/z" || aws.ToString(out.KeyMarker) != "a/x" ||
		aws.ToString(out.VersionIdMarker) != "null" || !aws.ToBool(out.IsTruncated) || aws.ToString(out.NextKeyMarker) != "a0" || aws.ToInt32(out.MaxKeys) != 2 {
		t.Fatalf("key-marker a/x, version-id-marker null: %v %+v", err, out)
	}
	// encoding-type=url encodes the keys, the prefix and the markers.
	out, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), Prefix: aws.String("e+"), KeyMarker: aws.String("e"),
		EncodingType: types.EncodingTypeUrl})
	if err != nil || len(out.Versions) != 1 || out.EncodingType != types.EncodingTypeUrl {
		t.Fatalf("encoding-type=url: %v %+v", err, out)
	}
	if k, err := url.QueryUnescape(aws.ToString(out.Versions[0].Key)); err != nil || k != "e+f g" || !strings.Contains(aws.ToString(out.Versions[0].Key), "%20") {
		t.Fatalf("encoding-type=url: key %q", aws.ToString(out.Versions[0].Key))
	}
	if p := aws.ToString(out.Prefix); p != "e%2B" {
		t.Fatalf("encoding-type=url: prefix %q", p)
	}
	// max-keys 0 lists nothing; the refusals S3 makes.
	if out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("vers"), MaxKeys: aws.Int32(0)}); err != nil || len(out.Versions) != 0 || aws.ToBool(out.IsTruncated) {
		t.Fatalf("max-keys 0: %v %+v", err, out)
	}
	for _, tc := range []struct {
		in   *s3.ListObjectVersionsInput
		code string
	}{
		{&s3.ListObjectVersionsInput{Bucket: aws.String("vers"), VersionIdMarker: aws.String("null")}, "InvalidArgument"},
		{&s3.ListObjectVersionsInput{Bucket: aws.String("vers"), KeyMarker: aws.String("a"), VersionIdMarker: aws.String("3HL4kqtJlcpXroDTDmJ")}, "InvalidArgument"},
		{&s3.ListObjectVersionsInput{Bucket: aws.String("vers"), EncodingType: "base64"}, "InvalidArgument"},
		{&s3.ListObjectVersionsInput{Bucket: aws.String("nosuchbucket")}, "NoSuchBucket"},
	} {
		if _, err := c.ListObjectVersions(ctx, tc.in); errCodeOf(err) != tc.code {
			t.Errorf("%+v: %v, want %s", tc.in, err, tc.code)
		}
	}
	// A key that may read the bucket may list its versions; anonymous
	// callers may on a public-read bucket only.
	resp, err := http.Get(l.url + "/vers?versions")
	if e := readError(t, resp); err != nil || resp.StatusCode != 403 || e.Code != "AccessDenied" {
		t.Fatalf("anonymous on a private bucket: %v %d %+v", err, resp.StatusCode, e)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("vers"), ACL: "public-read"}); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(l.url + "/vers?versions&prefix=zz")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Versions []objectVersion `xml:"Version"`
	}
	if err := decodeXML(resp.Body, &res); err != nil || resp.StatusCode != 200 || len(res.Versions) != 1 || res.Versions[0].Key != "zz" {
		t.Fatalf("anonymous on a public-read bucket: %v %d %+v", err, resp.StatusCode, res)
	}
	resp.Body.Close()
}

// TestLiveVersionIDNull: the version id "null" names the one version of an
// object wherever S3 takes a version id; any other id names none, and no
// request naming one changes anything.
func TestLiveVersionIDNull(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "vnull")
	data := randBytes(1 << 16)
	put := mustPut(t, c, "vnull", "obj", data)
	b, k, null := aws.String("vnull"), aws.String("obj"), aws.String("null")
	get, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: k, VersionId: null})
	if err != nil || aws.ToString(get.ETag) != aws.ToString(put.ETag) {
		t.Fatalf("GET versionId=null: %v", err)
	}
	get.Body.Close()
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k, VersionId: null}); err != nil {
		t.Fatalf("HEAD versionId=null: %v", err)
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: b, Key: k, VersionId: null,
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("t"), Value: aws.String("1")}}}}); err != nil {
		t.Fatalf("PutObjectTagging versionId=null: %v", err)
	}
	if tg, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: k, VersionId: null}); err != nil || len(tg.TagSet) != 1 {
		t.Fatalf("GetObjectTagging versionId=null: %v %+v", err, tg)
	}
	if _, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: b, Key: k, VersionId: null}); err != nil {
		t.Fatalf("DeleteObjectTagging versionId=null: %v", err)
	}
	if at, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: k, VersionId: null,
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}}); err != nil || aws.ToInt64(at.ObjectSize) != int64(len(data)) {
		t.Fatalf("GetObjectAttributes versionId=null: %v %+v", err, at)
	}
	if _, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: b, Key: k, VersionId: null}); err != nil {
		t.Fatalf("GetObjectAcl versionId=null: %v", err)
	}
	// Copy sources: ?versionId=null reads the object; another id is refused
	// as the query parameter is.
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy"), CopySource: aws.String("vnull/obj?versionId=null")}); err != nil {
		t.Fatalf("CopyObject from versionId=null: %v", err)
	}
	if got := mustGet(t, c, "vnull", "copy"); !bytes.Equal(got, data) {
		t.Fatal("copy of versionId=null differs")
	}
	for _, src := range []string{"vnull/obj?versionId=3HL4kqtJlcpXroDTDmJ", "vnull/obj?versionId="} {
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: b, Key: aws.String("copy2"), CopySource: aws.String(src)}); errCodeOf(err) != "InvalidArgument" {
			t.Errorf("CopyObject from %s: %v", src, err)
		}
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("mp"), UploadId: up.UploadId, PartNumber: aws.Int32(1),
		CopySource: aws.String("vnull/obj?versionId=null")}); err != nil {
		t.Fatalf("UploadPartCopy from versionId=null: %v", err)
	}
	if _, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: aws.String("mp"), UploadId: up.UploadId, PartNumber: aws.Int32(2),
		CopySource: aws.String("vnull/obj?versionId=nope")}); errCodeOf(err) != "InvalidArgument" {
		t.Fatalf("UploadPartCopy from versionId=nope: %v", err)
	}
	c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: up.UploadId})

	// DeleteObjects: VersionId null deletes (and is echoed), another id is
	// an error of that key and deletes nothing.
	mustPut(t, c, "vnull", "d1", []byte("1"))
	mustPut(t, c, "vnull", "d2", []byte("2"))
	del, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: b, Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("d1"), VersionId: null}, {Key: aws.String("d2"), VersionId: aws.String("3HL4kqtJlcpXroDTDmJ")}, {Key: aws.String("d3")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(del.Deleted) != 2 || aws.ToString(del.Deleted[0].Key) != "d1" || aws.ToString(del.Deleted[0].VersionId) != "null" || del.Deleted[1].VersionId != nil ||
		len(del.Errors) != 1 || aws.ToString(del.Errors[0].Key) != "d2" || aws.ToString(del.Errors[0].Code) != "InvalidArgument" || aws.ToString(del.Errors[0].VersionId) != "3HL4kqtJlcpXroDTDmJ" {
		t.Fatalf("DeleteObjects: deleted %+v errors %+v", del.Deleted, del.Errors)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("d1")}); errCodeOf(err) != "NotFound" {
		t.Fatalf("d1 after its delete: %v", err)
	}
	if got := mustGet(t, c, "vnull", "d2"); string(got) != "2" {
		t.Fatal("a delete of another version removed the object")
	}
	// DeleteObject with versionId=null deletes; with another id it does not.
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("d2"), VersionId: aws.String("3HL4kqtJlcpXroDTDmJ")}); errCodeOf(err) != "InvalidArgument" {
		t.Fatalf("DeleteObject of another version: %v", err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("d2"), VersionId: null}); err != nil {
		t.Fatalf("DeleteObject versionId=null: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("d2")}); errCodeOf(err) != "NotFound" {
		t.Fatalf("d2 after its delete: %v", err)
	}
}

// TestLiveVersionsCleanupLoop is the bucket cleanup external S3 test
// suites run between tests (s3-tests' nuke_bucket, boto-style): list the
// versions page by page with the markers of the page before, delete them
// in batches with their VersionId (and BypassGovernanceRetention), delete
// each again one by one, delete the bucket.
func TestLiveVersionsCleanupLoop(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "nuke")
	putKeys(t, c, "nuke", versionKeys)
	in := &s3.ListObjectVersionsInput{Bucket: aws.String("nuke"), MaxKeys: aws.Int32(3)}
	var batches [][]types.ObjectIdentifier
	for {
		out, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var objs []types.ObjectIdentifier
		for _, v := range out.Versions {
			objs = append(objs, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, d := range out.DeleteMarkers {
			objs = append(objs, types.ObjectIdentifier{Key: d.Key, VersionId: d.VersionId})
		}
		batches = append(batches, objs)
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
	n := 0
	for _, objs := range batches {
		n += len(objs)
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("nuke"), BypassGovernanceRetention: aws.Bool(true),
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil || len(out.Errors) != 0 || len(out.Deleted) != 0 {
			t.Fatalf("DeleteObjects %+v: %v %+v", objs, err, out)
		}
		for _, o := range objs {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("nuke"), Key: o.Key, VersionId: o.VersionId}); err != nil {
				t.Fatalf("DeleteObject %s %s: %v", aws.ToString(o.Key), aws.ToString(o.VersionId), err)
			}
		}
	}
	if n != len(versionKeys) {
		t.Fatalf("listed %d versions, want %d", n, len(versionKeys))
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("nuke")}); err != nil {
		t.Fatalf("DeleteBucket after the cleanup: %v", err)
	}
}

// TestLiveBucketVersioningState: a bucket is never versioned until
// enabled, then Enabled or Suspended as set; MFA delete is refused, naming
// it, and a document that is neither state is refused as S3 refuses it.
func TestLiveBucketVersioningState(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "vstate")
	mustPut(t, c, "vstate", "k", []byte("v"))
	check := func(when string, want types.BucketVersioningStatus) {
		t.Helper()
		out, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("vstate")})
		if err != nil || out.Status != want || out.MFADelete != "" {
			t.Fatalf("%s: GetBucketVersioning: %v %+v, want %q", when, err, out, want)
		}
	}
	check("at first", "")
	for _, st := range []types.BucketVersioningStatus{types.BucketVersioningStatusEnabled, types.BucketVersioningStatusSuspended, types.BucketVersioningStatusEnabled} {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vstate"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: st}}); err != nil {
			t.Fatalf("PutBucketVersioning %s: %v", st, err)
		}
		check("after "+string(st), st)
	}
	_, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vstate"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended, MFADelete: types.MFADeleteEnabled}})
	if errCodeOf(err) != "NotImplemented" || !strings.Contains(err.Error(), "MfaDelete") {
		t.Errorf("PutBucketVersioning with MfaDelete: %v", err)
	}
	for body, code := range map[string]string{
		"<VersioningConfiguration><Status>Sometimes</Status></VersioningConfiguration>": "MalformedXML",
		"<VersioningConfiguration/>":                        "MalformedXML",
		"<Versioning><Status>Enabled</Status></Versioning>": "MalformedXML",
		"": "MissingRequestBodyError",
	} {
		resp, err := http.DefaultClient.Do(l.signed(t, "PUT", "/vstate?versioning", []byte(body), nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if e := readError(t, resp); resp.StatusCode != 400 || e.Code != code {
			t.Errorf("PutBucketVersioning %q: %d %+v, want %s", body, resp.StatusCode, e, code)
		}
	}
	_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("nosuchbucket"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	if errCodeOf(err) != "NoSuchBucket" {
		t.Errorf("PutBucketVersioning of a missing bucket: %v", err)
	}
	check("at last", types.BucketVersioningStatusEnabled)
	if got := mustGet(t, c, "vstate", "k"); string(got) != "v" {
		t.Fatal("the object changed")
	}
}

// TestAWSCLIListObjectVersions: `aws s3api list-object-versions` with the
// CLI's own paging (--page-size pages, --max-items stops and resumes with
// --starting-token), --prefix and --delimiter.
func TestAWSCLIListObjectVersions(t *testing.T) {
	need(t, "/usr/bin/aws")
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "clivers")
	putKeys(t, c, "clivers", versionKeys)
	type cliOut struct {
		Versions []struct {
			Key, VersionId string
			IsLatest       bool
			Size           int64
			ETag           string
		}
		DeleteMarkers  []any
		CommonPrefixes []struct{ Prefix string }
		NextToken      string
	}
	list := func(args ...string) cliOut {
		t.Helper()
		var out cliOut
		raw := awsCLI(t, l, append([]string{"s3api", "list-object-versions", "--bucket", "clivers", "--output", "json"}, args...)...)
		if strings.TrimSpace(raw) == "" {
			return out
		}
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, raw)
		}
		return out
	}
	keysOf := func(o cliOut) (keys, prefixes []string) {
		for _, v := range o.Versions {
			if v.VersionId != "null" || !v.IsLatest {
				t.Fatalf("version %+v", v)
			}
			keys = append(keys, v.Key)
		}
		for _, p := range o.CommonPrefixes {
			prefixes = append(prefixes, p.Prefix)
		}
		return keys, prefixes
	}
	for _, tc := range []struct {
		args          []string
		prefix, delim string
	}{
		{nil, "", ""},
		{[]string{"--page-size", "2"}, "", ""},
		{[]string{"--prefix", "b/"}, "b/", ""},
		{[]string{"--delimiter", "/"}, "", "/"},
		{[]string{"--prefix", "a", "--delimiter", "/", "--page-size", "1"}, "a", "/"},
	} {
		keys, prefixes := keysOf(list(tc.args...))
		wk, wp := model(versionKeys, tc.prefix, tc.delim, "")
		if !slices.Equal(keys, wk) || !slices.Equal(prefixes, wp) {
			t.Errorf("%v:\n got  %q %q\n want %q %q", tc.args, keys, prefixes, wk, wp)
		}
	}
	// --max-items: pages of 5 items from pages of 2 listed, resumed by token.
	var keys []string
	args := []string{"--max-items", "5", "--page-size", "2"}
	for i := 0; ; i++ {
		out := list(args...)
		k, _ := keysOf(out)
		keys = append(keys, k...)
		if out.NextToken == "" {
			break
		}
		if i > 20 {
			t.Fatal("--max-items does not end")
		}
		args = []string{"--max-items", "5", "--page-size", "2", "--starting-token", out.NextToken}
	}
	if wk, _ := model(versionKeys, "", "", ""); !slices.Equal(keys, wk) {
		t.Errorf("--max-items 5 --page-size 2:\n got  %q\n want %q", keys, wk)
	}
	// The cleanup a script does with the CLI: every listed version deleted
	// by its id, then the bucket.
	all := list()
	var objs []map[string]string
	for _, v := range all.Versions {
		objs = append(objs, map[string]string{"Key": v.Key, "VersionId": v.VersionId})
	}
	doc, _ := json.Marshal(map[string]any{"Objects": objs, "Quiet": false})
	f := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := awsCLI(t, l, "s3api", "delete-objects", "--bucket", "clivers", "--delete", "file://"+f, "--output", "json"); strings.Contains(out, `"Errors"`) {
		t.Fatalf("delete-objects:\n%s", out)
	}
	awsCLI(t, l, "s3api", "delete-bucket", "--bucket", "clivers")
}

// TestLiveDeleteObjectsMarkersWithTheirKeys: one DeleteObjects of
// directory markers together with the keys below them (what a cleanup of
// listed versions sends) leaves the bucket empty, whatever order its
// deletes run in: a marker's directory that its last keys left while it
// was still explicit goes with the marker.
func TestLiveDeleteObjectsMarkersWithTheirKeys(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "markers")
	for round := 0; round < 20; round++ {
		var keys []string
		for i := 0; i < 8; i++ {
			d := fmt.Sprintf("r%d/d%d/", round, i)
			keys = append(keys, d, d+"x", d+"sub/", d+"sub/y", d+"sub/deep/z")
		}
		putKeys(t, c, "markers", keys)
		var objs []types.ObjectIdentifier
		for _, k := range keys {
			objs = append(objs, types.ObjectIdentifier{Key: aws.String(k), VersionId: aws.String("null")})
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("markers"), Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)}})
		if err != nil || len(out.Errors) != 0 {
			t.Fatalf("round %d: DeleteObjects: %v %+v", round, err, out)
		}
		if ents, err := l.fs.ReadDir(ctx, "/markers"); err != nil || len(ents) != 0 {
			var left []string
			for _, e := range ents {
				left = append(left, e.Name)
			}
			t.Fatalf("round %d: left in the bucket: %q %v", round, left, err)
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("markers")}); err != nil {
		t.Fatal(err)
	}
}
