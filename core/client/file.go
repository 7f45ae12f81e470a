package client

import (
	"context"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
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
	fs.cache.forgetTree(path.Clean("/" + p))
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
	r, err := callMeta(ctx, f.fs, func(m metaapi.Client) (*metaapi.InodeResp, error) {
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
