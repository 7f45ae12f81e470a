package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/posix/fusefs"
)

func enableVersioning(t testing.TB, c *s3.Client, bucket string, st types.BucketVersioningStatus) {
	t.Helper()
	if _, err := c.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: st}}); err != nil {
		t.Fatalf("PutBucketVersioning %s: %v", st, err)
	}
}

// versionsOf lists key's versions and markers, newest first, as
// "id" (objects) and "dm:id" (markers), the latest starred.
func versionsOf(t testing.TB, c *s3.Client, bucket, key string) []string {
	t.Helper()
	out, err := c.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	// The SDK splits versions and markers; S3 orders them by age within a
	// key, as the ids' leading time does here.
	for _, v := range out.Versions {
		if aws.ToString(v.Key) == key {
			all = append(all, star(aws.ToString(v.VersionId), aws.ToBool(v.IsLatest)))
		}
	}
	for _, m := range out.DeleteMarkers {
		if aws.ToString(m.Key) == key {
			all = append(all, "dm:"+star(aws.ToString(m.VersionId), aws.ToBool(m.IsLatest)))
		}
	}
	slices.SortFunc(all, func(a, b string) int { return -cmpID(a, b) })
	return all
}

func star(id string, latest bool) string {
	if latest {
		return id + "*"
	}
	return id
}

