package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/access"
)

// rawResponse sends r on a connection of its own and returns the response
// exactly as it came over the wire (header names in their case).
func rawResponse(t testing.TB, l *liveGW, r *http.Request) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(l.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	r.Close = true
	if err := r.Write(conn); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(bufio.NewReader(conn))
	return string(b)
}

// awsCLI runs the aws CLI against l as the root key.
func awsCLI(t *testing.T, l *liveGW, args ...string) string {
	t.Helper()
	bin := need(t, "/usr/bin/aws")
	tmp := t.TempDir()
	env := []string{"AWS_ACCESS_KEY_ID=" + rootAK, "AWS_SECRET_ACCESS_KEY=" + rootSK, "AWS_DEFAULT_REGION=us-east-1", "AWS_CA_BUNDLE=",
		"AWS_CONFIG_FILE=" + filepath.Join(tmp, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(tmp, "none"), "AWS_PAGER=", "HOME=" + tmp}
	return run(t, env, bin, append([]string{"--endpoint-url", l.url}, args...)...)
}

// TestLiveUserMetadataLowerCase: user metadata comes back with the names
// it was stored under, lower case, as S3 sends them (clients that keep the
// header's case, like botocore, read Metadata["owner"]).
func TestLiveUserMetadataLowerCase(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "umeta")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("umeta"), Key: aws.String("k"), Body: strings.NewReader("v"),
		Metadata: map[string]string{"owner": "alice", "Mixed-Case": "Value"}}); err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("umeta"), Key: aws.String("k")})
	if err != nil || h.Metadata["owner"] != "alice" || h.Metadata["mixed-case"] != "Value" {
		t.Fatalf("SDK head: %v %+v", err, h.Metadata)
	}
	for _, m := range []string{"HEAD", "GET"} {
		raw := rawResponse(t, l, l.signed(t, m, "/umeta/k", nil, nil, rootAK, rootSK, time.Now()))
		for _, want := range []string{"\r\nx-amz-meta-owner: alice\r\n", "\r\nx-amz-meta-mixed-case: Value\r\n"} {
			if !strings.Contains(raw, want) {
				t.Errorf("%s: no %q in\n%s", m, strings.TrimSpace(want), raw)
			}
		}
	}
	// botocore keeps the header's case: the aws CLI shows what boto3 users read.
	out := awsCLI(t, l, "s3api", "head-object", "--bucket", "umeta", "--key", "k")
	var res struct{ Metadata map[string]string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Metadata["owner"] != "alice" || res.Metadata["mixed-case"] != "Value" {
		t.Fatalf("aws s3api head-object: %v\n%s", err, out)
	}
}

