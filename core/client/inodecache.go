package client

import (
	"strings"
	"sync"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// inodeCache remembers path lookups for a short time (the attribute cache of
// a network file system): what another client changes shows up within the
// TTL; what this client changes is dropped at once. Bounded: when full it is
// emptied, which costs only lookups.
type inodeCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	entries map[string]cachedInode
	// below counts cached entries strictly under each directory path, so
	// forgetting a path with nothing cached below it (every create and
	// unlink) does not scan the whole cache.
	below map[string]int
	// inline is the bytes of inline files (metaapi.Inode.Inline) the
	// entries hold, kept under maxCachedInline the same way.
	inline int
}

// maxCachedInline bounds the inline file bytes the cache holds.
const maxCachedInline = 64 << 20

type cachedInode struct {
	inode   metaapi.Inode
	expires time.Time
}

func newInodeCache(ttl time.Duration, max int) *inodeCache {
	return &inodeCache{ttl: ttl, max: max, entries: map[string]cachedInode{}, below: map[string]int{}}
}

func (c *inodeCache) get(p string) (metaapi.Inode, bool) {
	if c.ttl <= 0 {
		return metaapi.Inode{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[p]
	if !ok || time.Now().After(e.expires) {
		return metaapi.Inode{}, false
	}
	return e.inode, true
}

func (c *inodeCache) put(p string, in metaapi.Inode) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max || c.inline+len(in.Inline) > maxCachedInline {
		clear(c.entries)
		clear(c.below)
		c.inline = 0
	}
	if old, ok := c.entries[p]; !ok {
		c.adjustAncestors(p, 1)
	} else {
		c.inline -= len(old.inode.Inline)
	}
	c.inline += len(in.Inline)
	c.entries[p] = cachedInode{inode: in, expires: time.Now().Add(c.ttl)}
}

// forget drops p and everything below it (a moved or removed directory takes
// its subtree along).
func (c *inodeCache) forget(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(p)
	if c.below[p] == 0 {
		return
	}
	prefix := strings.TrimSuffix(p, "/") + "/"
	for k := range c.entries {
		if strings.HasPrefix(k, prefix) {
			c.drop(k)
		}
	}
}

func (c *inodeCache) drop(p string) {
	if e, ok := c.entries[p]; ok {
		c.inline -= len(e.inode.Inline)
		delete(c.entries, p)
		c.adjustAncestors(p, -1)
	}
}

// adjustAncestors adds d to the below count of every ancestor of p.
func (c *inodeCache) adjustAncestors(p string, d int) {
	for p != "/" && p != "" && p != "." {
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			p = "/"
		} else {
			p = p[:i]
		}
		if c.below[p] += d; c.below[p] <= 0 {
			delete(c.below, p)
		}
	}
}
