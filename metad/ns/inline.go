package ns

import (
	"bytes"
	"context"
	"fmt"

	"github.com/flyfs/flyfs/core/kv"
)

// Inline data. A small file written whole through one write session need
// not reach storage at all: its writer holds the bytes and sends them with
// the close, and that one transaction keeps them beside the inode (the INLN
// key; the inode says how many of them count, InlineLen) with the length and
// Gen. Reading it then needs no storage round trip either: a read open
// answers the bytes with the inode. They live in a key of their own so that
// what reads or rewrites only the inode (stat, lookup, rename, a listing)
// does not carry them.
//
// Invariants (fsck checks them):
//   - An inline file is a file with 0 < InlineLen <= Length whose INLN value
//     holds at least InlineLen bytes; its data is the first InlineLen of
//     them, then zeros up to Length (a truncate may cut or extend it: a cut
//     only lowers InlineLen).
//   - An inline file has no write session, no layers and no chunks: Data is
//     0 and nothing was written under its id. No other inode has an INLN
//     key.
//
// A close keeps the data only for a file that never held data (Length and
// Gen 0, no shared data), when the closing session is its only one and no
// truncate came between (its TruncateVer); otherwise it answers
// ErrNotInlined and the writer writes the bytes to chunks and closes again.
//
// Writing to an inline file again first moves its bytes to chunks (a
// "spill"): a write open answers ErrInlined, and the caller (metad, which
// can reach storage) writes Inline to the chunks of a fresh data id, then
// calls Spilled, which switches the file to that id if it is still inline
// at the generation the caller spilled. Two spills of one file thus write
// under two ids and only one is adopted: a late write of the other lands
// where no file reads. The loser's chunks are deleted by the caller.

// InlinedError is ErrInlined naming the file whose bytes must move first.
type InlinedError struct{ Ino uint64 }

func (e *InlinedError) Error() string {
	return fmt.Sprintf("ns: inode %d keeps its data in the inode: write it to chunks before a write open", e.Ino)
}

func (e *InlinedError) Unwrap() error { return ErrInlined }

// closeInline ends session s of in keeping data in the inode (see above);
// open says the session still exists, writers how many sessions the inode
// has (sessionsBeside). res gets the closed inode.
func (o *op) closeInline(in *Inode, s Session, open bool, writers int, hint *LengthHint, res *Inode) error {
	data := hint.Inline
	if !open {
		// A retry of a close that kept the data answers as the first did.
		if in.InlineLen > 0 && in.Length == uint64(len(data)) {
			if err := o.loadInline(in, false); err != nil {
				return err
			}
			if bytes.Equal(in.Inline, data) {
				*res = *in
				res.Inline = nil // as the first answer: the writer has them
				return nil
			}
		}
		return fail(ErrNotInlined, "session of inode %d is not open", in.ID)
	}
	if why := o.inlineRefusal(in, hint); why != "" {
		return fail(ErrNotInlined, "inode %d: %s", in.ID, why)
	}
	if writers > 1 {
		return fail(ErrNotInlined, "inode %d has another writer", in.ID)
	}
	if _, err := o.applyHint(in, hint.TruncateVer, uint64(len(data)), true); err != nil {
		return err
	}
	o.tx.Set(inlineKey(in.ID), data)
	in.InlineLen = uint32(len(data))
	o.tx.Clear(sessionKey(s.Ino, s.ID))
	if in.Nlink == 0 && in.Versions == 0 { // it was the last session
		o.queueGC(in, o.now)
	}
	o.putInode(in)
	*res = *in // without the bytes: the writer has them
	return nil
}

