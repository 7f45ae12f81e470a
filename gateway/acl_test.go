package gateway

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/access"
)

// TestACLParsing: canned ACLs, grant headers and documents, and what is
// refused among them.
func TestACLParsing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hdr    map[string]string
		grants []aclGrant
		code   string
	}{
		{"none", nil, nil, ""},
		{"private", map[string]string{"X-Amz-Acl": "private"}, nil, ""},
		{"public-read", map[string]string{"X-Amz-Acl": "public-read"}, []aclGrant{{Group: groupAllUsers, Perm: "READ"}}, ""},
		{"public-read-write", map[string]string{"X-Amz-Acl": "public-read-write"}, []aclGrant{{Group: groupAllUsers, Perm: "READ"}, {Group: groupAllUsers, Perm: "WRITE"}}, ""},
		{"authenticated-read", map[string]string{"X-Amz-Acl": "authenticated-read"}, []aclGrant{{Group: groupAuthUsers, Perm: "READ"}}, ""},
		{"bucket-owner-full-control", map[string]string{"X-Amz-Acl": "bucket-owner-full-control"}, nil, ""},
		{"log-delivery-write", map[string]string{"X-Amz-Acl": "log-delivery-write"}, nil, "NotImplemented"},
		{"an unknown canned ACL", map[string]string{"X-Amz-Acl": "world-writable"}, nil, "InvalidArgument"},
		{"grants to keys and a group", map[string]string{"X-Amz-Grant-Read": `id="K1", uri="` + groupAllUsers + `"`, "X-Amz-Grant-Write-Acp": "id=K2"},
			[]aclGrant{{ID: "K1", Perm: "READ"}, {Group: groupAllUsers, Perm: "READ"}, {ID: "K2", Perm: "WRITE_ACP"}}, ""},
		{"a grant by e-mail", map[string]string{"X-Amz-Grant-Read": `emailAddress="a@example.com"`}, nil, "NotImplemented"},
		{"the log delivery group", map[string]string{"X-Amz-Grant-Write": `uri="http://acs.amazonaws.com/groups/s3/LogDelivery"`}, nil, "NotImplemented"},
		{"canned and grants", map[string]string{"X-Amz-Acl": "private", "X-Amz-Grant-Read": "id=K"}, nil, "InvalidRequest"},
		{"a bad grantee", map[string]string{"X-Amz-Grant-Read": "K"}, nil, "InvalidArgument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.hdr {
				h.Set(k, v)
			}
			a, _, err := aclFromHeaders(h)
			if tc.code != "" {
				if toAPIError(err).Code != tc.code || err == nil {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[aclGrant]bool{}
			for _, g := range a.Grants {
				got[g] = true
			}
			if len(got) != len(tc.grants) {
				t.Fatalf("grants %+v, want %+v", a.Grants, tc.grants)
			}
			for _, g := range tc.grants {
				if !got[g] {
					t.Fatalf("grants %+v lack %+v", a.Grants, g)
				}
			}
		})
	}
	doc := func(grants string) []byte {
		return []byte(`<AccessControlPolicy xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><Owner><ID>o</ID></Owner><AccessControlList>` + grants + `</AccessControlList></AccessControlPolicy>`)
	}
	a, err := aclFromBody(doc(`<Grant><Grantee xsi:type="CanonicalUser"><ID>K</ID></Grantee><Permission>WRITE</Permission></Grant>` +
		`<Grant><Grantee xsi:type="Group"><URI>` + groupAuthUsers + `</URI></Grantee><Permission>READ</Permission></Grant>`))
	if err != nil || len(a.Grants) != 2 || a.Grants[0] != (aclGrant{ID: "K", Perm: "WRITE"}) || a.Grants[1] != (aclGrant{Group: groupAuthUsers, Perm: "READ"}) {
		t.Fatalf("document: %v %+v", err, a)
	}
	for body, code := range map[string]string{
		string(doc(`<Grant><Grantee xsi:type="AmazonCustomerByEmail"><EmailAddress>a@b</EmailAddress></Grantee><Permission>READ</Permission></Grant>`)): "NotImplemented",
		string(doc(`<Grant><Grantee xsi:type="CanonicalUser"><ID>K</ID></Grantee><Permission>EVERYTHING</Permission></Grant>`)):                         "MalformedACLError",
		string(doc(`<Grant><Permission>READ</Permission></Grant>`)):                                                                                     "MalformedACLError",
		`<Junk/>`: "MalformedACLError",
	} {
		if _, err := aclFromBody([]byte(body)); toAPIError(err).Code != code || err == nil {
			t.Errorf("%s: %v, want %s", body, err, code)
		}
	}
	all := acl{Grants: []aclGrant{{Group: groupAllUsers, Perm: "READ"}, {Group: groupAuthUsers, Perm: "WRITE"}, {ID: "K", Perm: "FULL_CONTROL"}}}
	for _, tc := range []struct {
		who, perm string
		public    bool
		want      bool
	}{
		{"", "READ", true, true}, {"", "WRITE", true, false}, {"X", "WRITE", true, true}, {"", "READ", false, false},
		{"X", "WRITE", false, false}, {"K", "WRITE_ACP", false, true}, {"X", "READ_ACP", true, false},
	} {
		if got := all.allows(tc.who, tc.perm, tc.public); got != tc.want {
			t.Errorf("allows(%q, %s, public %v) = %v", tc.who, tc.perm, tc.public, got)
		}
	}
	if parseACLRecord([]byte("public-read")).allows("", "READ", true) != true {
		t.Error("the older public-read record")
	}
}

