package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
)

// File is an open file. ReadAt and WriteAt may be called concurrently.
type File struct {
	fs      *FS
	path    string
	inode   metaapi.Inode
	session []byte // non-nil for a write open
	chains  []routing.ChainID
	mu      sync.Mutex
	end     uint64 // the largest offset written through this handle
	wrote   bool   // data written since the last length report
	// uncertain: a write through this handle failed, and may have landed
	// all the same (past end): the close then lets metad settle the
	// length from storage.
	uncertain bool
	// sole: every change of the file's data since the open came through
	// this handle, as metad's answers show it: each of its reports moved
	// Gen by one, or by none when it carried no write.
	sole bool
	// reported is when the length was last reported (writers report every
	// ReportEvery, so other clients see a growing file grow).
	reported  time.Time
	reporting bool

	// Inline data (inline.go): while holding, writes stay in held (under
	// holdMu) instead of going to storage, for a close that has metad keep
	// them in the inode.
	holdMu    sync.Mutex
	holding   atomic.Bool
	held      []byte
	heldSpans []span // the ranges of held written (the rest reads zeros)
}

// ReportEvery is how often a writer reports its length to metad while it
// writes (and at fsync and close).
const ReportEvery = 3 * time.Second

// OpenInode returns a File over an inode the caller opened through Meta
// (Create or Open); session is the write session, nil for a read-only open.
func (fs *FS) OpenInode(ctx context.Context, in metaapi.Inode, session []byte) (*File, error) {
	if in.Type == metaapi.TypeDir {
		return nil, pathErr("open", "", syscall.EISDIR)
	}
	return fs.file(ctx, "", in, session)
}

func (fs *FS) file(ctx context.Context, p string, in metaapi.Inode, session []byte) (*File, error) {
	if in.Type.Special() {
		// Its data is whatever the kernel that opens it makes of it.
		return nil, pathErr("open", p, fmt.Errorf("a %s has no data in flyfs: %w", in.Type, syscall.ENXIO))
	}
	if in.InlineOmitted && session == nil { // a read open answers the bytes
		fresh, _, err := fs.Meta().Open(ctx, in.ID, os.O_RDONLY, Creds{})
		if err != nil {
			return nil, pathErr("open", p, err)
		}
		in = fresh
	}
	f := &File{fs: fs, path: p, inode: in, session: session, reported: time.Now(), sole: true}
	f.holding.Store(session != nil && mayInline(in, fs.inlineMax))
	l := in.Layout
	chains, ok := fs.routing.Current().Table(l.TableID, l.TableVersion)
	if !ok {
		return nil, pathErr("open", p, fmt.Errorf("chain table %d version %d is not in routing", l.TableID, l.TableVersion))
	}
	t := layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: chains}
	var err error
	if f.chains, err = l.Chains(t); err != nil {
		return nil, pathErr("open", p, err)
	}
	return f, nil
}

// Inode is the file's inode as this handle last learned it (open, a
// length report, a truncate, the close).
func (f *File) Inode() metaapi.Inode {
	// Under the lock: a background length report (writeAt) updates it.
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inode
}

// Size is the file's length as this handle knows it.
func (f *File) Size() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.inode.Length, f.end)
}

// forPieces runs fn on every per-chunk piece of [off, off+n), as many at a
// time as the FS's in-flight window allows, and returns the first error.
func (f *File) forPieces(ctx context.Context, off, n uint64, fn func(context.Context, layout.Piece, routing.ChainID) error) error {
	pieces, err := f.inode.Layout.Split(off, n)
	if err != nil {
		return err
	}
	return runBounded(ctx, f.fs.chunks.Window(), len(pieces), func(ctx context.Context, i int) error {
		pc := pieces[i]
		return fn(ctx, pc, f.chains[pc.ChunkIndex%uint64(len(f.chains))])
	})
}

// WriteAtContext writes p at off.
func (f *File) WriteAtContext(ctx context.Context, p []byte, off int64) (n int, err error) {
	if m := f.fs.metrics; m != nil {
		defer func(start time.Time) { m.done(m.write, "write", start, m.writtenBytes, n, err) }(time.Now())
	}
	return f.writeAt(ctx, p, off)
}

