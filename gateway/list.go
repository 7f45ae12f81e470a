package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Listing walks the namespace in true key order. A directory's entries come
// from metad sorted by name, but a directory "a" stands for keys "a/...",
// which sort after "a-b" and "a.c" and before "a0": keyOrder holds
// directories back until the next name sorts after their key, so the walk
// emits keys in byte order without reading any directory twice.

const (
	defaultMaxKeys = 1000
	listWorkers    = 64
)

type listItem struct {
	key string
	cp  bool
	in  metaapi.Inode
}

type lister struct {
	g      *Gateway
	ctx    context.Context
	bucket string
	prefix string
	delim  string
	after  string // emit only keys (and prefixes) > after
	max    int

	items     []listItem
	truncated bool
	lastCP    string
}

var errListFull = errors.New("listing page full")

func (l *lister) emit(it listItem) error {
	if len(l.items) >= l.max {
		l.truncated = true
		return errListFull
	}
	l.items = append(l.items, it)
	return nil
}

// object considers one object key (a file, or an explicit directory's
// "dir/" marker).
func (l *lister) object(k string, in metaapi.Inode) error {
	if !strings.HasPrefix(k, l.prefix) {
		return nil
	}
	if cp, ok := commonPrefixOf(l.prefix, l.delim, k); ok {
		return l.commonPrefix(cp)
	}
	if k <= l.after {
		return nil
	}
	return l.emit(listItem{key: k, in: in})
}

func (l *lister) commonPrefix(cp string) error {
	if cp == l.lastCP || cp <= l.after {
		return nil
	}
	l.lastCP = cp
	return l.emit(listItem{key: cp, cp: true})
}

// dir considers a directory whose keys all start with dk ("a/b/").
func (l *lister) dir(dk string, e metaapi.DirEntry) error {
	if !strings.HasPrefix(dk, l.prefix) && !strings.HasPrefix(l.prefix, dk) {
		return nil
	}
	implicit := e.Inode != nil && e.Inode.Implicit
	if cp, ok := commonPrefixOf(l.prefix, l.delim, dk); ok {
		if cp == l.lastCP || cp <= l.after {
			return nil
		}
		if implicit {
			// An implicit directory that emptied (through POSIX) holds no
			// key, so it rolls up into no prefix.
			ents, _, err := l.g.meta.ReadDir(l.ctx, e.Ino, "", 1, false)
			if err != nil || len(ents) == 0 {
				return nil
			}
		}
		return l.commonPrefix(cp)
	}
	if dk < l.after && !strings.HasPrefix(l.after, dk) {
		return nil // every key below sorts before the resume point
	}
	if !implicit && e.Inode != nil {
		if err := l.object(dk, *e.Inode); err != nil {
			return err
		}
	}
	return l.walk(e.Ino, dk)
}

