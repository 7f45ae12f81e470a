package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func lcDoc(rules string) []byte {
	return []byte(`<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + rules + `</LifecycleConfiguration>`)
}

// TestLifecycleRefused: configurations S3 refuses, and the actions flyfs
// cannot take, are refused before anything is stored.
func TestLifecycleRefused(t *testing.T) {
	exp := `<Expiration><Days>1</Days></Expiration>`
	for _, tc := range []struct{ name, rules, code, msg string }{
		{"no rule", ``, "MalformedXML", "at least one rule"},
		{"no status", `<Rule><Filter/>` + exp + `</Rule>`, "MalformedXML", "Status"},
		{"no action", `<Rule><Filter/><Status>Enabled</Status></Rule>`, "InvalidRequest", "At least one action"},
		{"zero days", `<Rule><Filter/><Status>Enabled</Status><Expiration><Days>0</Days></Expiration></Rule>`, "InvalidArgument", "positive"},
		{"days and date", `<Rule><Filter/><Status>Enabled</Status><Expiration><Days>1</Days><Date>2027-01-01T00:00:00Z</Date></Expiration></Rule>`, "MalformedXML", "one of Days"},
		{"a date not at midnight", `<Rule><Filter/><Status>Enabled</Status><Expiration><Date>2027-01-01T10:00:00Z</Date></Expiration></Rule>`, "InvalidArgument", "midnight"},
		{"filter and prefix", `<Rule><Filter/><Prefix>a</Prefix><Status>Enabled</Status>` + exp + `</Rule>`, "MalformedXML", "not both"},
		{"two filter conditions", `<Rule><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>` + exp + `</Rule>`, "MalformedXML", "And"},
		{"abort with tags", `<Rule><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`, "InvalidRequest", "Tags"},
		{"a transition", `<Rule><Filter/><Status>Enabled</Status><Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "NotImplemented", "storage class"},
		{"an unknown element", `<Rule><Filter/><Status>Enabled</Status>` + exp + `<Frobnicate/></Rule>`, "MalformedXML", "Frobnicate"},
		{"two rules with one id", `<Rule><ID>a</ID><Filter/><Status>Enabled</Status>` + exp + `</Rule><Rule><ID>a</ID><Filter/><Status>Enabled</Status>` + exp + `</Rule>`, "InvalidArgument", "unique"},
		{"sizes reversed", `<Rule><Filter><And><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>5</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>` + exp + `</Rule>`, "InvalidArgument", "greater"},
		{"not XML", `<Rule>`, "MalformedXML", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseLifecycle(lcDoc(tc.rules))
			if ae := toAPIError(err); err == nil || ae.Code != tc.code || !strings.Contains(ae.Message, tc.msg) {
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
}

// TestLifecycleDecisions: S3's expiry arithmetic and the filters.
func TestLifecycleDecisions(t *testing.T) {
	rules, err := parseLifecycle(lcDoc(`
	  <Rule><ID>days</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>
	  <Rule><ID>date</ID><Prefix>old/</Prefix><Status>Enabled</Status><Expiration><Date>2027-01-01T00:00:00Z</Date></Expiration></Rule>
	  <Rule><ID>and</ID><Filter><And><Prefix>d/</Prefix><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value>2</Value></Tag>
	    <ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>100</ObjectSizeLessThan></And></Filter>
	    <Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>
	  <Rule><ID>off</ID><Filter/><Status>Disabled</Status><Expiration><Days>1</Days></Expiration><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>
	  <Rule><ID>abort</ID><Filter><Prefix>up/</Prefix></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*lifecycleRule{}
	for i := range rules {
		byID[rules[i].ID] = &rules[i]
	}
	mod := time.Date(2026, 12, 1, 15, 30, 0, 0, time.UTC)
	if at, ok := byID["days"].expiresAt(mod); !ok || !at.Equal(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("2 days after 15:30: %v, want the midnight after: Dec 4", at)
	}
	if at, _ := byID["days"].expiresAt(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); !at.Equal(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("2 days after midnight: %v", at)
	}
	if at, ok := byID["date"].expiresAt(mod); !ok || !at.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("date: %v", at)
	}
	if _, ok := byID["off"].expiresAt(mod); ok {
		t.Error("a disabled rule expires")
	}
	if _, ok := byID["off"].abortsAt(mod); ok {
		t.Error("a disabled rule aborts")
	}
	if at, ok := byID["abort"].abortsAt(mod); !ok || !at.Equal(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("abort: %v", at)
	}
	if _, ok := byID["abort"].expiresAt(mod); ok {
		t.Error("an abort-only rule expires objects")
	}
	tags := func(kv ...string) func() []tag {
		return func() []tag {
			var out []tag
			for i := 0; i < len(kv); i += 2 {
				out = append(out, tag{Key: kv[i], Value: kv[i+1]})
			}
			return out
		}
	}
	for _, tc := range []struct {
		rule string
		o    lifecycleObject
		want bool
	}{
		{"days", lifecycleObject{key: "logs/a"}, true},
		{"days", lifecycleObject{key: "log/a"}, false},
		{"date", lifecycleObject{key: "old/x"}, true},
		{"and", lifecycleObject{key: "d/x", size: 50, tags: tags("a", "1", "b", "2", "c", "3")}, true},
		{"and", lifecycleObject{key: "d/x", size: 50, tags: tags("a", "1")}, false},
		{"and", lifecycleObject{key: "d/x", size: 50, tags: tags("a", "1", "b", "3")}, false},
		{"and", lifecycleObject{key: "d/x", size: 10, tags: tags("a", "1", "b", "2")}, false},
		{"and", lifecycleObject{key: "d/x", size: 100, tags: tags("a", "1", "b", "2")}, false},
		{"and", lifecycleObject{key: "e/x", size: 50, tags: tags("a", "1", "b", "2")}, false},
		{"off", lifecycleObject{key: "anything"}, true},
	} {
		if got := byID[tc.rule].matches(tc.o); got != tc.want {
			t.Errorf("rule %s on %+v: %v, want %v", tc.rule, tc.o.key, got, tc.want)
		}
	}
}

// TestLiveLifecycle: rules put with the aws CLI expire objects by prefix
// and tag and abort an upload, under a clock the test moves; a disabled
// rule, untagged objects and objects outside the prefixes stay.
func TestLiveLifecycle(t *testing.T) {
	l := startGWWith(t, func(c *Config) { c.LifecycleInterval = -1 })
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "lcb")
	for _, k := range []string{"logs/a", "logs/deep/b", "data/tagged", "data/plain", "keep/z", "top"} {
		mustPut(t, c, "lcb", k, []byte(k))
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("lcb"), Key: aws.String("data/tagged"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("temp"), Value: aws.String("yes")}}}}); err != nil {
		t.Fatal(err)
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("lcb"), Key: aws.String("big/file")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := `{"Rules": [
	  {"ID": "logs", "Filter": {"Prefix": "logs/"}, "Status": "Enabled", "Expiration": {"Days": 30}},
	  {"ID": "temp", "Filter": {"Tag": {"Key": "temp", "Value": "yes"}}, "Status": "Enabled", "Expiration": {"Days": 1}},
	  {"ID": "uploads", "Filter": {"Prefix": ""}, "Status": "Enabled", "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
	  {"ID": "off", "Filter": {"Prefix": "keep/"}, "Status": "Disabled", "Expiration": {"Days": 1}}]}`
	out := awsCLI(t, l, "s3api", "put-bucket-lifecycle-configuration", "--bucket", "lcb", "--lifecycle-configuration", cfg)
	_ = out
	var got struct{ Rules []map[string]any }
	if err := json.Unmarshal([]byte(awsCLI(t, l, "s3api", "get-bucket-lifecycle-configuration", "--bucket", "lcb")), &got); err != nil || len(got.Rules) != 4 {
		t.Fatalf("get-bucket-lifecycle-configuration: %v %+v", err, got)
	}
	keys := func() []string {
		t.Helper()
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("lcb")})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, o := range out.Contents {
			ks = append(ks, aws.ToString(o.Key))
		}
		return ks
	}
	uploads := func() int {
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("lcb")})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	now := time.Now()
	pass := func(days int, expired, aborted int, want []string) {
		t.Helper()
		run, err := l.gw.RunLifecycle(ctx, now.Add(time.Duration(days)*24*time.Hour))
		if err != nil || run.Expired != expired || run.Aborted != aborted || run.Failures != 0 || run.Buckets != 1 {
			t.Fatalf("pass at +%d days: %v %+v, want %d expired and %d aborted", days, err, run, expired, aborted)
		}
		if ks := keys(); !slices.Equal(ks, want) {
			t.Fatalf("after the pass at +%d days: %q, want %q", days, ks, want)
		}
	}
	all := []string{"data/plain", "data/tagged", "keep/z", "logs/a", "logs/deep/b", "top"}
	pass(0, 0, 0, all)
	pass(3, 1, 0, []string{"data/plain", "keep/z", "logs/a", "logs/deep/b", "top"})
	if uploads() != 1 {
		t.Fatal("the upload went before its 7 days")
	}
	pass(9, 0, 1, []string{"data/plain", "keep/z", "logs/a", "logs/deep/b", "top"})
	if n := uploads(); n != 0 {
		t.Fatalf("%d uploads after 9 days", n)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("lcb"), Key: aws.String("big/file"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("x")}); errCodeOf(err) != "NoSuchUpload" {
		t.Fatalf("a part for the aborted upload: %v", err)
	}
	// An object overwritten after the walk saw it is not removed in its
	// place.
	o, _ := parseKey("lcb", "logs/a")
	old, _, err := l.gw.statPath(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, "lcb", "logs/a", []byte("new"))
	if err := l.gw.expireObject(ctx, "lcb", "logs/a", old); err != nil {
		t.Fatal(err)
	}
	if string(mustGet(t, c, "lcb", "logs/a")) != "new" {
		t.Fatal("the rewritten object was expired for its predecessor")
	}
	pass(40, 2, 0, []string{"data/plain", "keep/z", "top"})

	// Deleted: nothing more expires.
	if _, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String("lcb")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("lcb")}); errCodeOf(err) != "NoSuchLifecycleConfiguration" {
		t.Fatalf("after the delete: %v", err)
	}
	run, err := l.gw.RunLifecycle(ctx, now.Add(400*24*time.Hour))
	if err != nil || run.Buckets != 0 || run.Expired != 0 {
		t.Fatalf("a pass without rules: %v %+v", err, run)
	}
	// A refused configuration stores nothing.
	_, err = c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lcb"), LifecycleConfiguration: &types.BucketLifecycleConfiguration{
		Rules: []types.LifecycleRule{{ID: aws.String("t"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("")},
			Transitions: []types.Transition{{Days: aws.Int32(30), StorageClass: types.TransitionStorageClassGlacier}}}}}})
	if errCodeOf(err) != "NotImplemented" {
		t.Fatalf("a transition: %v", err)
	}
	if _, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("lcb")}); errCodeOf(err) != "NoSuchLifecycleConfiguration" {
		t.Fatalf("after a refused put: %v", err)
	}
}