func (f *File) writeAt(ctx context.Context, p []byte, off int64) (int, error) {
	if f.session == nil {
		return 0, pathErr("write", f.path, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathErr("write", f.path, syscall.EINVAL)
	}
	if uint64(off)+uint64(len(p)) > metaapi.MaxFileSize {
		return 0, pathErr("write", f.path, syscall.EFBIG)
	}
	if f.holding.Load() {
		held, err := f.holdWrite(ctx, p, uint64(off))
		if err != nil {
			return 0, pathErr("write", f.path, err)
		}
		if held {
			return len(p), nil
		}
	}
	if err := f.writeChunks(ctx, p, uint64(off)); err != nil {
		return 0, pathErr("write", f.path, err)
	}
	f.mu.Lock()
	f.end = max(f.end, uint64(off)+uint64(len(p)))
	f.wrote = true
	due := !f.reporting && time.Since(f.reported) >= ReportEvery
	if due {
		f.reporting = true
	}
	f.mu.Unlock()
	if due {
		go f.reportInBackground()
	}
	return len(p), nil
}

// writeChunks writes p at off to the file's chunks.
func (f *File) writeChunks(ctx context.Context, p []byte, off uint64) error {
	if err := f.ensureHint(ctx, off+uint64(len(p))); err != nil {
		return err
	}
	l := f.inode.Layout
	done := f.fs.changing(f.inode.ID)
	err := f.forPieces(ctx, off, uint64(len(p)), func(ctx context.Context, pc layout.Piece, chain routing.ChainID) error {
		data := p[pc.OffsetInBuffer : pc.OffsetInBuffer+uint64(pc.Length)]
		_, err := f.fs.chunks.Update(ctx, Update{Chain: chain, Chunk: layout.MakeChunkID(f.inode.DataID(), pc.ChunkIndex),
			Kind: storageapi.KindWrite, Offset: pc.OffsetInChunk, Data: data, ChunkSize: l.ChunkSize,
			Base: layout.LayerChunks(f.inode.Layers, pc.ChunkIndex, l.ChunkSize)})
		return err
	})
	done() // landed or maybe landed: cached blocks of the file are stale
	if err != nil {
		f.mu.Lock()
		f.uncertain = true
		f.mu.Unlock()
	}
	return err
}

// WriteAt implements io.WriterAt.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	return f.WriteAtContext(context.Background(), p, off)
}

// ReadAtContext reads into p at off, up to the file's length; holes read as
// zeros.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (n int, err error) {
	if m := f.fs.metrics; m != nil {
		defer func(start time.Time) {
			if err == io.EOF {
				m.done(m.read, "read", start, m.readBytes, n, nil)
			} else {
				m.done(m.read, "read", start, m.readBytes, n, err)
			}
		}(time.Now())
	}
	return f.readAt(ctx, p, off)
}

func (f *File) readAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("read", f.path, syscall.EINVAL)
	}
	if err := f.spill(ctx); err != nil { // this handle's held writes are read from storage
		return 0, pathErr("read", f.path, err)
	}
	size := f.Size()
	if uint64(off) >= size {
		return 0, io.EOF
	}
	n := min(uint64(len(p)), size-uint64(off))
	var err error
	if c := f.fs.blocks.Load(); c != nil && f.session == nil && len(f.inode.Inline) == 0 {
		err = f.readCached(ctx, c, p[:n], uint64(off), size)
	} else {
		var jobs []readJob
		if jobs, err = f.readJobsFor(p[:n], uint64(off)); err == nil {
			err = f.readJobs(ctx, jobs)
		}
	}
	if err != nil {
		return 0, pathErr("read", f.path, err)
	}
	if n < uint64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// report sends the length hint now; wrote says data changed since the last.
func (f *File) report(ctx context.Context) error {
	if err := f.spill(ctx); err != nil { // what it reports must be readable
		return err
	}
	f.mu.Lock()
	end, wrote, tv, ino := f.end, f.wrote, f.inode.TruncateVer, f.inode.ID
	f.wrote = false
	f.reported = time.Now()
	f.mu.Unlock()
	r, err := callMetaFor(ctx, f.fs, ino, func(m metaapi.Client) (*metaapi.InodeResp, error) {
		return m.Report(ctx, &metaapi.ReportReq{Ino: ino, TruncateVer: tv, Length: end, Wrote: wrote})
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.wrote = f.wrote || wrote // report it again next time
		f.sole = f.sole && !wrote  // it may have moved Gen all the same
		return err
	}
	f.noteGen(r.Inode.Gen, wrote)
	f.inode.Length, f.inode.Gen, f.inode.Mtime = r.Inode.Length, r.Inode.Gen, r.Inode.Mtime
	return nil
}

// noteGen checks an answer's Gen against this handle's own changes; the
// caller holds f.mu.
func (f *File) noteGen(gen uint64, wrote bool) {
	want := f.inode.Gen
	if wrote {
		want++
	}
	f.sole = f.sole && gen == want
}

// SoleWriter reports whether, as far as metad's answers show, every change
// of the file's data since the open came through this handle and every write
// of it succeeded: then what its writer saw written is the file's content,
// and a page cache filled by those writes may serve the next open.
func (f *File) SoleWriter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sole && !f.uncertain
}