// cmpID orders rendered versions by their id's time (the first 16 hex
// digits), "null" first as the oldest.
func cmpID(a, b string) int {
	trim := func(s string) string {
		if len(s) > 3 && s[:3] == "dm:" {
			s = s[3:]
		}
		if len(s) >= 16 {
			return s[:16]
		}
		return ""
	}
	x, y := trim(a), trim(b)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func getVersion(t testing.TB, c *s3.Client, bucket, key, id string) ([]byte, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if id != "" {
		in.VersionId = aws.String(id)
	}
	out, err := c.GetObject(context.Background(), in)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(out.Body)
	return b.Bytes(), err
}

func httpStatusOf(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// TestLiveVersioning: an Enabled bucket keeps every overwrite and delete;
// old versions read by id; a delete marker hides the object until it is
// deleted; restore by copying an old version; deleting versions by id
// removes them for good; ListObjectVersions lists all in S3 order.
func TestLiveVersioning(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "ver")
	enableVersioning(t, c, "ver", types.BucketVersioningStatusEnabled)
	v1, v2 := randBytes(70000), randBytes(1<<20+3)
	p1 := mustPut(t, c, "ver", "k", v1)
	p2 := mustPut(t, c, "ver", "k", v2)
	id1, id2 := aws.ToString(p1.VersionId), aws.ToString(p2.VersionId)
	if checkVersionIDSyntax(id1) != nil || id1 == nullVersion || id1 == id2 {
		t.Fatalf("PUT version ids %q, %q", id1, id2)
	}
	if got, err := getVersion(t, c, "ver", "k", ""); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("GET the current version: %v", err)
	}
	if got, err := getVersion(t, c, "ver", "k", id1); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("GET the old version: %v", err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(id1)})
	if err != nil || aws.ToString(head.ETag) != aws.ToString(p1.ETag) || aws.ToString(head.VersionId) != id1 || aws.ToInt64(head.ContentLength) != int64(len(v1)) {
		t.Fatalf("HEAD the old version: %v %+v", err, head)
	}
	if got := versionsOf(t, c, "ver", "k"); !slices.Equal(got, []string{id2 + "*", id1}) {
		t.Fatalf("versions after two PUTs: %v", got)
	}

	// A delete leaves a marker: the key reads as missing, its versions stay.
	del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("ver"), Key: aws.String("k")})
	if err != nil || !aws.ToBool(del.DeleteMarker) || checkVersionIDSyntax(aws.ToString(del.VersionId)) != nil {
		t.Fatalf("DELETE: %v %+v", err, del)
	}
	m1 := aws.ToString(del.VersionId)
	if _, err := getVersion(t, c, "ver", "k", ""); errCodeOf(err) != "NoSuchKey" {
		t.Fatalf("GET under a delete marker: %v", err)
	}
	resp, err := http.DefaultClient.Do(l.signed(t, "GET", "/ver/k", nil, nil, rootAK, rootSK, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("X-Amz-Delete-Marker") != "true" || resp.Header.Get("X-Amz-Version-Id") != m1 {
		t.Fatalf("GET under a delete marker: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := getVersion(t, c, "ver", "k", m1); httpStatusOf(err) != 405 {
		t.Fatalf("GET of the delete marker by id: %v", err)
	}
	if got := versionsOf(t, c, "ver", "k"); !slices.Equal(got, []string{"dm:" + m1 + "*", id2, id1}) {
		t.Fatalf("versions after the delete: %v", got)
	}
	if _, err := getVersion(t, c, "ver", "k", "0123456789abcdef0123456789abcdef"); errCodeOf(err) != "NoSuchVersion" {
		t.Fatalf("GET of an id no version has: %v", err)
	}

	// Restore by copying the first version over the key.
	cp, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), CopySource: aws.String("ver/k?versionId=" + id1)})
	if err != nil || aws.ToString(cp.CopySourceVersionId) != id1 || aws.ToString(cp.VersionId) == "" {
		t.Fatalf("CopyObject from the old version: %v %+v", err, cp)
	}
	id3 := aws.ToString(cp.VersionId)
	if got, err := getVersion(t, c, "ver", "k", ""); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("GET after the restore: %v", err)
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("ver"), Key: aws.String("x"), CopySource: aws.String("ver/k?versionId=" + m1)}); errCodeOf(err) != "InvalidRequest" {
		t.Fatalf("CopyObject from a delete marker: %v", err)
	}

	// Deleting versions by id: the copy goes, then the marker, and the
	// second PUT is current again.
	for _, id := range []string{id3, m1} {
		d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(id)})
		if err != nil || aws.ToString(d.VersionId) != id || aws.ToBool(d.DeleteMarker) != (id == m1) {
			t.Fatalf("DELETE version %s: %v %+v", id, err, d)
		}
	}
	if got, err := getVersion(t, c, "ver", "k", ""); err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("GET after deleting the newer versions: %v", err)
	}
	if got := versionsOf(t, c, "ver", "k"); !slices.Equal(got, []string{id2 + "*", id1}) {
		t.Fatalf("versions after deleting the newer ones: %v", got)
	}
	// A version that is gone deletes as success (S3 is idempotent here).
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("ver"), Key: aws.String("k"), VersionId: aws.String(id3)}); err != nil {
		t.Fatalf("DELETE of a version already gone: %v", err)
	}

	// DeleteObjects with versions; then the bucket is empty and can go.
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("ver")}); errCodeOf(err) != "BucketNotEmpty" {
		t.Fatalf("DeleteBucket with versions: %v", err)
	}
	dm, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("ver"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("k"), VersionId: aws.String(id2)}, {Key: aws.String("k"), VersionId: aws.String(id1)}, {Key: aws.String("gone")}}}})
	if err != nil || len(dm.Deleted) != 3 || len(dm.Errors) != 0 {
		t.Fatalf("DeleteObjects: %v %+v", err, dm)
	}
	for _, d := range dm.Deleted {
		if aws.ToString(d.Key) == "gone" && (!aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) == "") {
			t.Fatalf("DeleteObjects of a missing key in an Enabled bucket: %+v (want a new marker)", d)
		}
	}
	if got := versionsOf(t, c, "ver", "k"); len(got) != 0 {
		t.Fatalf("versions after deleting all: %v", got)
	}
	out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("ver")})
	if err != nil || len(out.Versions) != 0 || len(out.DeleteMarkers) != 1 {
		t.Fatalf("listing: %v %+v", err, out)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("ver"), Key: aws.String("gone"), VersionId: out.DeleteMarkers[0].VersionId}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("ver")}); err != nil {
		t.Fatalf("DeleteBucket after its versions went: %v", err)
	}
}

