package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// writeCond is a conditional write's preconditions on the destination,
// and the object lock it gives the new version.
type writeCond struct {
	ifNoneMatch string // "*" only
	ifMatch     string
	// lock is the object lock the new version takes (objectlock.go).
	lock *metaapi.ObjectLock
}

func writeCondOf(h http.Header) (writeCond, error) {
	c := writeCond{ifNoneMatch: strings.TrimSpace(h.Get("If-None-Match")), ifMatch: strings.TrimSpace(h.Get("If-Match"))}
	if c.ifNoneMatch != "" && c.ifNoneMatch != "*" {
		return c, errCode("NotImplemented", "If-None-Match on a write accepts only '*'.")
	}
	return c, nil
}

// checkReadConditions applies If-Match, If-None-Match, If-Modified-Since
// and If-Unmodified-Since (RFC 7232 order, as S3 does).
func checkReadConditions(h http.Header, etag string, mtime time.Time, prefix string) error {
	mtime = mtime.Truncate(time.Second)
	im, inm := h.Get(prefix+"If-Match"), h.Get(prefix+"If-None-Match")
	if im != "" {
		if !etagMatches(im, etag) {
			return errCode("PreconditionFailed", "")
		}
	} else if v := h.Get(prefix + "If-Unmodified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && mtime.After(t) {
			return errCode("PreconditionFailed", "")
		}
	}
	notModified := errCode("NotModified", "")
	if prefix != "" {
		notModified = errCode("PreconditionFailed", "")
	}
	if inm != "" {
		if etagMatches(inm, etag) {
			return notModified
		}
	} else if v := h.Get(prefix + "If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err == nil && !mtime.After(t) {
			return notModified
		}
	}
	return nil
}
