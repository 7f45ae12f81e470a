package client

import (
	"context"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/layout"
)

// OpenInode returns a File over an inode the caller opened through Meta
// (Create or Open); session is the write session, nil for a read-only open.
func (fs *FS) OpenInode(ctx context.Context, in metaapi.Inode, session []byte) (*File, error) {
	if in.Type == metaapi.TypeDir {
		return nil, pathErr("open", "", syscall.EISDIR)
	}
	return fs.file("", in, session)
}

// OpenFile opens a path with open(2) flags (O_CREATE, O_EXCL, O_TRUNC,
// O_WRONLY/O_RDWR) and permission bits for a new file.
func (fs *FS) OpenFile(ctx context.Context, p string, flags int, mode uint32) (*File, error) {
	if flags&os.O_CREATE == 0 {
		in, err := fs.resolveFresh(ctx, p)
		if err != nil {
			return nil, pathErr("open", p, err)
		}
		if in.Type == metaapi.TypeDir {
			return nil, pathErr("open", p, syscall.EISDIR)
		}
		var session []byte
		if writeFlags(flags) || flags&os.O_TRUNC != 0 {
			if in, session, err = fs.Meta().Open(ctx, in.ID, flags, Creds{}); err != nil {
				return nil, pathErr("open", p, err)
			}
			fs.cache.forget(path.Clean("/" + p))
		}
		return fs.file(p, in, session)
	}
	dir, name := path.Split(path.Clean("/" + p))
	parent, err := fs.resolve(ctx, dir)
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	in, session, _, err := fs.Meta().Create(ctx, parent.ID, name, mode, flags, Creds{})
	fs.cache.forget(path.Clean("/" + p))
	if err != nil {
		return nil, pathErr("open", p, err)
	}
	return fs.file(p, in, session)
}

// MkdirAll creates a directory and its missing parents in one transaction.
func (fs *FS) MkdirAll(ctx context.Context, p string, mode uint32) error {
	_, err := fs.Meta().MkdirAll(ctx, path.Clean("/"+p), mode, Creds{}, false)
	return pathErr("mkdir", p, err)
}

// RemoveAll removes a whole tree in one call (a missing path is not an error).
func (fs *FS) RemoveAll(ctx context.Context, p string) error {
	dir, name := path.Split(path.Clean("/" + p))
	parent, err := fs.resolveFresh(ctx, dir)
	if err == nil {
		err = fs.Meta().RemoveAll(ctx, parent.ID, name)
	}
	fs.cache.forget(path.Clean("/" + p))
	if Errno(err) == syscall.ENOENT {
		return nil
	}
	return pathErr("remove", p, err)
}

// report sends the length hint now; wrote says data changed since the last.
func (f *File) report(ctx context.Context) error {
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
		return err
	}
	f.inode.Length, f.inode.Gen, f.inode.Mtime = r.Inode.Length, r.Inode.Gen, r.Inode.Mtime
	return nil
}

func (f *File) reportInBackground() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = f.report(ctx) // a lost hint is sent again at the next report or close
	f.mu.Lock()
	f.reporting = false
	f.mu.Unlock()
}

// Sync makes the file's length and version durable in metad (fsync): data
// is already durable on every replica when WriteAt returns.
func (f *File) Sync(ctx context.Context) error {
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
	in, err := f.fs.Meta().SetAttr(ctx, f.inode.ID, metaapi.SetAttrReq{Mask: metaapi.SetSize, Size: uint64(size)})
	if err != nil {
		return pathErr("truncate", f.path, err)
	}
	f.mu.Lock()
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

// callMetaFor is callMeta with the metad list ordered by rendezvous hashing
// on ino: every client sends one inode's closes and length reports to the
// same live metad, which settles that file's length without racing another.
func callMetaFor[T any](ctx context.Context, fs *FS, ino uint64, op func(m metaapi.Client) (T, error)) (T, error) {
	list := *fs.meta.Load()
	if len(list) < 2 {
		return callMeta(ctx, fs, op)
	}
	best, bestScore := 0, uint64(0)
	for i, m := range list {
		if s := rendezvous(m.Addr, ino); i == 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	first := list[best]
	v, err := op(first)
	if err == nil || !metaUnavailable(err) {
		return v, err
	}
	return callMeta(ctx, fs, op) // the chosen metad is down: any other will do
}

// rendezvous scores (addr, ino): FNV-1a of the address mixed with the inode.
func rendezvous(addr string, ino uint64) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(addr); i++ {
		h ^= uint64(addr[i])
		h *= 1099511628211
	}
	h ^= ino
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
