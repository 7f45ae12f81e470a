package gateway

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Object tags: at most 10, keys up to 128 and values up to 256 characters,
// unique keys; stored as JSON in user.s3.tagging.
//
// Bucket tags: at most 50, the same rules and the characters AWS allows in
// resource tags, no key in the aws: namespace; stored the same way in
// user.s3.tagging of the bucket's directory.

func validateTags(tags []tag) error {
	if len(tags) > 10 {
		return errCode("InvalidTag", "Object tags cannot be greater than 10.")
	}
	return validateTagSet(tags)
}

// validateTagSet checks the rules object and bucket tags share.
func validateTagSet(tags []tag) error {
	seen := map[string]bool{}
	for _, t := range tags {
		if t.Key == "" || utf8.RuneCountInString(t.Key) > 128 {
			return errCode("InvalidTag", "The TagKey you have provided is invalid.")
		}
		if utf8.RuneCountInString(t.Value) > 256 {
			return errCode("InvalidTag", "The TagValue you have provided is invalid.")
		}
		if seen[t.Key] {
			return errCode("InvalidTag", "Cannot provide multiple Tags with the same key.")
		}
		seen[t.Key] = true
	}
	return nil
}

// tagsFromHeader parses x-amz-tagging ("k1=v1&k2=v2"); nil if absent.
func tagsFromHeader(v string) ([]tag, error) {
	if v == "" {
		return nil, nil
	}
	q, err := url.ParseQuery(v)
	if err != nil {
		return nil, errCode("InvalidArgument", "The x-amz-tagging header is not a valid query string.")
	}
	tags := []tag{}
	for k, vs := range q {
		if len(vs) > 1 {
			return nil, errCode("InvalidTag", "Cannot provide multiple Tags with the same key.")
		}
		tags = append(tags, tag{Key: k, Value: vs[0]})
	}
	return tags, validateTags(tags)
}

// storeTags replaces an object's tags and the count kept in its metadata.
func (g *Gateway) storeTags(ctx context.Context, ino uint64, tags []tag) error {
	var err error
	if len(tags) == 0 {
		err = g.meta.RemoveXattr(ctx, ino, xattrTagging)
		if errnoOf(err) == syscall.ENODATA {
			err = nil
		}
	} else {
		var v []byte
		if v, err = json.Marshal(tags); err == nil {
			err = g.meta.SetXattr(ctx, ino, xattrTagging, v, 0)
		}
	}
	if err != nil {
		return err
	}
	om, err := g.loadMeta(ctx, ino)
	if err != nil {
		return err
	}
	if om == nil {
		om = &objectMeta{} // a POSIX file: no ETag stored, only the count
	}
	if om.Tags == len(tags) {
		return nil
	}
	om.Tags = len(tags)
	return g.storeMeta(ctx, ino, om)
}

func (g *Gateway) loadTags(ctx context.Context, ino uint64) ([]tag, error) {
	v, err := g.meta.GetXattr(ctx, ino, xattrTagging)
	if err != nil {
		if errnoOf(err) == syscall.ENODATA {
			return nil, nil
		}
		return nil, err
	}
	var tags []tag
	if json.Unmarshal(v, &tags) != nil {
		return nil, nil
	}
	return tags, nil
}

func (g *Gateway) getObjectTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, _, err := g.statObject(r.Context(), rc)
	if err != nil {
		return err
	}
	tags, err := g.loadTags(r.Context(), in.ID)
	if err != nil {
		return err
	}
	if tags == nil {
		tags = []tag{}
	}
	return writeXML(w, tagging{NS: s3NS, TagSet: tags})
}

func (g *Gateway) putObjectTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	var t tagging
	if err := decodeXML(rc.body, &t); err != nil {
		return err
	}
	if err := validateTags(t.TagSet); err != nil {
		return err
	}
	in, _, err := g.statObject(r.Context(), rc)
	if err != nil {
		return err
	}
	if err := g.storeTags(r.Context(), in.ID, t.TagSet); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// maxBucketTags is S3's limit on a bucket's tags.
const maxBucketTags = 50

func validateBucketTags(tags []tag) error {
	if len(tags) > maxBucketTags {
		return errCode("BadRequest", "Bucket tag count cannot be greater than 50")
	}
	if err := validateTagSet(tags); err != nil {
		return err
	}
	for _, t := range tags {
		if len(t.Key) >= 4 && strings.EqualFold(t.Key[:4], "aws:") {
			return errCode("InvalidTag", "User-defined tag keys can't start with \"aws:\". This prefix is reserved for system tags.")
		}
		if !resourceTagText(t.Key) {
			return errCode("InvalidTag", "The TagKey you have provided is invalid")
		}
		if !resourceTagText(t.Value) {
			return errCode("InvalidTag", "The TagValue you have provided is invalid")
		}
	}
	return nil
}

// resourceTagText: letters, digits, spaces and _ . : / = + - @, the
// characters of AWS resource tags.
func resourceTagText(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.Zs, r) && !strings.ContainsRune("_.:/=+-@", r) {
			return false
		}
	}
	return true
}

func (g *Gateway) getBucketTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	b, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	tags, err := g.loadTags(r.Context(), b.ID)
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		return errCode("NoSuchTagSet", "")
	}
	return writeXML(w, tagging{NS: s3NS, TagSet: tags})
}

// putBucketTagging replaces the bucket's tags (an empty set removes them).
func (g *Gateway) putBucketTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	ctx := r.Context()
	b, err := g.bucketInode(ctx, rc.bucket)
	if err != nil {
		return err
	}
	data, err := readConfigBody(rc, maxXMLBody)
	if err != nil {
		return err
	}
	var t tagging
	if xml.Unmarshal(data, &t) != nil {
		return errCode("MalformedXML", "")
	}
	if err := validateBucketTags(t.TagSet); err != nil {
		return err
	}
	if err := g.storeBucketTags(ctx, b.ID, t.TagSet); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (g *Gateway) deleteBucketTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	b, err := g.bucketInode(r.Context(), rc.bucket)
	if err != nil {
		return err
	}
	if err := g.storeBucketTags(r.Context(), b.ID, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// storeBucketTags replaces the tags of a bucket's directory (none: removes
// them).
func (g *Gateway) storeBucketTags(ctx context.Context, ino uint64, tags []tag) error {
	if len(tags) == 0 {
		err := g.meta.RemoveXattr(ctx, ino, xattrTagging)
		if errnoOf(err) == syscall.ENODATA {
			err = nil
		}
		return err
	}
	v, err := json.Marshal(tags)
	if err != nil {
		return err
	}
	return g.meta.SetXattr(ctx, ino, xattrTagging, v, 0)
}

func (g *Gateway) deleteObjectTagging(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	in, _, err := g.statObject(r.Context(), rc)
	if err != nil {
		return err
	}
	if err := g.storeTags(r.Context(), in.ID, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