func (f *File) reportInBackground() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = f.report(ctx) // a lost hint is sent again at the next report or close
	f.mu.Lock()
	f.reporting = false
	f.mu.Unlock()
}

// Sync makes the file's data durable on every replica (relaxed writes are
// acknowledged before: durability.go) and its length and version in metad
// (fsync).
func (f *File) Sync(ctx context.Context) error {
	if err := f.fs.chunks.Sync(ctx); err != nil {
		return pathErr("fsync", f.path, err)
	}
	if f.session == nil {
		return nil
	}
	return pathErr("fsync", f.path, f.report(ctx))
}

// Truncate sets the file's length; bytes past it are gone, and a later
// extension reads zeros there.
func (f *File) Truncate(ctx context.Context, size int64) error {
	if size < 0 {
		return pathErr("truncate", f.path, syscall.EINVAL)
	}
	if err := f.spill(ctx); err != nil {
		return pathErr("truncate", f.path, err)
	}
	// While its changes are the file's only ones, the truncate is made
	// conditional on the Gen they left, so that the Gen it leaves is known
	// to be its own as well.
	f.mu.Lock()
	req := metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: uint64(size)}
	sole := f.sole
	if sole {
		req.Mask, req.Gen = req.Mask|metaapi.IfGenIs, f.inode.Gen
	}
	f.mu.Unlock()
	in, err := f.fs.Meta().SetAttr(ctx, f.inode.ID, req)
	if sole && Errno(err) == syscall.ECANCELED {
		sole, req.Mask = false, metaapi.SetSize // changed by another since
		in, err = f.fs.Meta().SetAttr(ctx, f.inode.ID, req)
	}
	if err != nil {
		f.mu.Lock()
		f.sole = false // it may have landed all the same
		f.mu.Unlock()
		return pathErr("truncate", f.path, err)
	}
	f.mu.Lock()
	f.sole = f.sole && sole
	f.inode = in
	f.end = min(f.end, uint64(size))
	f.mu.Unlock()
	return nil
}

// ensureHint grows the file's chain-count hint before a write reaches past
// it, so that length settling after a crash asks every chain that may hold
// a chunk (see core/layout/hint.go).
func (f *File) ensureHint(ctx context.Context, end uint64) error {
	l := f.inode.Layout
	if l.ChunkSize == 0 || l.Stripe == 0 {
		return nil
	}
	chunks := (end + uint64(l.ChunkSize) - 1) / uint64(l.ChunkSize)
	f.mu.Lock()
	cur := f.inode.StripeHint
	f.mu.Unlock()
	want := layout.GrowHint(cur, chunks, l.Stripe)
	if want == cur {
		return nil
	}
	in, err := f.fs.Meta().SetAttr(ctx, f.inode.ID, metaapi.SetAttrReq{Mask: metaapi.SetStripeHint, StripeHint: want})
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.inode.StripeHint = max(f.inode.StripeHint, in.StripeHint)
	f.mu.Unlock()
	return nil
}

// CloseContext ends a write open, reporting the length written.
func (f *File) CloseContext(ctx context.Context) error {
	if f.session == nil {
		return nil
	}
	if done, err := f.closeHeld(ctx); done {
		return err
	}
	f.mu.Lock()
	end, wrote, tv, exact := f.end, f.wrote, f.inode.TruncateVer, !f.uncertain
	f.mu.Unlock()
	r, err := callMetaFor(ctx, f.fs, f.inode.ID, func(m metaapi.Client) (*metaapi.InodeResp, error) {
		return m.Close(ctx, &metaapi.CloseReq{Session: f.session, TruncateVer: tv, Length: end, Wrote: wrote, Exact: exact})
	})
	if err != nil {
		return pathErr("close", f.path, err)
	}
	f.closed(r.Inode, wrote)
	return nil
}

// closed takes the inode a close answered with.
func (f *File) closed(in metaapi.Inode, wrote bool) {
	f.mu.Lock()
	f.noteGen(in.Gen, wrote)
	f.inode, f.session, f.wrote = in, nil, false
	f.mu.Unlock()
	if f.path != "" { // a file opened by inode (OpenInode) has no path to cache
		f.fs.cache.put(path.Clean("/"+f.path), in) // with its settled length
	}
}

// Close implements io.Closer.
func (f *File) Close() error { return f.CloseContext(context.Background()) }

var (
	_ io.ReaderAt = (*File)(nil)
	_ io.WriterAt = (*File)(nil)
)
