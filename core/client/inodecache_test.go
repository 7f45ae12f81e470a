package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// The inline bytes the path cache holds stay under maxCachedInline, and
// forgetting or replacing an entry gives its bytes back.
func TestInodeCacheBoundsInlineBytes(t *testing.T) {
	c := newInodeCache(time.Minute, 1<<20)
	big := metaapi.Inode{Inline: make([]byte, 4<<20)}
	for i := 0; i < 40; i++ {
		c.put(fmt.Sprintf("/f%d", i), big)
		if c.inline > maxCachedInline {
			t.Fatalf("after %d puts the cache holds %d inline bytes", i+1, c.inline)
		}
	}
	c.put("/f39", metaapi.Inode{Inline: []byte("x")})
	c.forget("/f38")
	want := 0
	for _, e := range c.entries {
		want += len(e.inode.Inline)
	}
	if c.inline != want {
		t.Fatalf("counted %d inline bytes, the entries hold %d", c.inline, want)
	}
}
