package gateway

import (
	"strings"
	"unicode/utf8"

	"github.com/flyfs/flyfs/core/client"
)

// The key -> path contract (docs/s3-mapping.md): a bucket is a top-level
// directory, a key is the path below it, split at '/'. A key is refused
// unless every segment is a usable file name, so that no key silently
// becomes a different file.

const (
	maxKeyBytes     = 1024
	maxSegmentBytes = 255
	// stagingRoot is the hidden top-level directory for uploads in flight
	// (client.S3StagingRoot); ListBuckets never shows it.
	stagingRoot = client.S3StagingRoot
	// The modes of the files and directories keys become.
	fileMode = 0o644
	dirMode  = 0o755
)

// objectPath is a validated key split into its segments.
type objectPath struct {
	bucket string
	key    string
	segs   []string // segments of key; for a key ending in '/', without the empty last one
	dir    bool     // the key ends in '/': a directory marker
}

// path is the absolute namespace path of the object.
func (o objectPath) path() string {
	return "/" + o.bucket + "/" + strings.Join(o.segs, "/")
}

// parentPath is the path of the directory that holds the object.
func (o objectPath) parentPath() string {
	return "/" + o.bucket + "/" + strings.Join(o.segs[:len(o.segs)-1], "/")
}

func (o objectPath) name() string { return o.segs[len(o.segs)-1] }

// parseKey validates a key and splits it. Refused: the empty key, keys over
// 1024 bytes or with a segment over 255 bytes (KeyTooLongError), invalid
// UTF-8, NUL, empty segments (a leading '/', "a//b"), and "." or ".."
// segments (InvalidArgument).
func parseKey(bucket, key string) (objectPath, error) {
	if key == "" {
		return objectPath{}, errCode("InvalidArgument", "The object key is empty.")
	}
	if len(key) > maxKeyBytes {
		return objectPath{}, errCode("KeyTooLongError", "The key is %d bytes; the limit is %d.", len(key), maxKeyBytes)
	}
	if !utf8.ValidString(key) {
		return objectPath{}, errCode("InvalidArgument", "The key is not valid UTF-8.")
	}
	if strings.IndexByte(key, 0) >= 0 {
		return objectPath{}, errCode("InvalidArgument", "The key contains a NUL byte, which no file name may hold.")
	}
	o := objectPath{bucket: bucket, key: key}
	body := key
	if strings.HasSuffix(key, "/") {
		o.dir = true
		body = key[:len(key)-1]
	}
	if body == "" {
		return objectPath{}, errCode("InvalidArgument", "The key %q names no file: it has an empty path segment.", key)
	}
	o.segs = strings.Split(body, "/")
	for _, s := range o.segs {
		switch {
		case s == "":
			return objectPath{}, errCode("InvalidArgument", "The key %q has an empty path segment (a leading '/' or '//'), which cannot be a file name.", key)
		case s == "." || s == "..":
			return objectPath{}, errCode("InvalidArgument", "The key %q has a %q path segment, which cannot be a file name.", key, s)
		case len(s) > maxSegmentBytes:
			return objectPath{}, errCode("KeyTooLongError", "A path segment of the key is %d bytes; the limit is %d.", len(s), maxSegmentBytes)
		}
	}
	return o, nil
}

// parsePrefixPath splits a listing prefix into the deepest directory it
// fully names and the rest: "a/b/c" -> (["a","b"], "c"); "a/b/" ->
// (["a","b"], ""). ok is false when the prefix cannot match any valid key's
// directory (an empty, "." or ".." segment): the listing is then empty.
func parsePrefixPath(prefix string) (dirs []string, rest string, ok bool) {
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return nil, prefix, true
	}
	for _, s := range strings.Split(prefix[:i], "/") {
		if s == "" || s == "." || s == ".." || len(s) > maxSegmentBytes {
			return nil, "", false
		}
		dirs = append(dirs, s)
	}
	return dirs, prefix[i+1:], true
}
