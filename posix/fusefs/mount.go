// Package fusefs is the POSIX mount of flyfs: a go-fuse raw file system over
// core/client's inode API. Kernel node ids are flyfs inode ids (the root is
// 1 on both sides), so the file system keeps no per-node state: only open
// files, open directory listings and the native API's registrations.
package fusefs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/flyfs/flyfs/core/client"
)

// Options shape a mount. Zero values take the defaults.
type Options struct {
	// AttrTimeout and EntryTimeout are how long the kernel trusts an
	// inode's attributes and a name's lookup (also a failed lookup):
	// changes by other clients show up within them. Default 1 s.
	AttrTimeout  time.Duration
	EntryTimeout time.Duration
	// OpTimeout bounds every call to the cluster: past it the operation
	// fails with EIO instead of hanging. Default 30 s.
	OpTimeout time.Duration
	// AllowOther lets users other than the mounting one use the mount
	// (the kernel still checks permissions: default_permissions).
	AllowOther bool
	// ReadAheadKB sets the mount's kernel read-ahead (default 4096 KiB;
	// negative: leave the kernel's 128 KiB).
	ReadAheadKB int
	// ReadAroundKB is the window read around a small read of a file that
	// fits in memory (readaround.go; default 64 KiB; negative: none). It
	// is rounded down to a power of two of at least a page.
	ReadAroundKB int
	// ReadAroundMaxFile: larger files get no read-around (default an
	// eighth of the machine's memory).
	ReadAroundMaxFile uint64
	// FsName is shown as the source in /proc/mounts (default "flyfs").
	FsName string
	// Capacity reports the cluster's disk space for statfs (df); without
	// it free space shows as 1 PiB.
	Capacity func(ctx context.Context) (used, free uint64, err error)
	// Debug logs every FUSE request.
	Debug bool
	// Log receives the mount's own messages (default: discarded); go-fuse's
	// own lines come at debug (every request at info with Debug).
	Log *slog.Logger
	// Registerer receives the mount's metrics (flyfs_mount_*: every FUSE
	// operation's latency and errors by errno, bytes read and written);
	// nil: none. Mounts of one process sharing a registerer add up.
	Registerer prometheus.Registerer
}

