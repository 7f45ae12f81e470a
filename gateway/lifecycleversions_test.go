package gateway

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestLifecycleVersionDecisions: which records of a key the version
// actions remove, a row per case.
func TestLifecycleVersionDecisions(t *testing.T) {
	rules, err := parseLifecycle(lcDoc(`
	  <Rule><ID>nc</ID><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays></NoncurrentVersionExpiration></Rule>
	  <Rule><ID>keep1</ID><Filter/><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>2</NoncurrentDays><NewerNoncurrentVersions>1</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>
	  <Rule><ID>markers</ID><Filter><Prefix>m/</Prefix></Filter><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>
	  <Rule><ID>off</ID><Filter/><Status>Disabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*lifecycleRule{}
	for i := range rules {
		byID[rules[i].ID] = &rules[i]
	}
	day := func(d int) time.Time { return time.Date(2026, 12, d, 15, 0, 0, 0, time.UTC) }
	obj := func(id string, since int) keyVersion {
		return keyVersion{id: id, since: day(since), obj: lifecycleObject{key: "k"}}
	}
	dm := func(id, key string) keyVersion {
		return keyVersion{id: id, marker: true, obj: lifecycleObject{key: key}}
	}
	for _, tc := range []struct {
		name, rule string
		recs       []keyVersion
		current    bool
		now        time.Time
		want       []string
	}{
		{"younger than the days stays", "nc", []keyVersion{obj("b", 2), obj("a", 1)}, true, day(3), nil},
		{"at the midnight after the days it goes", "nc", []keyVersion{obj("b", 2), obj("a", 1)}, true, day(4), []string{"a"}},
		{"all old ones go", "nc", []keyVersion{obj("b", 2), obj("a", 1)}, true, day(9), []string{"b", "a"}},
		{"the newest noncurrent is kept", "keep1", []keyVersion{obj("c", 3), obj("b", 2), obj("a", 1)}, true, day(20), []string{"b", "a"}},
		{"markers do not count as kept versions", "keep1", []keyVersion{dm("m", "k"), obj("b", 2), obj("a", 1)}, false, day(20), []string{"a"}},
		{"a lone marker goes", "markers", []keyVersion{dm("m", "m/k")}, false, day(1), []string{"m"}},
		{"a marker over a version stays", "markers", []keyVersion{dm("m", "m/k"), {id: "a", obj: lifecycleObject{key: "m/k"}}}, false, day(1), nil},
		{"the marker of a key with a current version stays", "markers", []keyVersion{dm("m", "m/k")}, true, day(1), nil},
		{"a marker outside the prefix stays", "markers", []keyVersion{dm("m", "x/k")}, false, day(1), nil},
		{"a disabled rule removes nothing", "off", []keyVersion{obj("a", 1)}, true, day(30), nil},
	} {
		if got := byID[tc.rule].expiredVersions(tc.recs, tc.current, tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLiveLifecycleVersions: a versioned bucket's noncurrent versions
// expire, the newest one kept, and a marker that is all a key has left
// goes, under a clock the test moves.
func TestLiveLifecycleVersions(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "lcver")
	enableVersioning(t, c, "lcver", types.BucketVersioningStatusEnabled)
	for i := 0; i < 3; i++ {
		mustPut(t, c, "lcver", "k", []byte(fmt.Sprint(i)))
	}
	mustPut(t, c, "lcver", "gone", []byte("x"))
	d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lcver"), Key: aws.String("gone")})
	if err != nil {
		t.Fatal(err)
	}
	vs := versionsOf(t, c, "lcver", "gone")
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lcver"), Key: aws.String("gone"), VersionId: aws.String(vs[1])}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lcver"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{
			{ID: aws.String("nc"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
				NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(1), NewerNoncurrentVersions: aws.Int32(1)}},
			{ID: aws.String("dm"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
				Expiration: &types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)}},
		}}}); err != nil {
		t.Fatal(err)
	}
	before := versionsOf(t, c, "lcver", "k")
	run, err := l.gw.RunLifecycle(ctx, time.Now())
	if err != nil || run.Noncurrent != 0 || run.Markers != 1 || run.Failures != 0 {
		t.Fatalf("a pass now: %v %+v (want only the lone marker %s removed)", err, run, aws.ToString(d.VersionId))
	}
	if got := versionsOf(t, c, "lcver", "gone"); len(got) != 0 {
		t.Fatalf("gone's versions after the pass: %v", got)
	}
	run, err = l.gw.RunLifecycle(ctx, time.Now().Add(3*24*time.Hour))
	if err != nil || run.Noncurrent != 1 || run.Failures != 0 {
		t.Fatalf("a pass in 3 days: %v %+v", err, run)
	}
	if got := versionsOf(t, c, "lcver", "k"); !slices.Equal(got, before[:2]) {
		t.Fatalf("k's versions: %v, want the current and the newest noncurrent of %v", got, before)
	}
}