// TestLiveListEncodingURL: encoding-type=url encodes as S3 does, a space as
// %20 and '/' kept; the aws CLI and rclone (which ask for it) read the keys
// back as they are.
func TestLiveListEncodingURL(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	mustBucket(t, c, "enc")
	all := []string{"asdf+b", "quux ab/thud", "x y", "foo+1/bar", "p%20q", "ümlaut ä"}
	for _, k := range all {
		mustPut(t, c, "enc", k, []byte(k))
	}
	for _, path := range []string{"/enc?list-type=2&encoding-type=url&delimiter=/", "/enc?encoding-type=url&delimiter=/"} {
		resp, err := http.DefaultClient.Do(l.signed(t, "GET", path, nil, nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{"<Key>asdf%2Bb</Key>", "<Key>x%20y</Key>", "<Key>p%2520q</Key>", "<Key>%C3%BCmlaut%20%C3%A4</Key>",
			"<Prefix>quux%20ab/</Prefix>", "<Prefix>foo%2B1/</Prefix>", "<Delimiter>/</Delimiter>", "<EncodingType>url</EncodingType>"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s: no %s in\n%s", path, want, b)
			}
		}
	}
	// V1 markers are encoded too.
	resp, _ := http.DefaultClient.Do(l.signed(t, "GET", "/enc?encoding-type=url&max-keys=1&marker=quux%20ab%2Fthud", nil, nil, rootAK, rootSK, time.Now()))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "<Marker>quux%20ab/thud</Marker>") || !strings.Contains(string(b), "<NextMarker>x%20y</NextMarker>") {
		t.Errorf("V1 markers:\n%s", b)
	}
	// ListMultipartUploads honours it as well.
	if _, err := c.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("enc"), Key: aws.String("up load+x")}); err != nil {
		t.Fatal(err)
	}
	resp, _ = http.DefaultClient.Do(l.signed(t, "GET", "/enc?uploads&encoding-type=url", nil, nil, rootAK, rootSK, time.Now()))
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "<Key>up%20load%2Bx</Key>") || !strings.Contains(string(b), "<EncodingType>url</EncodingType>") {
		t.Errorf("ListMultipartUploads encoding-type=url:\n%s", b)
	}

	want := slices.Clone(all)
	slices.Sort(want)
	// botocore asks for encoding-type=url on its own and decodes.
	out := awsCLI(t, l, "s3api", "list-objects-v2", "--bucket", "enc")
	var res struct{ Contents []struct{ Key string } }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, o := range res.Contents {
		got = append(got, o.Key)
	}
	if !slices.Equal(got, want) {
		t.Errorf("aws s3api list-objects-v2: %q, want %q", got, want)
	}
	out = awsCLI(t, l, "s3api", "list-objects", "--bucket", "enc")
	res.Contents = nil
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got = got[:0]
	for _, o := range res.Contents {
		got = append(got, o.Key)
	}
	if !slices.Equal(got, want) {
		t.Errorf("aws s3api list-objects: %q, want %q", got, want)
	}
	rclone := need(t, "/usr/bin/rclone")
	tmp := t.TempDir()
	env := []string{"RCLONE_CONFIG=" + filepath.Join(tmp, "rclone.conf"), "RCLONE_CONFIG_FLY_TYPE=s3", "RCLONE_CONFIG_FLY_PROVIDER=Other",
		"RCLONE_CONFIG_FLY_ACCESS_KEY_ID=" + rootAK, "RCLONE_CONFIG_FLY_SECRET_ACCESS_KEY=" + rootSK, "RCLONE_CONFIG_FLY_ENDPOINT=" + l.url,
		"RCLONE_CONFIG_FLY_REGION=us-east-1", "HOME=" + tmp}
	os.WriteFile(filepath.Join(tmp, "rclone.conf"), nil, 0o600)
	lsf := strings.Split(strings.TrimSpace(run(t, env, rclone, "lsf", "-R", "--files-only", "fly:enc")), "\n")
	slices.Sort(lsf)
	if !slices.Equal(lsf, want) {
		t.Errorf("rclone lsf: %q, want %q", lsf, want)
	}
}