func (o *Options) defaults() {
	if o.AttrTimeout == 0 {
		o.AttrTimeout = time.Second
	}
	if o.EntryTimeout == 0 {
		o.EntryTimeout = time.Second
	}
	if o.AttrTimeout < 0 {
		o.AttrTimeout = 0
	}
	if o.EntryTimeout < 0 {
		o.EntryTimeout = 0
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 30 * time.Second
	}
	if o.ReadAheadKB == 0 {
		o.ReadAheadKB = 4096
	}
	if o.ReadAroundKB == 0 {
		o.ReadAroundKB = 64
	}
	if o.ReadAroundMaxFile == 0 {
		var si unix.Sysinfo_t
		if unix.Sysinfo(&si) == nil {
			o.ReadAroundMaxFile = uint64(si.Totalram) * uint64(si.Unit) / 8
		}
	}
	if o.FsName == "" {
		o.FsName = "flyfs"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Mounted is a live mount.
type Mounted struct {
	dir    string
	srv    *fuse.Server
	fsys   *fileSystem
	done   chan struct{}
	stop   context.CancelFunc
	unmnt  sync.Once
	unmErr error
}

// Mount mounts fs at mountpoint and serves it until Unmount, until the
// kernel unmounts it (umount, flyfs umount), or until ctx is done. It mounts
// directly with mount(2) when it can (root, no fusermount needed) and falls
// back to fusermount otherwise.
func Mount(ctx context.Context, fs *client.FS, mountpoint string, opts Options) (*Mounted, error) {
	opts.defaults()
	dir, err := filepath.Abs(mountpoint)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("fusefs: mount point: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("fusefs: mount point %s is not a directory", dir)
	}
	fsys := newFileSystem(fs, opts)
	var raw fuse.RawFileSystem = fsys
	if m := newMetrics(opts.Registerer); m != nil {
		raw = &metered{fileSystem: fsys, m: m}
	}
	mo := &fuse.MountOptions{
		AllowOther: opts.AllowOther,
		// The kernel checks permissions from our attributes: EACCES for a
		// user the mode bits leave out, without a round trip.
		Options:  []string{"default_permissions"},
		MaxWrite: 1 << 20,
		// Readahead requests run in the background; let enough of them be
		// in flight to keep the chains busy.
		MaxBackground:        64,
		MaxReadAhead:         1 << 20,
		FsName:               opts.FsName,
		Name:                 "flyfs",
		DirectMount:          true,
		EnableSymlinkCaching: true, // a symlink's target never changes
		// The page cache is dropped by us, when a file's Gen says its data
		// changed (checkCache, and an open without KEEP_CACHE), not by the
		// kernel whenever the mtime it is told differs from its own.
		ExplicitDataCacheControl: true,
		// Read replies are buffers in memory: splicing them means one more
		// copy into a pipe (and a 1 MiB reply plus its header does not fit
		// the default pipe at all, which go-fuse logs for every read).
		DisableSplice: true,
		// DONT_MASK: creates arrive with the creator's umask beside the
		// mode, for metad to apply unless a default ACL takes its place.
		ExtraCapabilities: fuse.CAP_ATOMIC_O_TRUNC | fuse.CAP_DONT_MASK,
		// fcntl and flock locks are the cluster's (locks.go), not this
		// kernel's alone.
		EnableLocks: true,
		// POSIX ACLs: the kernel enforces the system.posix_acl_* xattrs
		// metad keeps (and keeps in step with the mode).
		EnableAcl: true,
		Debug:     opts.Debug,
		Logger:    log.New(goFuseLog(opts), "", 0),
	}
	srv, err := fuse.NewServer(raw, dir, mo)
	if err != nil {
		fsys.native.Close()
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	m := &Mounted{dir: dir, srv: srv, fsys: fsys, done: make(chan struct{})}
	go func() {
		srv.Serve()
		fsys.shutdown()
		close(m.done)
	}()
	if err := srv.WaitMount(); err != nil {
		m.Unmount()
		return nil, fmt.Errorf("fusefs: mount %s: %w", dir, err)
	}
	if opts.ReadAheadKB > 0 {
		if err := SetReadAhead(dir, opts.ReadAheadKB); err != nil {
			opts.Log.Info("fusefs: read-ahead left at the kernel default", "err", err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	m.stop = stop
	go func() {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				m.Unmount()
			}
		case <-m.done:
		}
	}()
	opts.Log.Info("fusefs: mounted", "dir", dir)
	return m, nil
}

// Dir is the mount point.
func (m *Mounted) Dir() string { return m.dir }

// Wait blocks until the mount is gone (Unmount, umount, or ctx done).
func (m *Mounted) Wait() { <-m.done }

// Unmount unmounts and waits for the serving loop to end; open files'
// write sessions are closed. A mount still in use is detached lazily and its
// connection aborted, so Unmount always returns.
func (m *Mounted) Unmount() error {
	m.unmnt.Do(func() {
		if m.stop != nil {
			defer m.stop()
		}
		err := m.srv.Unmount()
		if err != nil {
			// Busy: detach it from the namespace and cut the connection,
			// which fails whatever still uses it with ENOTCONN.
			dev := mountDev(m.dir)
			if derr := syscall.Unmount(m.dir, syscall.MNT_DETACH); derr != nil && !errors.Is(derr, syscall.EINVAL) {
				m.unmErr = fmt.Errorf("fusefs: unmount %s: %v; lazy unmount: %w", m.dir, err, derr)
			}
			abortConn(dev)
		}
		select {
		case <-m.done:
		case <-time.After(30 * time.Second):
			if m.unmErr == nil {
				m.unmErr = fmt.Errorf("fusefs: %s: serving loop did not end after unmount", m.dir)
			}
		}
	})
	return m.unmErr
}

// Unmount unmounts a flyfs mount point served by another process: the
// `flyfs umount` helper. It uses umount(2) when permitted, else fusermount.
func Unmount(dir string, lazy bool) error {
	flags := 0
	if lazy {
		flags = syscall.MNT_DETACH
	}
	err := syscall.Unmount(dir, flags)
	if err == nil || !errors.Is(err, syscall.EPERM) {
		return err
	}
	for _, prog := range []string{"fusermount3", "fusermount"} {
		if p, lerr := execLookPath(prog); lerr == nil {
			args := []string{"-u"}
			if lazy {
				args = append(args, "-z")
			}
			return runCmd(p, append(args, dir)...)
		}
	}
	return err
}

// goFuseLog takes go-fuse's own log lines: at debug level, as they can come
// per request, unless the mount asked for every request to be logged.
func goFuseLog(opts Options) *slogWriter {
	level := slog.LevelDebug
	if opts.Debug {
		level = slog.LevelInfo
	}
	return &slogWriter{l: opts.Log, level: level}
}

type slogWriter struct {
	l     *slog.Logger
	level slog.Level
}

func (w *slogWriter) Write(p []byte) (int, error) {
	w.l.Log(context.Background(), w.level, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
