package client

import (
	"cmp"
	"context"
	"slices"

	"github.com/flyfs/flyfs/core/api/metaapi"
)

// Inline data (metad/ns/inline.go). A write handle on a file that never held
// data holds what is written to it, while it all lies within the first
// inlineMax bytes, instead of sending it to storage. Its close then sends
// the bytes to metad, which keeps them in the inode: create, write and close
// of a small file are metadata calls only, and so is reading it back (the
// inode carries the bytes). Anything that needs the bytes in storage first
// sends them there ("spills"): a write past the limit, a read or a length
// report through the handle, a truncate, metad refusing to keep them.

// DefaultInlineMax is the largest file a client holds for an inline close.
const DefaultInlineMax = 4096

// SetInlineMax sets the largest file this client holds for an inline close
// (0 or negative: none). Handles opened before keep the limit they had.
func (fs *FS) SetInlineMax(n int) { fs.inlineMax = max(n, 0) }

// mayInline reports whether a write open of in may hold its writes: the
// file never held data and shares none.
func mayInline(in metaapi.Inode, limit int) bool {
	return limit > 0 && in.Type == metaapi.TypeFile && in.Length == 0 && in.Gen == 0 &&
		in.Data == 0 && len(in.Layers) == 0 && len(in.Inline) == 0
}

// holdWrite holds p at off if the file still fits the limit; false (and
// the held bytes sent to storage) when the caller must write p itself.
func (f *File) holdWrite(ctx context.Context, p []byte, off uint64) (bool, error) {
	f.holdMu.Lock()
	defer f.holdMu.Unlock()
	if !f.holding.Load() {
		return false, nil
	}
	end := off + uint64(len(p))
	if end > uint64(f.fs.inlineMax) {
		return false, f.spillLocked(ctx)
	}
	if len(p) == 0 {
		return true, nil
	}
	if end > uint64(len(f.held)) {
		f.held = append(f.held, make([]byte, end-uint64(len(f.held)))...) // a gap reads zeros
	}
	copy(f.held[off:], p)
	f.heldSpans = addSpan(f.heldSpans, off, end)
	f.mu.Lock()
	f.end = max(f.end, end)
	f.wrote = true
	f.mu.Unlock()
	return true, nil
}

// Holding reports whether the handle holds writes for an inline close.
func (f *File) Holding() bool { return f.holding.Load() }

// Holds reports whether a write of n bytes at off would be held, a copy
// with no call to storage or metad, were it made now (a concurrent write
// may spill the file first; the write is then a storage write as usual).
func (f *File) Holds(off int64, n int) bool {
	return f.holding.Load() && off >= 0 && uint64(off)+uint64(n) <= uint64(f.fs.inlineMax)
}

// Spill sends the writes this handle holds for an inline close to storage
// and stops holding: what was written through it can be read from storage
// now (the mount's reads go through another handle).
func (f *File) Spill(ctx context.Context) error {
	return pathErr("write", f.path, f.spill(ctx))
}

func (f *File) spill(ctx context.Context) error {
	if !f.holding.Load() {
		return nil
	}
	f.holdMu.Lock()
	defer f.holdMu.Unlock()
	if !f.holding.Load() {
		return nil
	}
	return f.spillLocked(ctx)
}

// spillLocked writes the held bytes to storage; the caller holds holdMu. A
// failure keeps them held (the close sends them again).
func (f *File) spillLocked(ctx context.Context) error {
	// Only the bytes written: other writers of the file may have written
	// the gaps between them.
	for _, sp := range f.heldSpans {
		if err := f.writeChunks(ctx, f.held[sp.off:sp.end], sp.off); err != nil {
			return err
		}
	}
	f.held, f.heldSpans = nil, nil
	f.holding.Store(false)
	return nil
}

// span is a byte range [off, end) of a file.
type span struct{ off, end uint64 }

// addSpan adds [off, end) to spans (sorted, disjoint, not touching), merging.
func addSpan(spans []span, off, end uint64) []span {
	out := spans[:0:0]
	for _, sp := range spans {
		switch {
		case sp.end < off || end < sp.off:
			out = append(out, sp)
		default:
			off, end = min(off, sp.off), max(end, sp.end)
		}
	}
	out = append(out, span{off, end})
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	return out
}

// closeHeld closes the session sending the held bytes, if any. done says the
// close is over (err is its outcome); otherwise the bytes are in storage
// now and the caller closes as usual. Whatever goes wrong with an inline
// close (refused, lost), the bytes then go to storage and the usual close
// follows: a close that kept them after all is answered again as it was.
func (f *File) closeHeld(ctx context.Context) (done bool, err error) {
	if !f.holding.Load() {
		return false, nil
	}
	f.holdMu.Lock()
	defer f.holdMu.Unlock()
	if !f.holding.Load() {
		return false, nil
	}
	if len(f.held) > 0 {
		f.mu.Lock()
		tv := f.inode.TruncateVer
		f.mu.Unlock()
		req := &metaapi.CloseReq{Session: f.session, TruncateVer: tv, Length: uint64(len(f.held)), Wrote: true, Exact: true, Inline: f.held}
		r, err := callMetaFor(ctx, f.fs, f.inode.ID, func(m metaapi.Client) (*metaapi.InodeResp, error) { return m.Close(ctx, req) })
		if err == nil {
			in := r.Inode
			if in.InlineOmitted && in.Length == uint64(len(f.held)) {
				in.Inline, in.InlineOmitted = f.held, false // what metad kept
			}
			f.fs.inlines.note(in) // its next read open need not fetch them
			f.held, f.heldSpans = nil, nil
			f.holding.Store(false)
			f.closed(in, true)
			return true, nil
		}
	}
	if err := f.spillLocked(ctx); err != nil {
		return true, pathErr("close", f.path, err)
	}
	return false, nil
}