// TestLiveACLs: canned ACLs and grants on buckets and objects, as the SDK
// and the aws CLI set them, decide what anonymous callers and keys without
// grants may do; ownership controls turn ACLs off.
func TestLiveACLs(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	anon := func(method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, l.url+path, strings.NewReader(body))
		if body == "" {
			req.Body = nil
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// public-read-write: anyone lists, reads and writes; what they write is
	// the bucket owner's.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("openb"), ACL: types.BucketCannedACLPublicReadWrite}); err != nil {
		t.Fatal(err)
	}
	if got := anon("PUT", "/openb/dropped", "hi"); got != 200 {
		t.Fatalf("anonymous PUT into public-read-write: %d", got)
	}
	if got := anon("GET", "/openb/dropped", ""); got != 200 {
		t.Errorf("anonymous GET: %d", got)
	}
	if got := anon("GET", "/openb?list-type=2", ""); got != 200 {
		t.Errorf("anonymous list: %d", got)
	}
	if got := anon("PUT", "/openb?acl", ""); got != 403 {
		t.Errorf("anonymous PutBucketAcl: %d", got)
	}
	acl, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: aws.String("openb")})
	if err != nil || len(acl.Grants) != 3 || acl.Grants[1].Grantee.Type != types.TypeGroup || aws.ToString(acl.Grants[1].Grantee.URI) != groupAllUsers {
		t.Fatalf("GetBucketAcl: %v %+v", err, acl)
	}

	// public-read bucket: an object with its own private ACL is not
	// served; made public-read it is.
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("readb"), ACL: types.BucketCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, "readb", "inherits", []byte("1"))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("readb"), Key: aws.String("hidden"), Body: strings.NewReader("2"), ACL: types.ObjectCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("readb"), Key: aws.String("hidden"), ACL: types.ObjectCannedACLPrivate}); err != nil {
		t.Fatal(err)
	}
	if got := anon("GET", "/readb/inherits", ""); got != 200 {
		t.Errorf("an object without an ACL in a public-read bucket: %d", got)
	}
	if got := anon("GET", "/readb/hidden", ""); got != 403 {
		t.Errorf("an object with a private ACL in a public-read bucket: %d", got)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("readb"), Key: aws.String("mp-hidden"), ACL: types.ObjectCannedACLPrivate})
	if err != nil {
		t.Fatal(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("readb"), Key: aws.String("mp-hidden"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("p")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("readb"), Key: aws.String("mp-hidden"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	if got := anon("GET", "/readb/mp-hidden", ""); got != 403 {
		t.Errorf("a multipart object uploaded private in a public-read bucket: %d", got)
	}
	if _, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("readb"), Key: aws.String("hidden"), ACL: types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
	if got := anon("GET", "/readb/hidden", ""); got != 200 {
		t.Errorf("the object made public-read: %d", got)
	}
	if got := anon("PUT", "/readb/x", "no"); got != 403 {
		t.Errorf("anonymous PUT into public-read: %d", got)
	}

	// A private bucket: grants to everyone, to keys and to every key.
	mustBucket(t, c, "privb")
	reader, err := l.fs.Keys().Create(ctx, access.Key{UID: 7000, GID: 7000})
	if err != nil {
		t.Fatal(err)
	}
	rc := l.sdk(t, reader.ID, reader.Secret)
	mustPut(t, c, "privb", "mine", []byte("m"))
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("privb"), Key: aws.String("shared"), Body: strings.NewReader("s"),
		GrantRead: aws.String(`id="` + reader.ID + `"`)}); err != nil {
		t.Fatal(err)
	}
	if string(mustGet(t, rc, "privb", "shared")) != "s" {
		t.Error("a key granted READ on an object reads it")
	}
	if _, err := rc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("privb"), Key: aws.String("mine")}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("the key reads an object it has no grant on: %v", err)
	}
	if _, err := rc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("privb"), Key: aws.String("w"), Body: strings.NewReader("w")}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("the key writes without WRITE: %v", err)
	}
	// A document granting the key WRITE on the bucket.
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("privb"), AccessControlPolicy: &types.AccessControlPolicy{
		Owner: &types.Owner{ID: aws.String(rootAK)}, Grants: []types.Grant{{Permission: types.PermissionWrite,
			Grantee: &types.Grantee{Type: types.TypeCanonicalUser, ID: aws.String(reader.ID)}}}}}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, rc, "privb", "w", []byte("w"))
	if in, err := l.fs.Meta().Resolve(ctx, "/privb/w", true); err != nil || in.UID != 7000 {
		t.Errorf("the key's write: %v uid %d", err, in.UID)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("privb"), ACL: types.BucketCannedACLAuthenticatedRead}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("privb")}); err != nil {
		t.Errorf("authenticated-read: a key lists: %v", err)
	}
	if got := anon("GET", "/privb?list-type=2", ""); got != 403 {
		t.Errorf("authenticated-read: anonymous lists: %d", got)
	}

	// The aws CLI makes an object public; curl reads it.
	if _, err := exec.LookPath("/usr/bin/aws"); err == nil {
		awsCLI(t, l, "s3api", "put-object-acl", "--bucket", "privb", "--key", "mine", "--acl", "public-read")
		out := awsCLI(t, l, "s3api", "get-object-acl", "--bucket", "privb", "--key", "mine")
		if !strings.Contains(out, groupAllUsers) {
			t.Errorf("get-object-acl: %s", out)
		}
		if curl, err := exec.LookPath("curl"); err == nil {
			if out, err := exec.Command(curl, "-sS", "-f", l.url+"/privb/mine").CombinedOutput(); err != nil || string(out) != "m" {
				t.Errorf("curl of a public-read object: %v %s", err, out)
			}
		}
	}

	// BucketOwnerEnforced: ACLs off, the public grant no longer counts, and
	// setting one is refused.
	if _, err := c.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: aws.String("readb"), OwnershipControls: &types.OwnershipControls{
		Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced}}}}); err != nil {
		t.Fatal(err)
	}
	if got := anon("GET", "/readb/inherits", ""); got != 403 {
		t.Errorf("BucketOwnerEnforced: anonymous GET %d", got)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("readb"), ACL: types.BucketCannedACLPublicRead}); errCodeOf(err) != "AccessControlListNotSupported" {
		t.Errorf("BucketOwnerEnforced: PutBucketAcl %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("readb"), Key: aws.String("p"), Body: strings.NewReader("p"), ACL: types.ObjectCannedACLPublicRead}); errCodeOf(err) != "AccessControlListNotSupported" {
		t.Errorf("BucketOwnerEnforced: PutObject public-read %v", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("readb"), Key: aws.String("p"), Body: strings.NewReader("p"), ACL: types.ObjectCannedACLBucketOwnerFullControl}); err != nil {
		t.Errorf("BucketOwnerEnforced: PutObject bucket-owner-full-control %v", err)
	}
	oc, err := c.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: aws.String("readb")})
	if err != nil || len(oc.OwnershipControls.Rules) != 1 || oc.OwnershipControls.Rules[0].ObjectOwnership != types.ObjectOwnershipBucketOwnerEnforced {
		t.Fatalf("GetBucketOwnershipControls: %v %+v", err, oc)
	}
	if _, err := c.DeleteBucketOwnershipControls(ctx, &s3.DeleteBucketOwnershipControlsInput{Bucket: aws.String("readb")}); err != nil {
		t.Fatal(err)
	}
	if got := anon("GET", "/readb/inherits", ""); got != 200 {
		t.Errorf("ACLs back on: anonymous GET %d", got)
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("enforcedb"), ACL: types.BucketCannedACLPublicRead, ObjectOwnership: types.ObjectOwnershipBucketOwnerEnforced})
	if errCodeOf(err) != "InvalidBucketAclWithObjectOwnership" {
		t.Errorf("CreateBucket with an ACL and BucketOwnerEnforced: %v", err)
	}
	// IgnorePublicAcls.
	if _, err := c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String("openb"), PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{IgnorePublicAcls: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	if got := anon("GET", "/openb/dropped", ""); got != 403 {
		t.Errorf("IgnorePublicAcls: anonymous GET %d", got)
	}
}
