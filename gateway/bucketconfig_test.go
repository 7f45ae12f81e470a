package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/flyfs/flyfs/core/access"
)

// TestLiveBucketTagging: Put/Get/DeleteBucketTagging keep a bucket's tags
// in user.s3.tagging of its directory, as object tags are kept, with the
// limits of S3 (50 tags, unique keys, keys of 1-128 and values of 0-256
// characters, no aws: keys); a refused set changes nothing.
func TestLiveBucketTagging(t *testing.T) {
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "btag")
	mustPut(t, c, "btag", "obj", []byte("x"))
	b := aws.String("btag")
	tagsOf := func() ([]string, error) {
		out, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b})
		if err != nil {
			return nil, err
		}
		var kv []string
		for _, tg := range out.TagSet {
			kv = append(kv, aws.ToString(tg.Key)+"="+aws.ToString(tg.Value))
		}
		return kv, nil
	}
	set := func(kv ...string) error {
		ts := []types.Tag{}
		for _, p := range kv {
			k, v, _ := strings.Cut(p, "=")
			ts = append(ts, types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		_, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: b, Tagging: &types.Tagging{TagSet: ts}})
		return err
	}
	if _, err := tagsOf(); errCodeOf(err) != "NoSuchTagSet" {
		t.Fatalf("GetBucketTagging of a bucket without tags: %v", err)
	}
	if err := set("team=ml", "cost center=42 / a+b", "empty="); err != nil {
		t.Fatal(err)
	}
	want := []string{"team=ml", "cost center=42 / a+b", "empty="}
	if got, err := tagsOf(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("GetBucketTagging: %v %q, want %q", err, got, want)
	}
	// Kept in the bucket directory's user.s3.tagging, as JSON.
	bin, err := l.fs.Meta().Resolve(ctx, "/btag", true)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := l.fs.Meta().GetXattr(ctx, bin.ID, xattrTagging)
	var stored []tag
	if err != nil || json.Unmarshal(raw, &stored) != nil || len(stored) != 3 || stored[0] != (tag{"team", "ml"}) {
		t.Fatalf("user.s3.tagging of /btag: %v %s", err, raw)
	}
	// The bucket's tags are not its objects'.
	if out, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: b, Key: aws.String("obj")}); err != nil || len(out.TagSet) != 0 {
		t.Fatalf("object tags: %v %+v", err, out)
	}
	// A Put replaces the set.
	if err := set("only=one"); err != nil {
		t.Fatal(err)
	}
	if got, _ := tagsOf(); !slices.Equal(got, []string{"only=one"}) {
		t.Fatalf("after a second Put: %q", got)
	}
	fifty := make([]string, 50)
	for i := range fifty {
		fifty[i] = fmt.Sprintf("k%d=v%d", i, i)
	}
	if err := set(fifty...); err != nil {
		t.Fatalf("50 tags: %v", err)
	}
	for name, tc := range map[string]struct {
		tags []string
		code string
	}{
		"51 tags":       {append(slices.Clone(fifty), "k50=v"), "BadRequest"},
		"the same key":  {[]string{"a=1", "a=2"}, "InvalidTag"},
		"an aws: key":   {[]string{"aws:cloudformation:stack-name=x"}, "InvalidTag"},
		"an AWS: key":   {[]string{"AWS:x=y"}, "InvalidTag"},
		"an empty key":  {[]string{"=v"}, "InvalidTag"},
		"a long key":    {[]string{strings.Repeat("k", 129) + "=v"}, "InvalidTag"},
		"a long value":  {[]string{"k=" + strings.Repeat("v", 257)}, "InvalidTag"},
		"a bad key":     {[]string{"semi;colon=v"}, "InvalidTag"},
		"a bad value":   {[]string{"k=a<b"}, "InvalidTag"},
		"a control key": {[]string{"tab\tkey=v"}, "InvalidTag"},
	} {
		if err := set(tc.tags...); errCodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", name, err, tc.code)
		}
	}
	for body, code := range map[string]string{
		"<Junk/>":                            "MalformedXML",
		"<Tagging><TagSet><Tag><Key>a</Key>": "MalformedXML",
		"":                                   "MissingRequestBodyError",
	} {
		resp, err := http.DefaultClient.Do(l.signed(t, "PUT", "/btag?tagging", []byte(body), nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if e := readError(t, resp); resp.StatusCode != 400 || e.Code != code {
			t.Errorf("PutBucketTagging %q: %d %+v, want %s", body, resp.StatusCode, e, code)
		}
	}
	if got, _ := tagsOf(); len(got) != 50 {
		t.Fatalf("a refused Put changed the tags: %d of them", len(got))
	}
	// A key that may only read the bucket reads its tags and cannot set them.
	k, err := l.fs.Keys().Create(ctx, access.Key{Buckets: map[string]access.Permission{"btag": access.Read}})
	if err != nil {
		t.Fatal(err)
	}
	rc := l.sdk(t, k.ID, k.Secret)
	if out, err := rc.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: b}); err != nil || len(out.TagSet) != 50 {
		t.Fatalf("a read key's GetBucketTagging: %v", err)
	}
	if _, err := rc.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: b, Tagging: &types.Tagging{TagSet: []types.Tag{}}}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("a read key's PutBucketTagging: %v", err)
	}
	if _, err := rc.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: b}); errCodeOf(err) != "AccessDenied" {
		t.Fatalf("a read key's DeleteBucketTagging: %v", err)
	}
	// Delete removes them (and deleting none is no error); an empty set
	// is none.
	for i := 0; i < 2; i++ {
		if _, err := c.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: b}); err != nil {
			t.Fatalf("DeleteBucketTagging %d: %v", i, err)
		}
		if _, err := tagsOf(); errCodeOf(err) != "NoSuchTagSet" {
			t.Fatalf("after DeleteBucketTagging: %v", err)
		}
	}
	if _, err := l.fs.Meta().GetXattr(ctx, bin.ID, xattrTagging); err == nil {
		t.Fatal("user.s3.tagging left after DeleteBucketTagging")
	}
	if err := set("a=b"); err != nil {
		t.Fatal(err)
	}
	if err := set(); err != nil {
		t.Fatalf("an empty tag set: %v", err)
	}
	if _, err := tagsOf(); errCodeOf(err) != "NoSuchTagSet" {
		t.Fatalf("after an empty tag set: %v", err)
	}
	for name, call := range map[string]func() error{
		"Get": func() error {
			_, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("nosuchbucket")})
			return err
		},
		"Delete": func() error {
			_, err := c.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String("nosuchbucket")})
			return err
		},
		"Put": func() error {
			_, err := c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("nosuchbucket"), Tagging: &types.Tagging{TagSet: []types.Tag{}}})
			return err
		},
	} {
		if err := call(); errCodeOf(err) != "NoSuchBucket" {
			t.Errorf("%sBucketTagging of a missing bucket: %v", name, err)
		}
	}
	// Tags do not keep a bucket from going.
	if err := set("a=b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: aws.String("obj")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: b}); err != nil {
		t.Fatalf("DeleteBucket of a tagged bucket: %v", err)
	}
}