// TestLiveVersioningSuspended: in a Suspended bucket a PUT and a DELETE
// make the version "null", replacing the key's earlier null version, and
// keep the versions with other ids.
func TestLiveVersioningSuspended(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "susp")
	mustPut(t, c, "susp", "k", []byte("before"))
	enableVersioning(t, c, "susp", types.BucketVersioningStatusEnabled)
	e := aws.ToString(mustPut(t, c, "susp", "k", []byte("enabled")).VersionId)
	enableVersioning(t, c, "susp", types.BucketVersioningStatusSuspended)
	if id := aws.ToString(mustPut(t, c, "susp", "k", []byte("suspended")).VersionId); id != nullVersion {
		t.Fatalf("PUT in a Suspended bucket: version %q", id)
	}
	if got := versionsOf(t, c, "susp", "k"); !slices.Equal(got, []string{e, "null*"}) && !slices.Equal(got, []string{"null*", e}) {
		t.Fatalf("versions: %v (the first null one must be gone)", got)
	}
	if got, err := getVersion(t, c, "susp", "k", nullVersion); err != nil || string(got) != "suspended" {
		t.Fatalf("GET versionId=null: %q %v", got, err)
	}
	d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("susp"), Key: aws.String("k")})
	if err != nil || !aws.ToBool(d.DeleteMarker) || aws.ToString(d.VersionId) != nullVersion {
		t.Fatalf("DELETE in a Suspended bucket: %v %+v", err, d)
	}
	if got, err := getVersion(t, c, "susp", "k", e); err != nil || string(got) != "enabled" {
		t.Fatalf("GET the Enabled version: %q %v", got, err)
	}
}

// TestLiveVersionsPaging: ListObjectVersions pages through many versions
// of a few keys at every page size, each (key, version) once, in order.
func TestLiveVersionsPaging(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "vpage")
	enableVersioning(t, c, "vpage", types.BucketVersioningStatusEnabled)
	for _, k := range []string{"a", "b/c", "c", "d/e/f"} {
		for i := 0; i < 3; i++ {
			mustPut(t, c, "vpage", k, []byte(fmt.Sprint(k, i)))
		}
	}
	if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("vpage"), Key: aws.String("c")}); err != nil {
		t.Fatal(err)
	}
	render := func(in *s3.ListObjectVersionsInput) []string {
		var out []string
		p := s3.NewListObjectVersionsPaginator(c, in)
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range page.Versions {
				out = append(out, aws.ToString(v.Key)+"@"+star(aws.ToString(v.VersionId), aws.ToBool(v.IsLatest)))
			}
			for _, m := range page.DeleteMarkers {
				out = append(out, aws.ToString(m.Key)+"@dm:"+star(aws.ToString(m.VersionId), aws.ToBool(m.IsLatest)))
			}
			for _, cp := range page.CommonPrefixes {
				out = append(out, aws.ToString(cp.Prefix)+"/")
			}
		}
		slices.Sort(out)
		return out
	}
	all := render(&s3.ListObjectVersionsInput{Bucket: aws.String("vpage")})
	if len(all) != 13 {
		t.Fatalf("%d entries, want 12 versions and a marker: %v", len(all), all)
	}
	latest := 0
	for _, e := range all {
		if e[len(e)-1] == '*' {
			latest++
		}
	}
	if latest != 4 {
		t.Fatalf("%d latest entries, want one per key: %v", latest, all)
	}
	for _, n := range []int32{1, 2, 3, 5} {
		if got := render(&s3.ListObjectVersionsInput{Bucket: aws.String("vpage"), MaxKeys: aws.Int32(n)}); !slices.Equal(got, all) {
			t.Fatalf("pages of %d:\n%v\nwant\n%v", n, got, all)
		}
	}
	withDelim := render(&s3.ListObjectVersionsInput{Bucket: aws.String("vpage"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(2)})
	if len(withDelim) != 3+4+2 || !slices.Contains(withDelim, "b//") || !slices.Contains(withDelim, "d//") {
		t.Fatalf("with a delimiter: %v", withDelim)
	}
}