// TestLiveRefusedProtections: encryption and object-lock headers ask for a
// protection flyfs does not give; they are refused naming the header, and
// nothing is stored.
func TestLiveRefusedProtections(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "prot")
	mustPut(t, c, "prot", "src", []byte("source"))
	key := bytes.Repeat([]byte("k"), 32)
	sum := md5.Sum(key)
	ssec := map[string]string{"X-Amz-Server-Side-Encryption-Customer-Algorithm": "AES256",
		"X-Amz-Server-Side-Encryption-Customer-Key":     base64.StdEncoding.EncodeToString(key),
		"X-Amz-Server-Side-Encryption-Customer-Key-Md5": base64.StdEncoding.EncodeToString(sum[:])}
	sets := map[string]map[string]string{
		"x-amz-server-side-encryption":                    {"X-Amz-Server-Side-Encryption": "AES256"},
		"x-amz-server-side-encryption ":                   {"X-Amz-Server-Side-Encryption": "aws:kms", "X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "arn:aws:kms:us-east-1:1:key/x"},
		"x-amz-server-side-encryption-aws-kms-key-id":     {"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id": "arn:aws:kms:us-east-1:1:key/x"},
		"x-amz-server-side-encryption-context":            {"X-Amz-Server-Side-Encryption-Context": "e30="},
		"x-amz-server-side-encryption-bucket-key-enabled": {"X-Amz-Server-Side-Encryption-Bucket-Key-Enabled": "true"},
		"x-amz-server-side-encryption-customer-algorithm": ssec,
		"x-amz-object-lock-mode":                          {"X-Amz-Object-Lock-Mode": "COMPLIANCE", "X-Amz-Object-Lock-Retain-Until-Date": "2099-01-01T00:00:00Z"},
		"x-amz-object-lock-retain-until-date":             {"X-Amz-Object-Lock-Retain-Until-Date": "2099-01-01T00:00:00Z"},
		"x-amz-object-lock-legal-hold":                    {"X-Amz-Object-Lock-Legal-Hold": "ON"},
	}
	check := func(what string, resp *http.Response, header string) {
		t.Helper()
		e := readError(t, resp)
		if strings.HasPrefix(header, "x-amz-object-lock-") {
			// Given, but only in a bucket with object lock: S3's answer
			// elsewhere.
			if resp.StatusCode != http.StatusBadRequest || e.Code != "InvalidRequest" || !strings.Contains(e.Message, "Object Lock Configuration") {
				t.Errorf("%s with %s in a bucket without object lock: %d %+v", what, header, resp.StatusCode, e)
			}
			return
		}
		if resp.StatusCode != http.StatusNotImplemented || e.Code != "NotImplemented" || !strings.Contains(e.Message, strings.TrimSpace(header)) {
			t.Errorf("%s with %s: %d %+v", what, header, resp.StatusCode, e)
		}
	}
	uploads := func() int {
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("prot")})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	for name, hdr := range sets {
		dst := "dst-" + strings.TrimSpace(name)
		resp, _ := http.DefaultClient.Do(l.signed(t, "PUT", "/prot/"+dst, []byte("secret"), hdr, rootAK, rootSK, time.Now()))
		check("PutObject", resp, name)
		cp := map[string]string{"X-Amz-Copy-Source": "/prot/src"}
		for k, v := range hdr {
			cp[k] = v
		}
		resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot/"+dst, nil, cp, rootAK, rootSK, time.Now()))
		check("CopyObject", resp, name)
		resp, _ = http.DefaultClient.Do(l.signed(t, "POST", "/prot/"+dst+"?uploads", nil, hdr, rootAK, rootSK, time.Now()))
		check("CreateMultipartUpload", resp, name)
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("prot"), Key: aws.String(dst)}); errCodeOf(err) != "NotFound" {
			t.Errorf("%s: a refused write left an object: %v", name, err)
		}
	}
	if n := uploads(); n != 0 {
		t.Errorf("refused CreateMultipartUpload left %d uploads", n)
	}
	// SSE-C on the parts of a plain upload, and on GET and HEAD.
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("prot"), Key: aws.String("mp")})
	if err != nil {
		t.Fatal(err)
	}
	q := "?partNumber=1&uploadId=" + *cu.UploadId
	resp, _ := http.DefaultClient.Do(l.signed(t, "PUT", "/prot/mp"+q, []byte("part"), ssec, rootAK, rootSK, time.Now()))
	check("UploadPart", resp, "x-amz-server-side-encryption-customer-algorithm")
	cp := map[string]string{"X-Amz-Copy-Source": "/prot/src"}
	for k, v := range ssec {
		cp[strings.Replace(k, "X-Amz-", "X-Amz-Copy-Source-", 1)] = v
	}
	resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot/mp"+q, nil, cp, rootAK, rootSK, time.Now()))
	check("UploadPartCopy", resp, "x-amz-copy-source-server-side-encryption-customer-algorithm")
	resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot/copy", nil, cp, rootAK, rootSK, time.Now()))
	check("CopyObject", resp, "x-amz-copy-source-server-side-encryption-customer-algorithm")
	parts, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("prot"), Key: aws.String("mp"), UploadId: cu.UploadId})
	if err != nil || len(parts.Parts) != 0 {
		t.Errorf("refused parts were stored: %v %+v", err, parts)
	}
	resp, _ = http.DefaultClient.Do(l.signed(t, "GET", "/prot/src", nil, ssec, rootAK, rootSK, time.Now()))
	check("GetObject", resp, "x-amz-server-side-encryption-customer-algorithm")
	// An append (directory buckets' x-amz-write-offset-bytes) must not become a replace.
	resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot/src", []byte("tail"), map[string]string{"X-Amz-Write-Offset-Bytes": "6"}, rootAK, rootSK, time.Now()))
	check("PutObject", resp, "x-amz-write-offset-bytes")
	if got := mustGet(t, c, "prot", "src"); string(got) != "source" {
		t.Errorf("src is %q", got)
	}
	// Through the SDK, as users ask for it.
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("prot"), Key: aws.String("sdk"), Body: strings.NewReader("x"), ServerSideEncryption: types.ServerSideEncryptionAes256})
	if errCodeOf(err) != "NotImplemented" {
		t.Errorf("SDK PutObject with SSE-S3: %v", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("prot"), Key: aws.String("sdk"), Body: strings.NewReader("x"),
		SSECustomerAlgorithm: aws.String("AES256"), SSECustomerKey: aws.String(base64.StdEncoding.EncodeToString(key)), SSECustomerKeyMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:]))})
	if errCodeOf(err) != "NotImplemented" {
		t.Errorf("SDK PutObject with SSE-C: %v", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("prot"), Key: aws.String("sdk"), Body: strings.NewReader("x"), ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn})
	if errCodeOf(err) != "InvalidRequest" {
		t.Errorf("SDK PutObject with a legal hold in a bucket without object lock: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("prot"), Key: aws.String("sdk")}); errCodeOf(err) != "NotFound" {
		t.Errorf("a refused SDK write left an object: %v", err)
	}
	// A canned ACL and grants at once, or headers and a document at once,
	// are refused, and change nothing.
	resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot?acl", nil, map[string]string{"X-Amz-Acl": "private", "X-Amz-Grant-Read": "uri=http://acs.amazonaws.com/groups/global/AllUsers"}, rootAK, rootSK, time.Now()))
	if e := readError(t, resp); resp.StatusCode != http.StatusBadRequest || e.Code != "InvalidRequest" {
		t.Errorf("PutBucketAcl with a canned ACL and a grant: %d %+v", resp.StatusCode, e)
	}
	resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot?acl", []byte("<AccessControlPolicy/>"), map[string]string{"X-Amz-Acl": "public-read"}, rootAK, rootSK, time.Now()))
	if e := readError(t, resp); resp.StatusCode != http.StatusBadRequest || e.Code != "UnexpectedContent" {
		t.Errorf("PutBucketAcl with a header and a body: %d %+v", resp.StatusCode, e)
	}
	resp, _ = http.DefaultClient.Do(l.signed(t, "PUT", "/prot?acl", nil, map[string]string{"X-Amz-Grant-Read": "emailAddress=a@example.com"}, rootAK, rootSK, time.Now()))
	if e := readError(t, resp); resp.StatusCode != http.StatusNotImplemented || !strings.Contains(e.Message, "e-mail") {
		t.Errorf("PutBucketAcl granting to an e-mail address: %d %+v", resp.StatusCode, e)
	}
	if a, err := l.gw.bucketAuthOf(ctx, "prot"); err != nil || a.acl.public() {
		t.Errorf("a refused PutBucketAcl made the bucket public: %v", err)
	}
}