// TestLiveBucketLocation: GetBucketLocation answers the gateway's region
// (Config.Region), empty for us-east-1 as AWS does; a CreateBucket asking
// for another region is refused (the bucket would not be there) and
// creates nothing.
func TestLiveBucketLocation(t *testing.T) {
	ctx := context.Background()
	for _, region := range []string{"", "us-east-1", "eu-west-1"} {
		l := startGWWith(t, func(cfg *Config) { cfg.Region = region })
		c := l.root(t)
		served := region
		if served == "" {
			served = "us-east-1" // the default
		}
		mustBucket(t, c, "loc")
		out, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("loc")})
		want := types.BucketLocationConstraint(served)
		if served == "us-east-1" {
			want = ""
		}
		if err != nil || out.LocationConstraint != want {
			t.Fatalf("region %q: GetBucketLocation: %v %q, want %q", region, err, out.LocationConstraint, want)
		}
		resp, err := http.DefaultClient.Do(l.signed(t, "GET", "/loc?location", nil, nil, rootAK, rootSK, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `<LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`+string(want)+`</LocationConstraint>`) {
			t.Fatalf("region %q: GetBucketLocation body %s", region, body)
		}
		head, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("loc")})
		if err != nil || aws.ToString(head.BucketRegion) != served {
			t.Fatalf("region %q: HeadBucket: %v %+v", region, err, head)
		}
		if _, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("nosuchbucket")}); errCodeOf(err) != "NoSuchBucket" {
			t.Fatalf("GetBucketLocation of a missing bucket: %v", err)
		}
		// A constraint naming the gateway's region is that region; another
		// region is refused, naming both.
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("here"),
			CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(served)}}); err != nil {
			t.Fatalf("region %q: CreateBucket in %s: %v", region, served, err)
		}
		for _, other := range []string{"ap-south-1", "EU"} {
			_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("elsewhere"),
				CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(other)}})
			if errCodeOf(err) != "IllegalLocationConstraintException" || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), served) {
				t.Fatalf("region %q: CreateBucket in %s: %v", region, other, err)
			}
			if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("elsewhere")}); errCodeOf(err) != "NotFound" {
				t.Fatalf("region %q: a refused CreateBucket made the bucket: %v", region, err)
			}
		}
	}
}
