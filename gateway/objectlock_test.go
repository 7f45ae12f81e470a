package gateway

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/posix/fusefs"
)

// TestLiveObjectLock: a bucket made with object lock keeps its versions as
// S3 does: retention and legal holds refuse deletes of a version for good
// (governance yields to the bypass, compliance does not), retention only
// grows, deletes without a version add markers, the default rule applies
// to new objects, versioning cannot be suspended, and through the mount a
// locked file cannot be written.
func TestLiveObjectLock(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	b := aws.String("locked")
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: b, ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: b}); err != nil || v.Status != types.BucketVersioningStatusEnabled {
		t.Fatalf("versioning of a bucket made with object lock: %v %+v", err, v)
	}
	if lc, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: b}); err != nil ||
		lc.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		t.Fatalf("GetObjectLockConfiguration: %v %+v", err, lc)
	}
	if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: b,
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}}); errCodeOf(err) != "InvalidBucketState" {
		t.Fatalf("suspending versioning under object lock: %v", err)
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	put := func(key string, mode types.ObjectLockMode, hold bool) string {
		t.Helper()
		in := &s3.PutObjectInput{Bucket: b, Key: aws.String(key), Body: strings.NewReader("data of " + key)}
		if mode != "" {
			in.ObjectLockMode, in.ObjectLockRetainUntilDate = mode, &until
		}
		if hold {
			in.ObjectLockLegalHoldStatus = types.ObjectLockLegalHoldStatusOn
		}
		out, err := c.PutObject(ctx, in)
		if err != nil {
			t.Fatalf("PUT %s: %v", key, err)
		}
		return aws.ToString(out.VersionId)
	}
	delVersion := func(key, id string, bypass bool) error {
		in := &s3.DeleteObjectInput{Bucket: b, Key: aws.String(key), VersionId: aws.String(id)}
		if bypass {
			in.BypassGovernanceRetention = aws.Bool(true)
		}
		_, err := c.DeleteObject(ctx, in)
		return err
	}

	gov := put("gov", types.ObjectLockModeGovernance, false)
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("gov")})
	if err != nil || head.ObjectLockMode != types.ObjectLockModeGovernance || head.ObjectLockRetainUntilDate == nil || !head.ObjectLockRetainUntilDate.Equal(until) {
		t.Fatalf("HEAD of a retained object: %v %+v", err, head)
	}
	if r, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: b, Key: aws.String("gov")}); err != nil ||
		r.Retention.Mode != types.ObjectLockRetentionModeGovernance || !r.Retention.RetainUntilDate.Equal(until) {
		t.Fatalf("GetObjectRetention: %v %+v", err, r)
	}
	if err := delVersion("gov", gov, false); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("deleting a governance version: %v", err)
	}
	// A delete without a version id is a marker: allowed, the version stays.
	if d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("gov")}); err != nil || !aws.ToBool(d.DeleteMarker) {
		t.Fatalf("a plain delete of a locked object: %v %+v", err, d)
	}
	if _, err := getVersion(t, c, "locked", "gov", gov); err != nil {
		t.Fatalf("the locked version after the marker: %v", err)
	}
	if err := delVersion("gov", gov, true); err != nil {
		t.Fatalf("deleting a governance version with the bypass: %v", err)
	}

	comp := put("comp", types.ObjectLockModeCompliance, false)
	if err := delVersion("comp", comp, true); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("deleting a compliance version with the bypass: %v", err)
	}
	shorter := until.Add(-time.Minute)
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: b, Key: aws.String("comp"), BypassGovernanceRetention: aws.Bool(true),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &shorter}}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("shortening compliance retention: %v", err)
	}
	longer := until.Add(time.Hour)
	if _, err := c.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: b, Key: aws.String("comp"),
		Retention: &types.ObjectLockRetention{Mode: types.ObjectLockRetentionModeCompliance, RetainUntilDate: &longer}}); err != nil {
		t.Fatalf("extending compliance retention: %v", err)
	}

	held := put("held", "", true)
	if h, err := c.GetObjectLegalHold(ctx, &s3.GetObjectLegalHoldInput{Bucket: b, Key: aws.String("held")}); err != nil || h.LegalHold.Status != types.ObjectLockLegalHoldStatusOn {
		t.Fatalf("GetObjectLegalHold: %v %+v", err, h)
	}
	if err := delVersion("held", held, true); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("deleting a version under a legal hold: %v", err)
	}
	if _, err := c.PutObjectLegalHold(ctx, &s3.PutObjectLegalHoldInput{Bucket: b, Key: aws.String("held"),
		LegalHold: &types.ObjectLockLegalHold{Status: types.ObjectLockLegalHoldStatusOff}}); err != nil {
		t.Fatal(err)
	}
	if err := delVersion("held", held, false); err != nil {
		t.Fatalf("deleting after the hold was lifted: %v", err)
	}

	// The bucket's default rule.
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: b, ObjectLockConfiguration: &types.ObjectLockConfiguration{
		ObjectLockEnabled: types.ObjectLockEnabledEnabled, Rule: &types.ObjectLockRule{DefaultRetention: &types.DefaultRetention{Mode: types.ObjectLockRetentionModeGovernance, Days: aws.Int32(1)}}}}); err != nil {
		t.Fatal(err)
	}
	def := put("default", "", false)
	if r, err := c.GetObjectRetention(ctx, &s3.GetObjectRetentionInput{Bucket: b, Key: aws.String("default"), VersionId: aws.String(def)}); err != nil ||
		r.Retention.Mode != types.ObjectLockRetentionModeGovernance || r.Retention.RetainUntilDate.Before(time.Now().Add(23*time.Hour)) {
		t.Fatalf("the default retention: %v %+v", err, r)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); errCodeOf(err) != "BucketNotEmpty" {
		t.Fatalf("DeleteBucket with locked versions: %v", err)
	}

	// A bucket whose versioning is not Enabled cannot take object lock.
	mustBucket(t, c, "nolock")
	if _, err := c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("nolock"),
		ObjectLockConfiguration: &types.ObjectLockConfiguration{ObjectLockEnabled: types.ObjectLockEnabledEnabled}}); errCodeOf(err) != "InvalidBucketState" {
		t.Fatalf("object lock on an unversioned bucket: %v", err)
	}

	// Through the mount: the locked current version cannot be written.
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: the mount half of this test needs the fuse kernel module")
	}
	mnt := t.TempDir()
	m, err := fusefs.Mount(ctx, l.fs, mnt, fusefs.Options{AttrTimeout: -1, EntryTimeout: -1})
	if err != nil {
		t.Skipf("cannot mount FUSE here: %v", err)
	}
	t.Cleanup(func() { m.Unmount() })
	path := filepath.Join(mnt, "locked", "default")
	if err := os.WriteFile(path, []byte("overwritten"), 0o644); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("writing a locked file through the mount: %v, want EPERM", err)
	}
	if err := os.Truncate(path, 0); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("truncating a locked file through the mount: %v, want EPERM", err)
	}
	if err := os.Rename(path, filepath.Join(mnt, "locked", "moved")); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("renaming a locked file through the mount: %v, want EPERM", err)
	}
	if got, err := getVersion(t, c, "locked", "default", def); err != nil || string(got) != "data of default" {
		t.Fatalf("the locked version after the attempts: %q %v", got, err)
	}
}