// TestLiveVersioningFUSE: the POSIX view of a versioned bucket. An rm
// through the mount keeps the file as a noncurrent version behind a delete
// marker; deleting the marker over S3 brings the file back in the mount;
// an overwrite through S3 keeps the old bytes readable by version id.
func TestLiveVersioningFUSE(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: this test needs the fuse kernel module")
	}
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mnt := t.TempDir()
	// No kernel caching of names: an S3 overwrite shows at once (with
	// the default 1 s, within a second).
	m, err := fusefs.Mount(ctx, l.fs, mnt, fusefs.Options{AttrTimeout: -1, EntryTimeout: -1})
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { m.Unmount() })
	mustBucket(t, c, "vfuse")
	enableVersioning(t, c, "vfuse", types.BucketVersioningStatusEnabled)
	data := randBytes(200000)
	if err := os.MkdirAll(filepath.Join(mnt, "vfuse/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(mnt, "vfuse/dir/f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	vs := versionsOf(t, c, "vfuse", "dir/f")
	if len(vs) != 2 || vs[0][:3] != "dm:" || vs[0][len(vs[0])-1] != '*' {
		t.Fatalf("versions after rm through the mount: %v", vs)
	}
	marker := vs[0][3 : len(vs[0])-1]
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vfuse"), Key: aws.String("dir/f"), VersionId: aws.String(marker)}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file through the mount after its delete marker went: %v (%d bytes)", err, len(got))
	}
	// Overwrite over S3: the mount reads the new bytes, S3 the old by id.
	old := aws.ToString(mustPut(t, c, "vfuse", "dir/f", []byte("new")).VersionId)
	if got, err := os.ReadFile(path); err != nil || string(got) != "new" {
		t.Fatalf("the mount after an S3 overwrite: %q %v", got, err)
	}
	vs = versionsOf(t, c, "vfuse", "dir/f")
	if len(vs) != 2 || vs[0] != old+"*" {
		t.Fatalf("versions after the overwrite: %v", vs)
	}
	if got, err := getVersion(t, c, "vfuse", "dir/f", vs[1]); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the first version over S3: %v", err)
	}
	// The old version through the mount's hidden path, read-only, not
	// listed with the directory.
	hidden := filepath.Join(mnt, "vfuse/dir", fusefs.VersionsDirName)
	if got, err := os.ReadFile(filepath.Join(hidden, "f", vs[1])); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the old version through %s: %v (%d bytes)", hidden, err, len(got))
	}
	if names, err := os.ReadDir(hidden); err != nil || len(names) != 1 || names[0].Name() != "f" || !names[0].IsDir() {
		t.Fatalf("listing %s: %v %v", hidden, names, err)
	}
	if ids, err := os.ReadDir(filepath.Join(hidden, "f")); err != nil || len(ids) != 1 || ids[0].Name() != vs[1] {
		t.Fatalf("listing %s/f: %v %v", hidden, ids, err)
	}
	if ents, err := os.ReadDir(filepath.Join(mnt, "vfuse/dir")); err != nil || len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("the directory lists %v (%v): the hidden name must not show", ents, err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "f", vs[1]), []byte("x"), 0o644); !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EACCES) {
		t.Fatalf("writing an old version: %v, want EROFS", err)
	}
	if err := os.Remove(filepath.Join(hidden, "f", vs[1])); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("removing an old version through the mount: %v, want EPERM", err)
	}
	if err := os.Mkdir(filepath.Join(mnt, "vfuse", fusefs.VersionsDirName), 0o755); !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("making the hidden name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hidden, "f", "0123456789abcdef0123456789abcdef")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a version that is not there: %v", err)
	}
	// Outside versioned buckets the name is an ordinary one.
	mustBucket(t, c, "plainb")
	if err := os.Mkdir(filepath.Join(mnt, "plainb", fusefs.VersionsDirName), 0o755); err != nil {
		t.Fatalf("%s in a bucket never versioned: %v", fusefs.VersionsDirName, err)
	}
	// rm -r of the directory through the mount goes file by file: each kept.
	if err := os.RemoveAll(filepath.Join(mnt, "vfuse/dir")); err != nil {
		t.Fatal(err)
	}
	if vs := versionsOf(t, c, "vfuse", "dir/f"); len(vs) != 3 {
		t.Fatalf("versions after rm -r: %v", vs)
	}
}