// inlineRefusal says why in's data may not be kept in the inode at this
// close ("" if it may).
func (o *op) inlineRefusal(in *Inode, hint *LengthHint) string {
	n := len(hint.Inline)
	switch {
	case o.n.opts.InlineMax <= 0:
		return "inline data is off"
	case n == 0 || n > o.n.opts.InlineMax:
		return fmt.Sprintf("%d bytes are not kept inline (limit %d)", n, o.n.opts.InlineMax)
	case in.Type != TypeFile || in.ReadOnly:
		return fmt.Sprintf("a %s (read-only %v)", in.Type, in.ReadOnly)
	case in.Length != 0 || in.Gen != 0:
		return "it held data before"
	case in.Data != 0 || len(in.Layers) > 0:
		return "it shares data"
	case hint.TruncateVer != in.TruncateVer:
		return "truncated while open"
	case hint.Length != uint64(n):
		return fmt.Sprintf("length %d, %d bytes sent", hint.Length, n)
	}
	return ""
}

// trimInline cuts an inline file's data to a new length: only InlineLen
// moves (the bytes past it no longer count), unless nothing is left.
func (o *op) trimInline(in *Inode, size uint64) {
	switch {
	case in.InlineLen == 0:
	case size == 0:
		o.tx.Clear(inlineKey(in.ID))
		in.InlineLen, in.Inline = 0, nil
	case size < uint64(in.InlineLen):
		in.InlineLen = uint32(size)
		if in.Inline != nil {
			in.Inline = in.Inline[:size]
		}
	}
}

// loadInline reads an inline file's data into in.Inline.
func (o *op) loadInline(in *Inode, snapshot bool) error {
	return loadInline(o.ctx, o.tx, in, snapshot)
}

func loadInline(ctx context.Context, r kv.ReadTxn, in *Inode, snapshot bool) error {
	if in.InlineLen == 0 {
		return nil
	}
	var v []byte
	var found bool
	var err error
	if snapshot {
		v, found, err = r.SnapshotGet(ctx, inlineKey(in.ID))
	} else {
		v, found, err = r.Get(ctx, inlineKey(in.ID))
	}
	if err != nil {
		return err
	}
	if !found || len(v) < int(in.InlineLen) {
		return fail(ErrIO, "inode %d: %d inline bytes, %d stored", in.ID, in.InlineLen, len(v))
	}
	in.Inline = bytes.Clone(v[:in.InlineLen])
	return nil
}

// copyInline gives clone dst the inline data of src, if src has any.
func (o *op) copyInline(src, dst *Inode) error {
	if src.InlineLen == 0 {
		return nil
	}
	if err := o.loadInline(src, false); err != nil {
		return err
	}
	o.tx.Set(inlineKey(dst.ID), src.Inline)
	dst.InlineLen = src.InlineLen
	return nil
}

// statData is Stat with an inline file's data, left out when the caller
// holds it at generation known (0: never).
func (n *Namespace) statData(ctx context.Context, ino, known uint64) (Inode, error) {
	var res Inode
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		in, err := getInode(ctx, tx, ino, true)
		if err != nil {
			return err
		}
		if known != 0 && in.Gen == known {
			res = *in // the caller holds its bytes: inline bytes change only with Gen
			return nil
		}
		if err := loadInline(ctx, tx, in, true); err != nil {
			return err
		}
		res = *in
		return nil
	})
	return res, err
}

// NewDataID hands out an id for chunks only (no inode has it): where a
// spill writes a file's inline bytes.
func (n *Namespace) NewDataID(ctx context.Context) (uint64, error) {
	return n.alloc.id(ctx)
}

// Spilled switches inline file ino, if it is still inline at generation
// gen, to reading the chunks of data id: its inline bytes were written
// there. false: it is not (someone else spilled it, or it changed), and
// nothing reads data's chunks.
func (n *Namespace) Spilled(ctx context.Context, ino, gen, data uint64) (bool, error) {
	won := false
	err := n.update(ctx, func(o *op) error {
		won = false
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		if in.InlineLen == 0 || in.Gen != gen || in.Data != 0 {
			return nil
		}
		o.tx.Clear(inlineKey(in.ID))
		in.InlineLen, in.Data, in.OwnClean = 0, data, false
		o.putInode(in)
		won = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("spill %d: %w", ino, err)
	}
	return won, nil
}
