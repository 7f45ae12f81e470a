package gateway

import (
	"strings"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The rules a listing follows to give keys in true key order, with no I/O:
// the order of one directory's entries, and the common prefix a key rolls
// up into.

// keyOrder puts the entries of one directory, which arrive in byte order of
// their names, into the order of their keys. A directory "a" stands for its
// keys "a/...", which sort after "a!", "a-b" and "a.b" (bytes below '/') and
// before "a0", so it waits until a name sorts after "a/".
//
// waiting holds the directories still waiting from earlier entries of the
// same directory (what the previous call returned); ents are the next
// entries; end says that none follow, so every waiting directory is due.
// It returns the entries now due, in key order, and those still waiting.
func keyOrder(waiting, ents []metaapi.DirEntry, end bool) (ordered, stillWaiting []metaapi.DirEntry) {
	// A directory still waiting when a later name n arrives is a prefix of n
	// followed by a byte below '/', so a directory n sorts before it: the
	// waiting ones are a stack whose top sorts first.
	for _, e := range ents {
		for len(waiting) > 0 && dirKey(waiting[len(waiting)-1]) < e.Name {
			ordered = append(ordered, waiting[len(waiting)-1])
			waiting = waiting[:len(waiting)-1]
		}
		if e.Type == metaapi.TypeDir {
			waiting = append(waiting, e)
		} else {
			ordered = append(ordered, e)
		}
	}
	if end {
		for i := len(waiting) - 1; i >= 0; i-- {
			ordered = append(ordered, waiting[i])
		}
		waiting = nil
	}
	return ordered, waiting
}

// dirKey is the key a directory's entry stands for, relative to its parent.
func dirKey(e metaapi.DirEntry) string { return e.Name + "/" }

// commonPrefixOf returns the common prefix key rolls up into when listed
// under prefix with delimiter delim: the key up to and including the first
// delim after the prefix. ok is false when the key is listed as it is (or
// is not under the prefix).
func commonPrefixOf(prefix, delim, key string) (cp string, ok bool) {
	if delim == "" || !strings.HasPrefix(key, prefix) {
		return "", false
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return "", false
	}
	return key[:len(prefix)+i+len(delim)], true
}