// TestAWSCLIVersioning: the walk-through an admin does with the aws CLI:
// turn versioning on, overwrite, list the versions, read the old one,
// delete, and restore by copying the old version back.
func TestAWSCLIVersioning(t *testing.T) {
	need(t, "/usr/bin/aws")
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "cliv")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	awsCLI(t, l, "s3api", "put-bucket-versioning", "--bucket", "cliv", "--versioning-configuration", "Status=Enabled")
	if out := awsCLI(t, l, "s3api", "get-bucket-versioning", "--bucket", "cliv", "--output", "text"); !strings.Contains(out, "Enabled") {
		t.Fatalf("get-bucket-versioning: %q", out)
	}
	awsCLI(t, l, "s3", "cp", write("one", "first"), "s3://cliv/ckpt")
	awsCLI(t, l, "s3", "cp", write("two", "second"), "s3://cliv/ckpt")
	var listed struct {
		Versions []struct {
			Key, VersionId string
			IsLatest       bool
		}
		DeleteMarkers []struct {
			Key, VersionId string
			IsLatest       bool
		}
	}
	list := func() {
		t.Helper()
		listed.Versions, listed.DeleteMarkers = nil, nil
		if err := json.Unmarshal([]byte(awsCLI(t, l, "s3api", "list-object-versions", "--bucket", "cliv", "--output", "json")), &listed); err != nil {
			t.Fatal(err)
		}
	}
	list()
	if len(listed.Versions) != 2 || !listed.Versions[0].IsLatest || listed.Versions[1].IsLatest {
		t.Fatalf("list-object-versions after two uploads: %+v", listed)
	}
	old := listed.Versions[1].VersionId
	awsCLI(t, l, "s3api", "get-object", "--bucket", "cliv", "--key", "ckpt", "--version-id", old, filepath.Join(dir, "got"))
	if got, _ := os.ReadFile(filepath.Join(dir, "got")); string(got) != "first" {
		t.Fatalf("get-object --version-id: %q", got)
	}
	awsCLI(t, l, "s3", "rm", "s3://cliv/ckpt")
	list()
	if len(listed.DeleteMarkers) != 1 || !listed.DeleteMarkers[0].IsLatest || len(listed.Versions) != 2 {
		t.Fatalf("after rm: %+v", listed)
	}
	awsCLI(t, l, "s3api", "copy-object", "--bucket", "cliv", "--key", "ckpt", "--copy-source", "cliv/ckpt?versionId="+old)
	awsCLI(t, l, "s3", "cp", "s3://cliv/ckpt", filepath.Join(dir, "restored"))
	if got, _ := os.ReadFile(filepath.Join(dir, "restored")); string(got) != "first" {
		t.Fatalf("after the restore: %q", got)
	}
}

