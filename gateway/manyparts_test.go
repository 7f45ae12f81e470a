package gateway

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestLiveTenThousandParts: an upload of S3's most parts (2000 under the
// race detector: enough to outgrow the record), each with a SHA-256
// checksum, completes (its part sizes and checksums outgrow the object's
// record and are kept beside it) and reads back whole, by part number and
// through GetObjectAttributes, also after a tag changes its record.
func TestLiveTenThousandParts(t *testing.T) {
	old := minPartSize
	minPartSize = 1
	t.Cleanup(func() { minPartSize = old })
	l := startGW(t)
	c := l.root(t)
	ctx := context.Background()
	mustBucket(t, c, "many")
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("many"), Key: aws.String("k"),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		t.Fatal(err)
	}
	n := maxParts
	if raceOn {
		n = 2000
	}
	body := func(i int) []byte { return []byte(strings.Repeat(string(rune('a'+i%26)), 1+i%3)) }
	parts := make([]types.CompletedPart, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 32)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("many"), Key: aws.String("k"), UploadId: up.UploadId,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(body(i)), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
			if err != nil {
				errs <- err
				return
			}
			parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag, ChecksumSHA256: out.ChecksumSHA256}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("many"), Key: aws.String("k"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("complete %d parts: %v", n, err)
	}
	var want []byte
	for i := range n {
		want = append(want, body(i)...)
	}
	check := func(when string) {
		t.Helper()
		if got := mustGet(t, c, "many", "k"); !bytes.Equal(got, want) {
			t.Fatalf("%s: the object reads back %d bytes, not %d", when, len(got), len(want))
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("many"), Key: aws.String("k"), PartNumber: aws.Int32(int32(n))})
		if err != nil || int(aws.ToInt32(h.PartsCount)) != n || aws.ToInt64(h.ContentLength) != int64(len(body(n-1))) {
			t.Fatalf("%s: HEAD part %d: %v %+v", when, n, err, h)
		}
		at, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("many"), Key: aws.String("k"),
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}, PartNumberMarker: aws.String(strconv.Itoa(n - 5))})
		if err != nil || at.ObjectParts == nil || int(aws.ToInt32(at.ObjectParts.TotalPartsCount)) != n || len(at.ObjectParts.Parts) != 5 ||
			aws.ToString(at.ObjectParts.Parts[4].ChecksumSHA256) != aws.ToString(parts[n-1].ChecksumSHA256) {
			t.Fatalf("%s: GetObjectAttributes: %v %+v", when, err, at.ObjectParts)
		}
	}
	check("completed")
	o, _ := parseKey("many", "k")
	in, om, err := l.gw.statPath(ctx, o)
	if err != nil || om == nil || om.PartsPieces == 0 {
		t.Fatalf("the parts are not kept beside the record (%v): the test no longer tests that", err)
	}
	if raw, err := l.fs.Meta().GetXattr(ctx, in.ID, xattrObject); err != nil || len(raw) > maxObjectRecord {
		t.Fatalf("the record: %v, %d bytes", err, len(raw))
	}
	if _, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("many"), Key: aws.String("k"),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}}); err != nil {
		t.Fatal(err)
	}
	check("tagged")
}