// TestLivePartNumbers: PartsCount only when a part is asked for; a part
// read is a 206 with its Content-Range; GetObjectAttributes lists the parts.
func TestLivePartNumbers(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "parts")
	b := aws.String("parts")
	data := randBytes(5<<20 + 3)
	cu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("mp"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, p := range [][]byte{data[:5<<20], data[5<<20:]} {
		n := aws.Int32(int32(i + 1))
		o, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("mp"), UploadId: cu.UploadId, PartNumber: n, Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{PartNumber: n, ETag: o.ETag, ChecksumCRC32: o.ChecksumCRC32})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("mp"), UploadId: cu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, "parts", "single", []byte("0123456789"))

	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("mp")})
	if err != nil || h.PartsCount != nil {
		t.Errorf("HeadObject without partNumber: %v, PartsCount %v", err, aws.ToInt32(h.PartsCount))
	}
	raw := rawResponse(t, l, l.signed(t, "HEAD", "/parts/mp", nil, nil, rootAK, rootSK, time.Now()))
	if strings.Contains(strings.ToLower(raw), "x-amz-mp-parts-count") {
		t.Errorf("HEAD without partNumber sent a parts count:\n%s", raw)
	}
	for _, tc := range []struct {
		key         string
		part        int32
		length      int64
		rng         string
		partsCount  int32
		contentSize string
	}{
		{"mp", 1, 5 << 20, fmt.Sprintf("bytes 0-%d/%d", 5<<20-1, len(data)), 2, ""},
		{"mp", 2, 3, fmt.Sprintf("bytes %d-%d/%d", 5<<20, len(data)-1, len(data)), 2, ""},
		{"single", 1, 10, "bytes 0-9/10", 0, ""},
	} {
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String(tc.key), PartNumber: aws.Int32(tc.part)})
		if err != nil || aws.ToInt64(h.ContentLength) != tc.length || aws.ToString(h.ContentRange) != tc.rng || aws.ToInt32(h.PartsCount) != tc.partsCount {
			t.Errorf("HeadObject %s part %d: %v length %d range %q parts %d", tc.key, tc.part, err, aws.ToInt64(h.ContentLength), aws.ToString(h.ContentRange), aws.ToInt32(h.PartsCount))
		}
		g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String(tc.key), PartNumber: aws.Int32(tc.part)})
		if err != nil {
			t.Fatalf("GetObject %s part %d: %v", tc.key, tc.part, err)
		}
		got, _ := io.ReadAll(g.Body)
		g.Body.Close()
		if int64(len(got)) != tc.length || aws.ToString(g.ContentRange) != tc.rng || aws.ToInt32(g.PartsCount) != tc.partsCount {
			t.Errorf("GetObject %s part %d: %d bytes range %q parts %d", tc.key, tc.part, len(got), aws.ToString(g.ContentRange), aws.ToInt32(g.PartsCount))
		}
		resp, _ := http.DefaultClient.Do(l.signed(t, "HEAD", fmt.Sprintf("/parts/%s?partNumber=%d", tc.key, tc.part), nil, nil, rootAK, rootSK, time.Now()))
		resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent {
			t.Errorf("HEAD %s part %d: status %d, want 206", tc.key, tc.part, resp.StatusCode)
		}
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("single"), PartNumber: aws.Int32(2)}); err == nil {
		t.Error("part 2 of a single-part object")
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: b, Key: aws.String("mp"), PartNumber: aws.Int32(1), Range: aws.String("bytes=0-1")}); errCodeOf(err) != "InvalidRequest" {
		t.Errorf("partNumber and Range together: %v", err)
	}

	ga, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("mp"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}})
	if err != nil || ga.ObjectParts == nil || aws.ToInt32(ga.ObjectParts.TotalPartsCount) != 2 || len(ga.ObjectParts.Parts) != 2 ||
		aws.ToInt64(ga.ObjectParts.Parts[0].Size) != 5<<20 || aws.ToInt32(ga.ObjectParts.Parts[1].PartNumber) != 2 ||
		aws.ToString(ga.ObjectParts.Parts[1].ChecksumCRC32) != aws.ToString(done[1].ChecksumCRC32) || aws.ToBool(ga.ObjectParts.IsTruncated) {
		t.Fatalf("GetObjectAttributes ObjectParts: %v %+v", err, ga.ObjectParts)
	}
	ga, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("mp"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}, MaxParts: aws.Int32(1)})
	if err != nil || len(ga.ObjectParts.Parts) != 1 || !aws.ToBool(ga.ObjectParts.IsTruncated) || aws.ToString(ga.ObjectParts.NextPartNumberMarker) != "1" || aws.ToInt32(ga.ObjectParts.MaxParts) != 1 {
		t.Fatalf("GetObjectAttributes max-parts 1: %v %+v", err, ga.ObjectParts)
	}
	ga, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("mp"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}, PartNumberMarker: aws.String("1")})
	if err != nil || len(ga.ObjectParts.Parts) != 1 || aws.ToInt32(ga.ObjectParts.Parts[0].PartNumber) != 2 || aws.ToBool(ga.ObjectParts.IsTruncated) {
		t.Fatalf("GetObjectAttributes after part 1: %v %+v", err, ga.ObjectParts)
	}
	ga, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: b, Key: aws.String("single"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}})
	if err != nil || ga.ObjectParts != nil {
		t.Fatalf("GetObjectAttributes of a single-part object: %v %+v", err, ga.ObjectParts)
	}
}

