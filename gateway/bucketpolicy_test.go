package gateway

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/access"
)

// TestBucketPolicyRefused: what flyfs could not honour is refused when
// the policy is put, naming it.
func TestBucketPolicyRefused(t *testing.T) {
	stmt := func(s string) string { return `{"Version": "2012-10-17", "Statement": [` + s + `]}` }
	for _, tc := range []struct{ name, doc, msg string }{
		{"not JSON", `Version`, "JSON object"},
		{"an unknown top-level field", `{"Version": "2012-10-17", "Statment": []}`, `"Statment"`},
		{"no statement", `{"Version": "2012-10-17"}`, "Statement"},
		{"a wrong version", `{"Version": "2020-01-01", "Statement": []}`, "Version"},
		{"no effect", stmt(`{"Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}`), "Effect"},
		{"no principal", stmt(`{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}`), "Principal"},
		{"NotPrincipal", stmt(`{"Effect": "Deny", "NotPrincipal": {"AWS": "k"}, "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"}`), "NotPrincipal"},
		{"a service principal", stmt(`{"Effect": "Allow", "Principal": {"Service": "logging.s3.amazonaws.com"}, "Action": "s3:PutObject", "Resource": "arn:aws:s3:::b/*"}`), "Service"},
		{"an account root", stmt(`{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "s3:*", "Resource": "arn:aws:s3:::b/*"}`), "user/<key id>"},
		{"an action of another service", stmt(`{"Effect": "Allow", "Principal": "*", "Action": "iam:PassRole", "Resource": "arn:aws:s3:::b/*"}`), "invalid action"},
		{"Action and NotAction", stmt(`{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "NotAction": "s3:PutObject", "Resource": "arn:aws:s3:::b/*"}`), "one of Action"},
		{"another bucket", stmt(`{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other/*"}`), "invalid resource"},
		{"not an S3 ARN", stmt(`{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "b/*"}`), "invalid resource"},
		{"an unknown operator", stmt(`{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*", "Condition": {"ArnLike": {"aws:SourceArn": "x"}}}`), "ArnLike"},
		{"ForAnyValue", stmt(`{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*", "Condition": {"ForAnyValue:StringEquals": {"s3:prefix": "x"}}}`), "ForAnyValue"},
		{"an unknown condition key", stmt(`{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*", "Condition": {"StringEquals": {"aws:SourceVpce": "vpce-1"}}}`), "aws:SourceVpce"},
		{"a bad address", stmt(`{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*", "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/33"}}}`), "CIDR"},
		{"a bad bool", stmt(`{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::b/*", "Condition": {"Bool": {"aws:SecureTransport": "no"}}}`), "true or false"},
		{"a bad number", stmt(`{"Effect": "Deny", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b", "Condition": {"NumericGreaterThan": {"s3:max-keys": "ten"}}}`), "numbers"},
		{"an unknown statement field", stmt(`{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*", "Conditions": {}}`), `"Conditions"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseBucketPolicy([]byte(tc.doc), "b")
			if ae := toAPIError(err); err == nil || ae.Code != "MalformedPolicy" || !strings.Contains(ae.Message, tc.msg) {
				t.Fatalf("got %v, want MalformedPolicy naming %q", err, tc.msg)
			}
		})
	}
}

// TestBucketPolicyDecide: one policy, request by request.
func TestBucketPolicyDecide(t *testing.T) {
	const doc = `{"Version": "2012-10-17", "Statement": [
	  {"Sid": "public prefix", "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::b/public/*"},
	  {"Sid": "list public", "Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b",
	   "Condition": {"StringLike": {"s3:prefix": "public/*"}}},
	  {"Sid": "writer", "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::000000000000:user/WRITER", "OTHER"]}, "Action": "s3:Put*", "Resource": "arn:aws:s3:::b/in/*"},
	  {"Sid": "protect", "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::b/keep/*"},
	  {"Sid": "tls only for writes", "Effect": "Deny", "Principal": "*", "NotAction": ["s3:Get*", "s3:List*"], "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"],
	   "Condition": {"Bool": {"aws:SecureTransport": "false"}, "NotIpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1"]}}},
	  {"Sid": "classified", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*",
	   "Condition": {"StringEquals": {"s3:ExistingObjectTag/Class": "secret"}}},
	  {"Sid": "no big listings", "Effect": "Deny", "Principal": "*", "Action": "s3:ListBucket", "NotResource": "arn:aws:s3:::b/*",
	   "Condition": {"NumericGreaterThan": {"s3:max-keys": 500}}},
	  {"Sid": "lister", "Effect": "Allow", "Principal": {"AWS": "LISTER"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b",
	   "Condition": {"StringEqualsIfExists": {"s3:delimiter": "/"}}},
	  {"Sid": "agent", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/bots/*",
	   "Condition": {"StringNotEquals": {"aws:UserAgent": "good-bot"}}},
	  {"Sid": "until", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/timed/*",
	   "Condition": {"DateLessThan": {"aws:CurrentTime": "2027-01-01T00:00:00Z"}, "Null": {"aws:Referer": "true"}}}
	]}`
	p, err := parseBucketPolicy([]byte(doc), "b")
	if err != nil {
		t.Fatal(err)
	}
	if !p.public() {
		t.Error("a policy allowing * is public")
	}
	ctx := func(kv ...string) func(string) ([]string, bool) {
		return func(k string) ([]string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return []string{kv[i+1]}, true
				}
			}
			return nil, false
		}
	}
	local := []string{"aws:sourceip", "127.0.0.1", "aws:securetransport", "false", "aws:currenttime", "2026-12-01T00:00:00Z"}
	remote := []string{"aws:sourceip", "203.0.113.9", "aws:securetransport", "false"}
	remoteTLS := []string{"aws:sourceip", "203.0.113.9", "aws:securetransport", "true"}
	with := func(a []string, kv ...string) []string { return append(append([]string{}, kv...), a...) }
	for _, tc := range []struct {
		name          string
		who, act, res string
		vals          []string
		want          policyEffect
	}{
		{"anonymous reads the public prefix", "", "s3:GetObject", "b/public/a.txt", local, policyAllow},
		{"but nothing else", "", "s3:GetObject", "b/private/a.txt", local, policyNone},
		{"HEAD is GetObject too", "", actionOf("HeadObject"), "b/public/a.txt", local, policyAllow},
		{"lists the public prefix", "", actionOf("ListObjectsV2"), "b", with(local, "s3:prefix", "public/"), policyAllow},
		{"not another prefix", "", "s3:ListBucket", "b", with(local, "s3:prefix", "private/"), policyNone},
		{"nor without one", "", "s3:ListBucket", "b", local, policyNone},
		{"the writer by its ARN", "WRITER", "s3:PutObject", "b/in/x", local, policyAllow},
		{"the writer by its id", "OTHER", "s3:PutObjectTagging", "b/in/x", local, policyAllow},
		{"actions compare without case", "OTHER", "s3:putobject", "b/in/x", local, policyAllow},
		{"another key is not the writer", "THIRD", "s3:PutObject", "b/in/x", local, policyNone},
		{"anonymous is not the writer", "", "s3:PutObject", "b/in/x", local, policyNone},
		{"the writer outside its prefix", "WRITER", "s3:PutObject", "b/out/x", local, policyNone},
		{"a Deny wins for everyone", "WRITER", "s3:DeleteObject", "b/keep/x", local, policyDeny},
		{"a Deny's resource is a pattern", "WRITER", "s3:DeleteObject", "b/keeper", local, policyNone},
		{"plain HTTP from afar cannot write", "WRITER", "s3:PutObject", "b/in/x", remote, policyDeny},
		{"TLS from afar can", "WRITER", "s3:PutObject", "b/in/x", remoteTLS, policyAllow},
		{"plain HTTP from afar can read (NotAction)", "", "s3:GetObject", "b/public/x", remote, policyAllow},
		{"a secret-tagged object", "", "s3:GetObject", "b/public/x", with(local, "s3:existingobjecttag/Class", "secret"), policyDeny},
		{"tag values compare exactly", "", "s3:GetObject", "b/public/x", with(local, "s3:existingobjecttag/Class", "Secret"), policyAllow},
		{"a big listing", "WRITER", "s3:ListBucket", "b", with(local, "s3:max-keys", "1000"), policyDeny},
		{"a small one", "WRITER", "s3:ListBucket", "b", with(local, "s3:max-keys", "100"), policyNone},
		{"without max-keys", "WRITER", "s3:ListBucket", "b", local, policyNone},
		{"IfExists: without the key", "LISTER", "s3:ListBucket", "b", local, policyAllow},
		{"IfExists: with its value", "LISTER", "s3:ListBucket", "b", with(local, "s3:delimiter", "/"), policyAllow},
		{"IfExists: with another", "LISTER", "s3:ListBucket", "b", with(local, "s3:delimiter", "-"), policyNone},
		{"a negated condition holds without its key", "", "s3:GetObject", "b/bots/x", local, policyDeny},
		{"and fails with the value", "", "s3:GetObject", "b/bots/x", with(local, "aws:useragent", "good-bot"), policyNone},
		{"before the date, without a referer", "", "s3:GetObject", "b/timed/x", local, policyAllow},
		{"with a referer", "", "s3:GetObject", "b/timed/x", with(local, "aws:referer", "http://x"), policyNone},
		{"after the date", "", "s3:GetObject", "b/timed/x", []string{"aws:sourceip", "127.0.0.1", "aws:currenttime", "2027-06-01T00:00:00Z"}, policyNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := p.decide(policyRequest{principal: tc.who, action: tc.act, resource: tc.res, value: ctx(tc.vals...)})
			if got != tc.want {
				t.Fatalf("%d, want %d", got, tc.want)
			}
		})
	}
	for doc, public := range map[string]bool{
		`{"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*", "Condition": {"IpAddress": {"aws:SourceIp": "10.1.0.0/16"}}}}`: false,
		`{"Statement": {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*", "Condition": {"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}}}`:   true,
		`{"Statement": {"Effect": "Allow", "Principal": {"AWS": "K"}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}}`:                                                     false,
		`{"Statement": {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}}`:                                                               false,
	} {
		p, err := parseBucketPolicy([]byte(doc), "b")
		if err != nil || p.public() != public {
			t.Errorf("%s: %v, public %v, want %v", doc, err, p != nil && p.public(), public)
		}
	}
	for pat, s := range map[string]string{"a*c": "abbbc", "a?c": "abc", "*": "", "a*": "a", "*b*": "abc", "a*b*c": "aXbYc"} {
		if !wildMatch(pat, s, false) {
			t.Errorf("%q does not match %q", pat, s)
		}
	}
	for pat, s := range map[string]string{"a*c": "abcd", "a?c": "ac", "a": "A", "*b": "bc"} {
		if wildMatch(pat, s, false) {
			t.Errorf("%q matches %q", pat, s)
		}
	}
}

// TestLiveBucketPolicy: a policy put with the aws CLI makes one prefix
// public-read (curl reads it, nothing else), lets a key with no grant
// write a prefix, and protects another from a key that has every grant;
// the public access block overrides it; deleting it ends all of that at
// once.
func TestLiveBucketPolicy(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "pol")
	for _, k := range []string{"public/a.txt", "private/b.txt", "keep/c.txt"} {
		mustPut(t, c, "pol", k, []byte("data of "+k))
	}
	writer, err := l.fs.Keys().Create(ctx, access.Key{UID: 4321, GID: 4321})
	if err != nil {
		t.Fatal(err)
	}
	full, err := l.fs.Keys().Create(ctx, access.Key{Buckets: map[string]access.Permission{"pol": access.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	doc := `{"Version": "2012-10-17", "Statement": [
	  {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::pol/public/*"},
	  {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::pol", "Condition": {"StringEquals": {"s3:prefix": "public/"}}},
	  {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::000000000000:user/` + writer.ID + `"}, "Action": ["s3:PutObject", "s3:GetObject"], "Resource": "arn:aws:s3:::pol/in/*"},
	  {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::pol/keep/*"}]}`
	if _, err := exec.LookPath("/usr/bin/aws"); err == nil {
		awsCLI(t, l, "s3api", "put-bucket-policy", "--bucket", "pol", "--policy", doc)
		if out := awsCLI(t, l, "s3api", "get-bucket-policy-status", "--bucket", "pol"); !strings.Contains(out, `"IsPublic": true`) {
			t.Errorf("get-bucket-policy-status: %s", out)
		}
	} else {
		if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("pol"), Policy: aws.String(doc)}); err != nil {
			t.Fatal(err)
		}
		t.Log("/usr/bin/aws is not installed (Debian package awscli): the policy was put with the SDK")
	}
	got, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("pol")})
	if err != nil || aws.ToString(got.Policy) != doc {
		t.Fatalf("GetBucketPolicy: %v %q", err, aws.ToString(got.Policy))
	}
	anon := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, l.url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-sS", "-f", l.url+"/pol/public/a.txt").CombinedOutput()
		if err != nil || string(out) != "data of public/a.txt" {
			t.Errorf("curl of the public prefix: %v %s", err, out)
		}
		if err := exec.Command(curl, "-sS", "-f", "-o", "/dev/null", l.url+"/pol/private/b.txt").Run(); err == nil {
			t.Error("curl read a private object")
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/pol/public/a.txt", 200},
		{"HEAD", "/pol/public/a.txt", 200},
		{"GET", "/pol/private/b.txt", 403},
		{"GET", "/pol?list-type=2&prefix=public/", 200},
		{"GET", "/pol?list-type=2&prefix=private/", 403},
		{"GET", "/pol?list-type=2", 403},
		{"PUT", "/pol/public/new", 403},
		{"DELETE", "/pol/public/a.txt", 403},
		{"GET", "/pol?policy", 403},
	} {
		if got, body := anon(tc.method, tc.path); got != tc.status {
			t.Errorf("anonymous %s %s: %d, want %d: %s", tc.method, tc.path, got, tc.status, body)
		}
	}

	// A key with no grant writes and reads its prefix, and only it; what it
	// creates is its own.
	wc := l.sdk(t, writer.ID, writer.Secret)
	mustPut(t, wc, "pol", "in/w.txt", []byte("w"))
	if string(mustGet(t, wc, "pol", "in/w.txt")) != "w" {
		t.Error("the writer reads back what it wrote")
	}
	if _, err := wc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pol"), Key: aws.String("out/w.txt"), Body: strings.NewReader("w")}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("the writer outside its prefix: %v", err)
	}
	if _, err := wc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("pol")}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("the writer lists the bucket: %v", err)
	}
	if in, err := l.fs.Meta().Resolve(ctx, "/pol/in/w.txt", true); err != nil || in.UID != 4321 {
		t.Errorf("the writer's object: %v uid %d, want 4321", err, in.UID)
	}

	// The Deny holds against every grant, one key or many.
	fc := l.sdk(t, full.ID, full.Secret)
	if _, err := fc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("pol"), Key: aws.String("keep/c.txt")}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("DeleteObject of a protected key: %v", err)
	}
	del, err := fc.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("pol"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("keep/c.txt")}, {Key: aws.String("private/b.txt")}}}})
	if err != nil || len(del.Errors) != 1 || aws.ToString(del.Errors[0].Key) != "keep/c.txt" || aws.ToString(del.Errors[0].Code) != "AccessDenied" ||
		len(del.Deleted) != 1 || aws.ToString(del.Deleted[0].Key) != "private/b.txt" {
		t.Fatalf("DeleteObjects: %v %+v", err, del)
	}
	if string(mustGet(t, c, "pol", "keep/c.txt")) != "data of keep/c.txt" {
		t.Fatal("a protected object was deleted")
	}

	// The public access block: RestrictPublicBuckets ends anonymous access
	// through the policy; BlockPublicPolicy refuses a public one.
	pab := func(restrict, block bool) {
		t.Helper()
		if _, err := c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String("pol"), PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{
			RestrictPublicBuckets: aws.Bool(restrict), BlockPublicPolicy: aws.Bool(block), BlockPublicAcls: aws.Bool(block), IgnorePublicAcls: aws.Bool(restrict)}}); err != nil {
			t.Fatal(err)
		}
	}
	pab(true, true)
	if got, _ := anon("GET", "/pol/public/a.txt"); got != 403 {
		t.Errorf("RestrictPublicBuckets: anonymous GET %d", got)
	}
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("pol"), Policy: aws.String(doc)}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("BlockPublicPolicy: %v", err)
	}
	if _, err := c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("pol"), ACL: types.BucketCannedACLPublicRead}); errCodeOf(err) != "AccessDenied" {
		t.Errorf("BlockPublicAcls: %v", err)
	}
	out, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("pol")})
	if err != nil || !aws.ToBool(out.PublicAccessBlockConfiguration.RestrictPublicBuckets) || !aws.ToBool(out.PublicAccessBlockConfiguration.BlockPublicPolicy) {
		t.Fatalf("GetPublicAccessBlock: %v %+v", err, out)
	}
	if _, err := c.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String("pol")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := anon("GET", "/pol/public/a.txt"); got != 200 {
		t.Errorf("without the block: anonymous GET %d", got)
	}

	// Bad documents are refused and change nothing.
	if _, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("pol"), Policy: aws.String(`{"Statement": [{"Effect": "Deny", "NotPrincipal": {"AWS": "x"}, "Action": "s3:*", "Resource": "arn:aws:s3:::pol/*"}]}`)}); errCodeOf(err) != "MalformedPolicy" {
		t.Errorf("NotPrincipal: %v", err)
	}
	if got, _ := anon("GET", "/pol/public/a.txt"); got != 200 {
		t.Errorf("after a refused policy: anonymous GET %d", got)
	}

	// Deleted: anonymous access ends at once on this gateway, and the
	// protected key can be deleted by a key with the grant.
	if _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("pol")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := anon("GET", "/pol/public/a.txt"); got != 403 {
		t.Errorf("after DeleteBucketPolicy: anonymous GET %d", got)
	}
	if _, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("pol")}); errCodeOf(err) != "NoSuchBucketPolicy" {
		t.Errorf("GetBucketPolicy after the delete: %v", err)
	}
	if _, err := fc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("pol"), Key: aws.String("keep/c.txt")}); err != nil {
		t.Errorf("DeleteObject without the policy: %v", err)
	}
}

// TestLiveBucketPolicyAnonymousWrite: a policy may let anyone upload into
// a drop box; what they upload belongs to the bucket's owner, not root.
func TestLiveBucketPolicyAnonymousWrite(t *testing.T) {
	l := startGW(t)
	owner, err := l.fs.Keys().Create(context.Background(), access.Key{UID: 2000, GID: 3000, Buckets: map[string]access.Permission{"*": access.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	oc := l.sdk(t, owner.ID, owner.Secret)
	ctx := context.Background()
	mustBucket(t, oc, "drop")
	doc := `{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::drop/inbox/*"}]}`
	if _, err := oc.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("drop"), Policy: aws.String(doc)}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", l.url+"/drop/inbox/hello.txt", strings.NewReader("hi"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("anonymous PUT: %d", resp.StatusCode)
	}
	in, err := l.fs.Meta().Resolve(ctx, "/drop/inbox/hello.txt", true)
	if err != nil || in.UID != 2000 || in.GID != 3000 {
		t.Fatalf("the anonymous upload: %v owned by %d:%d, want the bucket's 2000:3000", err, in.UID, in.GID)
	}
	if string(mustGet(t, oc, "drop", "inbox/hello.txt")) != "hi" {
		t.Fatal("the upload reads back")
	}
}