// TestBoto3Versioning: boto3's versioning calls, and its resource API's
// bucket.object_versions.delete() (what cleanup scripts run) empties the
// bucket so that it can be deleted.
func TestBoto3Versioning(t *testing.T) {
	py := need(t, "/usr/bin/python3")
	if exec.Command(py, "-c", "import boto3").Run() != nil {
		t.Skip("boto3 is not installed (Debian package python3-boto3); skipping")
	}
	l := startGW(t)
	script := `
import boto3, sys
s = boto3.session.Session(aws_access_key_id=sys.argv[2], aws_secret_access_key=sys.argv[3], region_name="us-east-1")
c = s.client("s3", endpoint_url=sys.argv[1])
c.create_bucket(Bucket="bvers")
c.put_bucket_versioning(Bucket="bvers", VersioningConfiguration={"Status": "Enabled"})
assert c.get_bucket_versioning(Bucket="bvers")["Status"] == "Enabled"
ids = [c.put_object(Bucket="bvers", Key="k", Body=b"v%d" % i)["VersionId"] for i in range(3)]
assert len(set(ids)) == 3, ids
vs = c.list_object_versions(Bucket="bvers")["Versions"]
assert [v["VersionId"] for v in vs] == ids[::-1], (vs, ids)
assert c.get_object(Bucket="bvers", Key="k", VersionId=ids[0])["Body"].read() == b"v0"
d = c.delete_object(Bucket="bvers", Key="k")
assert d["DeleteMarker"] and d["VersionId"]
try:
    c.head_object(Bucket="bvers", Key="k")
    raise SystemExit("HEAD under a delete marker succeeded")
except c.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "404", e.response
c.delete_object(Bucket="bvers", Key="k", VersionId=d["VersionId"])
assert c.get_object(Bucket="bvers", Key="k")["Body"].read() == b"v2"
s.resource("s3", endpoint_url=sys.argv[1]).Bucket("bvers").object_versions.delete()
c.delete_bucket(Bucket="bvers")
print("ok")
`
	if out := run(t, []string{"AWS_CA_BUNDLE=", "HOME=" + t.TempDir()}, py, "-c", script, l.url, rootAK, rootSK); strings.TrimSpace(out) != "ok" {
		t.Fatalf("boto3: %s", out)
	}
}

// TestLiveVersioningUnderFaults: writers PUT and DELETE the same keys of a
// versioned bucket through two metads while the metadata store fails reads
// and commits (some of them after committing: "maybe committed") and one
// metad is killed and restarted. No acknowledged version is lost: every
// PUT that answered a version id is listed and reads back its bytes, after
// GC (no grace) has run; every listed version reads; fsck is clean.
func TestLiveVersioningUnderFaults(t *testing.T) {
	l := startGWFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 1, Chains: 2, NoSync: true}, Metads: 2,
		ChunkSize: 1 << 20, MetaFaults: &kv.Faults{ReadRate: 0.01, CommitRate: 0.1, Seed: 23}}, nil)
	c := l.root(t)
	ctx := context.Background()
	for i := 0; ; i++ {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("vfault")})
		if err == nil || errCodeOf(err) == "BucketAlreadyOwnedByYou" {
			break
		}
		if i > 20 {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		_, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vfault"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		if err == nil {
			break
		}
		if i > 20 {
			t.Fatal(err)
		}
	}
	type put struct{ key, id, body string }
	var mu sync.Mutex
	var acked []put
	var failed, deletes int
	keys := []string{"a", "d/b", "d/e/c"}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				key := keys[(w+i)%len(keys)]
				if i%7 == 6 {
					if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vfault"), Key: aws.String(key)}); err == nil {
						mu.Lock()
						deletes++
						mu.Unlock()
					}
					continue
				}
				body := fmt.Sprintf("w%d-i%d-%s", w, i, key)
				out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vfault"), Key: aws.String(key), Body: strings.NewReader(body)})
				mu.Lock()
				if err != nil {
					failed++
				} else {
					acked = append(acked, put{key, aws.ToString(out.VersionId), body})
				}
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The kill and the restart come while the writers write.
	waitAcked := func(n int) int {
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			select {
			case <-done:
				return got
			default:
			}
			if got >= n {
				return got
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	atKill := waitAcked(15)
	l.c.KillMetad(0)
	atRestart := waitAcked(atKill + 15)
	if err := l.c.StartMetad(0); err != nil {
		t.Fatal(err)
	}
	<-done
	t.Logf("metad 0 killed after %d PUTs, restarted after %d", atKill, atRestart)
	time.Sleep(500 * time.Millisecond) // GC passes (no grace) over whatever was removed
	t.Logf("%d PUTs acknowledged, %d failed, %d deletes", len(acked), failed, deletes)
	if len(acked) < 20 {
		t.Fatalf("only %d PUTs went through", len(acked))
	}
	listed := map[string]bool{}
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String("vfault"), MaxKeys: aws.Int32(7)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			listed[aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId)] = true
			if _, err := getVersion(t, c, "vfault", aws.ToString(v.Key), aws.ToString(v.VersionId)); err != nil {
				t.Errorf("listed version %s@%s does not read: %v", aws.ToString(v.Key), aws.ToString(v.VersionId), err)
			}
		}
	}
	for _, a := range acked {
		if !listed[a.key+"@"+a.id] {
			t.Errorf("acknowledged PUT %s@%s is not listed", a.key, a.id)
			continue
		}
		got, err := getVersion(t, c, "vfault", a.key, a.id)
		if err != nil || string(got) != a.body {
			t.Errorf("version %s@%s reads %q, %v; want %q", a.key, a.id, got, err, a.body)
		}
	}
	r, err := l.fs.Meta().Fsck(ctx)
	if err != nil || len(r.Problems) > 0 {
		t.Fatalf("fsck: %v %+v", err, r)
	}
	t.Logf("faults injected: %+v", l.c.MetaKV.FaultCounts())
}