// TestLiveCreateBucketOwnership: a bucket that exists is the requester's
// (BucketAlreadyOwnedByYou) or someone else's (BucketAlreadyExists).
func TestLiveCreateBucketOwnership(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	keys := l.fs.Keys()
	a, err := keys.Create(ctx, access.Key{UID: 1234, GID: 1234, Buckets: map[string]access.Permission{"*": access.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := keys.Create(ctx, access.Key{UID: 999, GID: 999, Buckets: map[string]access.Permission{"*": access.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := keys.Create(ctx, access.Key{UID: 77, GID: 77, Buckets: map[string]access.Permission{"mine": access.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	ac, bc, oc := l.sdk(t, a.ID, a.Secret), l.sdk(t, b.ID, b.Secret), l.sdk(t, other.ID, other.Secret)
	mustBucket(t, ac, "owned")
	for _, tc := range []struct {
		who  string
		c    *s3.Client
		code string
	}{
		{"the owner", ac, "BucketAlreadyOwnedByYou"},
		{"the root key", c, "BucketAlreadyOwnedByYou"},
		{"another owner", bc, "BucketAlreadyExists"},
		{"a key that cannot see it", oc, "BucketAlreadyExists"},
	} {
		_, err := tc.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("owned")})
		if errCodeOf(err) != tc.code {
			t.Errorf("CreateBucket of an existing bucket by %s: %v, want %s", tc.who, err, tc.code)
		}
	}
	if _, err := oc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("notmine")}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("CreateBucket outside the key's grants: %v", err)
	}
	if _, err := oc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("mine")}); err != nil {
		t.Errorf("CreateBucket inside the key's grants: %v", err)
	}
	// A file at the top of the namespace takes the name as well.
	f, err := l.fs.Create(ctx, "/topfile", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("topfile")}); errCodeOf(err) != "BucketAlreadyExists" {
		t.Errorf("CreateBucket over a file: %v", err)
	}
}

// TestLiveNewlineKey: a key may hold any UTF-8, a newline included.
func TestLiveNewlineKey(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "newlines")
	for _, k := range []string{"line1\nline2", "trailing\n", "dir\nname/obj", "tab\tand\rreturn"} {
		mustPut(t, c, "newlines", k, []byte(k))
		if got := mustGet(t, c, "newlines", k); string(got) != k {
			t.Errorf("%q read back %q", k, got)
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("newlines"), Key: aws.String(k)}); err != nil {
			t.Errorf("head %q: %v", k, err)
		}
		if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("newlines"), Key: aws.String(k),
			Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}}); err != nil {
			t.Errorf("tag %q: %v", k, err)
		}
	}
	keys, _ := listAll(t, c, "newlines", "", "", 1000, "")
	if want := []string{"dir\nname/obj", "line1\nline2", "tab\tand\rreturn", "trailing\n"}; !slices.Equal(keys, want) {
		t.Errorf("list: %q, want %q", keys, want)
	}
	for _, k := range keys {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("newlines"), Key: aws.String(k)}); err != nil {
			t.Errorf("delete %q: %v", k, err)
		}
	}
	if keys, _ := listAll(t, c, "newlines", "", "", 1000, ""); len(keys) != 0 {
		t.Errorf("left: %q", keys)
	}
}

// TestLiveListBucketsParameters: ListBuckets honours prefix and paging.
func TestLiveListBucketsParameters(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	for _, b := range []string{"app-one", "app-two", "data", "app-three"} {
		mustBucket(t, c, b)
	}
	out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{Prefix: aws.String("app-")})
	if err != nil || len(out.Buckets) != 3 || aws.ToString(out.Prefix) != "app-" {
		t.Fatalf("prefix: %v %+v", err, out)
	}
	var names []string
	p := s3.NewListBucketsPaginator(c, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Buckets) > 1 {
			t.Fatalf("page of %d", len(out.Buckets))
		}
		for _, b := range out.Buckets {
			names = append(names, *b.Name)
		}
	}
	if want := []string{"app-one", "app-three", "app-two", "data"}; !slices.Equal(names, want) {
		t.Fatalf("pages: %q, want %q", names, want)
	}
	if out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{BucketRegion: aws.String("eu-west-1")}); err != nil || len(out.Buckets) != 0 {
		t.Fatalf("another region: %v %+v", err, out)
	}
	if out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{BucketRegion: aws.String("us-east-1")}); err != nil || len(out.Buckets) != 4 {
		t.Fatalf("this region: %v %+v", err, out)
	}
}
