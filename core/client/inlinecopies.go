package client

import (
	"sync"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// inlineCopies keeps the bytes of small inline files this client wrote (an
// inline close) or read (a read open), by inode and generation. A read open
// of such a file names the generation it holds (OpenReq.KnownGen); metad,
// finding the file still at it, answers without the bytes (reading them is
// most of a read open's cost) and they come from here. An inline file's
// bytes change only with its generation (metad/ns/inline.go), so a copy
// never answers for other bytes. Bounded: when full it is emptied, which
// costs only the reads it saved.
type inlineCopies struct {
	mu    sync.Mutex
	m     map[uint64]inlineCopy
	bytes int
}

type inlineCopy struct {
	gen  uint64
	data []byte // shared, never written
}

// maxInlineCopies bounds the bytes held.
const maxInlineCopies = 32 << 20

// get returns the copy of ino's bytes held, if any.
func (c *inlineCopies) get(ino uint64) (inlineCopy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[ino]
	return k, ok
}

// note keeps in's bytes if it is an inline file that came with them.
func (c *inlineCopies) note(in metaapi.Inode) {
	if len(in.Inline) == 0 || in.InlineOmitted || in.Gen == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(in.Inline) > maxInlineCopies {
		c.m, c.bytes = map[uint64]inlineCopy{}, 0
	}
	if old, ok := c.m[in.ID]; ok {
		c.bytes -= len(old.data)
	}
	c.m[in.ID] = inlineCopy{gen: in.Gen, data: in.Inline}
	c.bytes += len(in.Inline)
}