// walk lists directory ino, whose keys start with dk.
func (l *lister) walk(ino uint64, dk string) error {
	rem := "" // the part of the prefix that names entries of this directory
	if len(l.prefix) > len(dk) {
		rem = l.prefix[len(dk):]
		if i := strings.IndexByte(rem, '/'); i >= 0 {
			rem = rem[:i+1] // only one entry can match: the directory rem[:i]
		}
	}
	after := ""
	if rem != "" {
		after = strings.TrimSuffix(rem, "/")
		after = after[:len(after)-1]
	}
	if strings.HasPrefix(l.after, dk) {
		// Skip straight to the resume point: names up to seg[:j-1] (j: the
		// first byte below '/') hold only keys <= after, even as "name/".
		seg := l.after[len(dk):]
		if i := strings.IndexByte(seg, '/'); i >= 0 {
			seg = seg[:i]
		}
		j := strings.IndexFunc(seg, func(r rune) bool { return r < '/' })
		if j < 0 {
			j = len(seg)
		}
		if h := seg[:max(j-1, 0)]; h > after {
			after = h
		}
	}
	var waiting []metaapi.DirEntry
	limit := max(l.max+2, 64) // one read usually covers the page and the look past it
	for {
		ents, more, err := l.g.meta.ReadDirXattr(l.ctx, ino, after, limit, xattrObject)
		if err != nil {
			if e := errnoOf(err); e == syscall.ENOENT || e == syscall.ENOTDIR {
				return nil // vanished while we walked
			}
			return err
		}
		done := !more || len(ents) == 0
		page := make([]metaapi.DirEntry, 0, len(ents))
		for _, e := range ents {
			after = e.Name
			if dk == "" && e.Name == stagingRoot {
				continue
			}
			if rem != "" {
				match := strings.HasPrefix(e.Name, rem) || (strings.HasSuffix(rem, "/") && e.Name+"/" == rem)
				if !match {
					if e.Name > rem {
						done = true
						break
					}
					continue
				}
			}
			page = append(page, e)
		}
		var ordered []metaapi.DirEntry
		ordered, waiting = keyOrder(waiting, page, done)
		for _, e := range ordered {
			switch {
			case e.Type == metaapi.TypeDir:
				err = l.dir(dk+dirKey(e), e)
			case e.Type == metaapi.TypeFile && e.Inode != nil:
				l.g.primeMeta(*e.Inode, e.Xattr) // the record came with the page: no call per object
				err = l.object(dk+e.Name, *e.Inode)
			}
			if err != nil {
				return err
			}
		}
		if done {
			return nil
		}
	}
}

// run lists the bucket.
func (l *lister) run() error {
	b, err := l.g.bucketInode(l.ctx, l.bucket)
	if err != nil {
		return err
	}
	dirs, _, ok := parsePrefixPath(l.prefix)
	if !ok {
		return nil
	}
	ino, dk := b.ID, ""
	if len(dirs) > 0 {
		dk = strings.Join(dirs, "/") + "/"
		in, err := l.g.meta.Resolve(l.ctx, "/"+l.bucket+"/"+strings.Join(dirs, "/"), true)
		if err != nil {
			if e := errnoOf(err); e == syscall.ENOENT || e == syscall.ENOTDIR {
				return nil
			}
			return err
		}
		if in.Type != metaapi.TypeDir {
			return nil
		}
		ino = in.ID
		if !in.Implicit && dk == l.prefix {
			if err := l.object(dk, in); err != nil {
				return err
			}
		}
	}
	err = l.walk(ino, dk)
	if errors.Is(err, errListFull) {
		err = nil
	}
	return err
}

// objectInfos turns listed items into Contents, reading the files' stored
// ETags with a few calls in parallel.
func (l *lister) objectInfos(fetchOwner bool, encode func(string) string) ([]objectInfo, []commonPrefix) {
	var objs []objectInfo
	var cps []commonPrefix
	var idx []int
	for _, it := range l.items {
		if it.cp {
			cps = append(cps, commonPrefix{Prefix: encode(it.key)})
			continue
		}
		oi := objectInfo{Key: encode(it.key), LastModified: s3Time(time.Unix(0, it.in.Mtime)), Size: int64(it.in.Length), StorageClass: "STANDARD"}
		if it.in.Type == metaapi.TypeDir {
			oi.Size, oi.ETag = 0, quoteETag(emptyMD5)
		} else {
			idx = append(idx, len(objs))
		}
		if fetchOwner {
			oi.Owner = &owner{ID: strconv.FormatUint(uint64(it.in.UID), 10), DisplayName: strconv.FormatUint(uint64(it.in.UID), 10)}
		}
		objs = append(objs, oi)
	}
	// Map objs back to their inodes.
	inodes := make([]metaapi.Inode, 0, len(objs))
	for _, it := range l.items {
		if !it.cp {
			inodes = append(inodes, it.in)
		}
	}
	sem := make(chan struct{}, listWorkers)
	done := make(chan struct{}, len(idx))
	for _, i := range idx {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; done <- struct{}{} }()
			om, _ := l.g.metaOf(l.ctx, inodes[i])
			objs[i].ETag = quoteETag(etagFor(inodes[i], om))
			if om != nil && om.Gen == inodes[i].Gen && om.ChecksumAlgo != "" {
				objs[i].ChecksumAlgorithm = strings.ToUpper(om.ChecksumAlgo)
			}
		}(i)
	}
	for range idx {
		<-done
	}
	return objs, cps
}