// TestLiveVersioningThroughStorageKills: writers overwrite and delete keys
// of a versioned bucket while each storage node is killed and restarted in
// turn (two replicas per chain): every acknowledged version is listed and
// reads back its bytes, after GC, and fsck is clean: no version lost, no
// chunk of a kept version freed.
func TestLiveVersioningThroughStorageKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts storage nodes")
	}
	l := startGWFS(t, harness.FSConfig{ClusterConfig: harness.ClusterConfig{Nodes: 3, Replicas: 2, Chains: 3, T: time.Second, NoSync: true},
		ChunkSize: 1 << 20}, nil)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "vkill")
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vkill"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	type put struct {
		key, id string
		body    []byte
	}
	var mu sync.Mutex
	var acked []put
	failed := 0
	keys := []string{"ckpt/a", "ckpt/b", "c"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := keys[(w+i)%len(keys)]
				if i%5 == 4 {
					c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vkill"), Key: aws.String(key)})
					continue
				}
				body := bytes.Repeat([]byte(fmt.Sprintf("w%d-i%d ", w, i)), 30_000+i*997) // ~0.3 MiB, across chunks
				out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vkill"), Key: aws.String(key), Body: bytes.NewReader(body)})
				mu.Lock()
				if err != nil {
					failed++
				} else {
					acked = append(acked, put{key, aws.ToString(out.VersionId), body})
				}
				mu.Unlock()
			}
		}()
	}
	for _, node := range []int{0, 1, 2} {
		time.Sleep(400 * time.Millisecond)
		l.c.C.StopNode(node)
		time.Sleep(1500 * time.Millisecond)
		if err := l.c.C.StartNode(node); err != nil {
			t.Fatal(err)
		}
		l.c.WaitHealthy(30 * time.Second)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d PUTs acknowledged, %d failed", len(acked), failed)
	if len(acked) < 20 {
		t.Fatalf("only %d PUTs went through", len(acked))
	}
	if _, err := l.fs.Meta().Collect(ctx, true); err != nil {
		t.Fatal(err)
	}
	for _, a := range acked {
		got, err := getVersion(t, c, "vkill", a.key, a.id)
		if err != nil || !bytes.Equal(got, a.body) {
			t.Errorf("version %s@%s: %d bytes, %v; want %d", a.key, a.id, len(got), err, len(a.body))
		}
	}
	r, err := l.fs.Meta().Fsck(ctx)
	if err != nil || len(r.Problems) > 0 {
		t.Fatalf("fsck: %v %+v", err, r)
	}
}
