package gateway

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/e2e/harness"
)

// TestLiveSSES3: on a cluster whose storage encrypts at rest, objects say
// AES256, writes asking for it are taken (the aws CLI's --sse AES256
// too), the bucket encryption calls answer AES256, and the disks hold no
// byte of the content in plain; SSE-KMS and SSE-C stay refused. On a plain
// cluster (every other test) the header is refused.
func TestLiveSSES3(t *testing.T) {
	key := bytes.Repeat([]byte{0x5a}, 32)
	l := startGWOn(t, harness.ClusterConfig{Nodes: 1, Replicas: 1, Chains: 4, EncryptionKey: key}, nil)
	c := l.root(t)
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for !l.gw.encryptedAtRest(ctx) {
		if time.Now().After(deadline) {
			t.Fatal("the gateway never learned that the disks encrypt")
		}
		l.gw.atRest.mu.Lock()
		l.gw.atRest.exp = time.Time{}
		l.gw.atRest.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	mustBucket(t, c, "enc")
	marker := []byte(strings.Repeat("sse-s3-plaintext-marker ", 8000))
	out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("enc"), Key: aws.String("doc"), Body: bytes.NewReader(marker),
		ServerSideEncryption: types.ServerSideEncryptionAes256})
	if err != nil || out.ServerSideEncryption != types.ServerSideEncryptionAes256 {
		t.Fatalf("PUT with AES256: %v %+v", err, out)
	}
	mustPut(t, c, "enc", "plainput", marker) // no header: encrypted all the same
	for _, k := range []string{"doc", "plainput"} {
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("enc"), Key: aws.String(k)})
		if err != nil || h.ServerSideEncryption != types.ServerSideEncryptionAes256 {
			t.Errorf("HEAD %s: %v %+v", k, err, h.ServerSideEncryption)
		}
		if got := mustGet(t, c, "enc", k); !bytes.Equal(got, marker) {
			t.Fatalf("GET %s: the content does not read back", k)
		}
	}
	for name, in := range map[string]*s3.PutObjectInput{
		"SSE-KMS": {Bucket: aws.String("enc"), Key: aws.String("kms"), Body: strings.NewReader("x"), ServerSideEncryption: types.ServerSideEncryptionAwsKms},
		"SSE-C": {Bucket: aws.String("enc"), Key: aws.String("ssec"), Body: strings.NewReader("x"), SSECustomerAlgorithm: aws.String("AES256"),
			SSECustomerKey: aws.String("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="), SSECustomerKeyMD5: aws.String("zZ5FnqbaYBDbtJ9LK+M6YA==")},
	} {
		if _, err := c.PutObject(ctx, in); errCodeOf(err) != "NotImplemented" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String("enc"), ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAes256}}}}}); err != nil {
		t.Fatalf("PutBucketEncryption AES256: %v", err)
	}
	ge, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("enc")})
	if err != nil || len(ge.ServerSideEncryptionConfiguration.Rules) != 1 ||
		ge.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm != types.ServerSideEncryptionAes256 {
		t.Fatalf("GetBucketEncryption: %v %+v", err, ge)
	}
	if _, err := c.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String("enc"), ServerSideEncryptionConfiguration: &types.ServerSideEncryptionConfiguration{
		Rules: []types.ServerSideEncryptionRule{{ApplyServerSideEncryptionByDefault: &types.ServerSideEncryptionByDefault{SSEAlgorithm: types.ServerSideEncryptionAwsKms}}}}}); errCodeOf(err) != "NotImplemented" {
		t.Errorf("PutBucketEncryption aws:kms: %v", err)
	}
	if _, err := os.Stat("/usr/bin/aws"); err == nil {
		src := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(src, marker, 0o600); err != nil {
			t.Fatal(err)
		}
		awsCLI(t, l, "s3", "cp", "--sse", "AES256", src, "s3://enc/cli")
		if got := mustGet(t, c, "enc", "cli"); !bytes.Equal(got, marker) {
			t.Fatal("aws s3 cp --sse AES256: the object does not read back")
		}
	}
	// Nothing of the content lies on the disk in plain.
	dir := l.c.C.Node(0).Dir
	found := ""
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("sse-s3-plaintext-marker")) {
			found = p
		}
		return nil
	})
	if found != "" {
		t.Fatalf("%s holds the content in plain", found)
	}
}

// TestLiveSSERefusedWithoutEncryption: a plain cluster refuses AES256
// rather than promise it, and has no bucket encryption.
func TestLiveSSERefusedWithoutEncryption(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "plainenc")
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("plainenc"), Key: aws.String("k"), Body: strings.NewReader("x"),
		ServerSideEncryption: types.ServerSideEncryptionAes256})
	if errCodeOf(err) != "NotImplemented" || !strings.Contains(err.Error(), "does not encrypt at rest") {
		t.Fatalf("AES256 on a plain cluster: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("plainenc"), Key: aws.String("k")}); errCodeOf(err) != "NotFound" {
		t.Fatalf("the refused PUT stored the object: %v", err)
	}
	if _, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("plainenc")}); errCodeOf(err) != "ServerSideEncryptionConfigurationNotFoundError" {
		t.Fatalf("GetBucketEncryption on a plain cluster: %v", err)
	}
	mustPut(t, c, "plainenc", "k", []byte("x"))
	if h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("plainenc"), Key: aws.String("k")}); err != nil || h.ServerSideEncryption != "" {
		t.Fatalf("HEAD on a plain cluster names an encryption: %v %q", err, h.ServerSideEncryption)
	}
}