// s3URLEncode encodes a key for encoding-type=url as S3 does: percent
// escapes, a space as %20 (never '+', which only form decoding reads as a
// space), slashes kept.
func s3URLEncode(s string) string {
	// QueryEscape leaves '+' for spaces only (a '+' itself becomes %2B).
	return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "%2F", "/"), "+", "%20")
}

func listParams(r *http.Request) (prefix, delim string, maxKeys int, encode func(string) string, err error) {
	q := r.URL.Query()
	prefix, delim = q.Get("prefix"), q.Get("delimiter")
	maxKeys = defaultMaxKeys
	if v := q.Get("max-keys"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 0 {
			return "", "", 0, nil, errCode("InvalidArgument", "max-keys must be a non-negative integer.")
		}
		maxKeys = min(n, defaultMaxKeys)
	}
	encode, err = encodingOf(q)
	if err != nil {
		return "", "", 0, nil, err
	}
	return prefix, delim, maxKeys, encode, nil
}

// encodingOf reads a listing's encoding-type.
func encodingOf(q url.Values) (func(string) string, error) {
	switch et := q.Get("encoding-type"); et {
	case "":
		return func(s string) string { return s }, nil
	case "url":
		return s3URLEncode, nil
	}
	return nil, errCode("InvalidArgument", "Invalid Encoding Method specified in Request")
}

func (g *Gateway) listObjectsV2(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	prefix, delim, maxKeys, encode, err := listParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	token, startAfter := q.Get("continuation-token"), q.Get("start-after")
	after := startAfter
	if q.Has("continuation-token") {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil || token == "" {
			return errCode("InvalidArgument", "The continuation token provided is incorrect.")
		}
		after = max(string(raw), startAfter)
	}
	l := &lister{g: g, ctx: r.Context(), bucket: rc.bucket, prefix: prefix, delim: delim, after: after, max: maxKeys}
	if maxKeys > 0 {
		if err := l.run(); err != nil {
			return err
		}
	} else if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	objs, cps := l.objectInfos(q.Get("fetch-owner") == "true", encode)
	res := listBucketResultV2{NS: s3NS, Name: rc.bucket, Prefix: encode(prefix), MaxKeys: maxKeys, IsTruncated: l.truncated,
		KeyCount: len(objs) + len(cps), ContinuationToken: token, StartAfter: encode(startAfter), Contents: objs, CommonPrefixes: cps}
	if delim != "" {
		res.Delimiter = encode(delim)
	}
	if q.Get("encoding-type") == "url" {
		res.EncodingType = "url"
	}
	if l.truncated && len(l.items) > 0 {
		res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(l.items[len(l.items)-1].key))
	}
	return writeXML(w, res)
}

func (g *Gateway) listObjectsV1(w http.ResponseWriter, r *http.Request, rc *reqCtx) error {
	prefix, delim, maxKeys, encode, err := listParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	marker := q.Get("marker")
	l := &lister{g: g, ctx: r.Context(), bucket: rc.bucket, prefix: prefix, delim: delim, after: marker, max: maxKeys}
	if maxKeys > 0 {
		if err := l.run(); err != nil {
			return err
		}
	} else if _, err := g.bucketInode(r.Context(), rc.bucket); err != nil {
		return err
	}
	objs, cps := l.objectInfos(true, encode)
	res := listBucketResultV1{NS: s3NS, Name: rc.bucket, Prefix: encode(prefix), Marker: encode(marker), MaxKeys: maxKeys,
		IsTruncated: l.truncated, Contents: objs, CommonPrefixes: cps}
	if delim != "" {
		res.Delimiter = encode(delim)
	}
	if q.Get("encoding-type") == "url" {
		res.EncodingType = "url"
	}
	if l.truncated && len(l.items) > 0 {
		res.NextMarker = encode(l.items[len(l.items)-1].key)
	}
	return writeXML(w, res)
}
