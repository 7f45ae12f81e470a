package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"syscall"
	"unicode/utf8"
)

// Object tags: at most 10, keys up to 128 and values up to 256 characters,
// unique keys; stored as JSON in user.s3.tagging.

func validateTags(tags []tag) error {
	if len(tags) > 10 {
		return errCode("InvalidTag", "Object tags cannot be greater than 10.")
	}
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
