package gateway

import (
	"fmt"
	"net/http"
	"syscall"
	"testing"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// TestErrnoAnswers pins what a client sees for a namespace errno in each
// scope, and that an errno a scope does not answer stays an errno.
func TestErrnoAnswers(t *testing.T) {
	const key = "a/b"
	parentIsFile := `A parent of the key "a/b" is an object (a file), so the key cannot be created below it.`
	holdsObjects := `The key "a/b" names a directory that holds other objects; delete them first.`
	notDir := `The key "a/b" names an object (a file), not a directory.`
	for _, c := range []struct {
		scope  errnoScope
		errno  syscall.Errno
		code   string
		status int
		msg    string // "" for the code's default
	}{
		{anyCall, syscall.ENOENT, "NoSuchKey", http.StatusNotFound, ""},
		{anyCall, syscall.EEXIST, "PreconditionFailed", http.StatusPreconditionFailed, ""},
		{anyCall, syscall.ECANCELED, "PreconditionFailed", http.StatusPreconditionFailed, ""},
		{anyCall, syscall.ENOTDIR, "ObjectConflict", http.StatusConflict, "A parent of the key is an object (a file), so the key cannot be created below it."},
		{anyCall, syscall.EISDIR, "ObjectConflict", http.StatusConflict, "The key names a directory that holds other objects."},
		{anyCall, syscall.ENOTEMPTY, "ObjectConflict", http.StatusConflict, "The key names a directory that is not empty."},
		{anyCall, syscall.ENAMETOOLONG, "KeyTooLongError", http.StatusBadRequest, ""},
		{anyCall, syscall.EINVAL, "InvalidArgument", http.StatusBadRequest, ""},
		{anyCall, syscall.EACCES, "AccessDenied", http.StatusForbidden, ""},
		{anyCall, syscall.EPERM, "AccessDenied", http.StatusForbidden, ""},
		{anyCall, syscall.EFBIG, "EntityTooLarge", http.StatusBadRequest, ""},
		{anyCall, syscall.ENOSPC, "InsufficientStorage", http.StatusInsufficientStorage, "A storage disk of the bucket's chains is full: writes fail until space returns (files removed and collected, or the disk grown); reads go on."},
		{anyCall, syscall.EDQUOT, "ServiceUnavailable", http.StatusServiceUnavailable, "The file system is out of space."},
		{anyCall, syscall.EIO, "InternalError", http.StatusInternalServerError, ""},
		{anyCall, syscall.ELOOP, "InternalError", http.StatusInternalServerError, ""},

		{keyRead, syscall.ENOENT, "NoSuchKey", http.StatusNotFound, ""},
		{keyRead, syscall.ENOTDIR, "NoSuchKey", http.StatusNotFound, ""},
		{keyRead, syscall.ELOOP, "NoSuchKey", http.StatusNotFound, ""},
		{keyRead, syscall.EACCES, "AccessDenied", http.StatusForbidden, ""},

		{keyDelete, syscall.ENOENT, "NoSuchKey", http.StatusNotFound, ""},
		{keyDelete, syscall.ENOTDIR, "NoSuchKey", http.StatusNotFound, ""},
		{keyDelete, syscall.ELOOP, "InternalError", http.StatusInternalServerError, ""},
		{keyDelete, syscall.ECANCELED, "PreconditionFailed", http.StatusPreconditionFailed, ""},

		{keyParents, syscall.ENOTDIR, "ObjectConflict", http.StatusConflict, parentIsFile},
		{keyParents, syscall.EEXIST, "ObjectConflict", http.StatusConflict, parentIsFile},
		{keyParents, syscall.ENOENT, "NoSuchKey", http.StatusNotFound, ""},

		{keyWrite, syscall.EEXIST, "ObjectConflict", http.StatusConflict, `The key "a/b" names a directory that holds other objects.`},
		{keyWrite, syscall.EISDIR, "ObjectConflict", http.StatusConflict, holdsObjects},
		{keyWrite, syscall.ENOTEMPTY, "ObjectConflict", http.StatusConflict, holdsObjects},
		{keyWrite, syscall.ENOTDIR, "ObjectConflict", http.StatusConflict, notDir},
		{keyWrite, syscall.ECANCELED, "PreconditionFailed", http.StatusPreconditionFailed, ""},
		{keyWrite, syscall.ENOENT, "NoSuchKey", http.StatusNotFound, ""},
		{keyWriteNew, syscall.EEXIST, "PreconditionFailed", http.StatusPreconditionFailed, ""},
		{keyWriteNew, syscall.EISDIR, "ObjectConflict", http.StatusConflict, holdsObjects},
		{keyWriteNew, syscall.ENOTEMPTY, "ObjectConflict", http.StatusConflict, holdsObjects},
		{keyWriteNew, syscall.ENOTDIR, "ObjectConflict", http.StatusConflict, notDir},
		{keyWriteNew, syscall.ECANCELED, "PreconditionFailed", http.StatusPreconditionFailed, ""},

		{keyRename, syscall.EINVAL, "InvalidArgument", http.StatusBadRequest, "A directory cannot be renamed into itself."},
		{keyRename, syscall.ENOENT, "NoSuchKey", http.StatusNotFound, ""},

		{bucketLookup, syscall.ENOENT, "NoSuchBucket", http.StatusNotFound, ""},
		{bucketCreate, syscall.EEXIST, "BucketAlreadyOwnedByYou", http.StatusConflict, ""},
		{bucketDelete, syscall.ENOENT, "NoSuchBucket", http.StatusNotFound, ""},
		{bucketDelete, syscall.ENOTEMPTY, "BucketNotEmpty", http.StatusConflict, ""},
		{bucketDelete, syscall.EEXIST, "BucketNotEmpty", http.StatusConflict, ""},
		{uploadLookup, syscall.ENOENT, "NoSuchUpload", http.StatusNotFound, ""},
		{uploadLookup, syscall.ENODATA, "NoSuchUpload", http.StatusNotFound, ""},
	} {
		for _, err := range []error{
			fmt.Errorf("lookup: %w", c.errno),
			metaapi.ErrnoError(c.errno, "from metad"),
		} {
			got := toAPIError(nsError(err, c.scope, key))
			msg := c.msg
			if msg == "" {
				msg = s3Errors[c.code].msg
			}
			if got.Code != c.code || got.Status != c.status || got.Message != msg {
				t.Errorf("scope %d, %v: %s %d %q, want %s %d %q", c.scope, c.errno, got.Code, got.Status, got.Message, c.code, c.status, msg)
			}
		}
	}

	// An errno the scope does not answer stays one, for callers that decide
	// on it (RenameObject's EINVAL after publishing).
	err := fmt.Errorf("rename: %w", syscall.EINVAL)
	if got := errnoOf(nsError(err, keyWrite, key)); got != syscall.EINVAL {
		t.Errorf("keyWrite turned EINVAL into %v", got)
	}
	if nsError(nil, keyRead, key) != nil {
		t.Error("nsError(nil) is not nil")
	}
}
