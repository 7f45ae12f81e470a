package metad

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/kvmetrics"
	"github.com/flyfs/flyfs/core/observe"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/metad/ns"
	"github.com/fxamacker/cbor/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a metadata service.
type Config struct {
	KV        *kv.DB
	Namespace ns.Options
	RPC       rpc.Options
	Logger    *slog.Logger
	// Routing, when set, supplies the chain tables new files are laid out
	// over; DefaultChunkSize (1 MiB) and DefaultStripe (16 chains) apply
	// where a directory's layout does not say.
	Routing          routing.Source
	DefaultChunkSize uint32
	DefaultStripe    uint32
	// Storage, with Routing, turns on the GC worker, which deletes removed
	// files' chunks: GCBatch entries every GCInterval (default 1 s).
	Storage    *rpc.Client
	GCInterval time.Duration
	GCBatch    int
	// Mgmtd, when set with Addr, registers this metad (so clients find it)
	// and reaps the write sessions of clients that stopped registering,
	// every ReapEvery (default 10 s). ID names it (default: Addr).
	Mgmtd     *client.Mgmtd
	Addr, ID  string
	ReapEvery time.Duration
	// MasterKey seals access-key secrets in the store (keys.MasterKeySize
	// bytes; every metad of a cluster needs the same). Without it the
	// access-key methods refuse, naming what is missing.
	MasterKey []byte
	// Registerer, when set, receives the metadata service's metrics
	// (flyfs_metad_*, its KV transactions among them; docs/metrics.md),
	// labelled id=<ID, or Addr>. The RPC server's go to RPC.Registerer.
	Registerer prometheus.Registerer
}

// Server serves the namespace over RPC.
type Server struct {
	ns      *ns.Namespace
	rpc     *rpc.Server
	log     *slog.Logger
	routing routing.Source
	storage storageapi.Client
	chunks  *client.ChunkIO // spills inline files (nil without Storage)
	stop    context.CancelFunc
	done    chan struct{}
	bg      sync.WaitGroup // registration and session reaping
	metrics *metrics       // nil without Config.Registerer
}

// New opens the namespace (creating its root on first use) and registers the
// handlers.
func New(cfg Config) (*Server, error) {
	if cfg.KV == nil {
		return nil, errors.New("metad: no KV store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var reg prometheus.Registerer
	if cfg.Registerer != nil {
		id := cfg.ID
		if id == "" {
			id = cfg.Addr
		}
		reg = observe.With(cfg.Registerer, prometheus.Labels{"id": id})
		cfg.KV = cfg.KV.WithHooks(kvmetrics.Hooks(reg, "metad"))
	}
	if cfg.Routing != nil && cfg.Namespace.NewFileLayout == nil {
		cfg.Namespace.NewFileLayout = newLayoutPicker(cfg.Routing, cfg.DefaultChunkSize, cfg.DefaultStripe, cfg.Logger).pick
	}
	if cfg.Mgmtd != nil {
		if err := checkCluster(context.Background(), cfg.KV, cfg.Mgmtd); err != nil {
			return nil, err
		}
	}
	if cfg.Routing == nil || cfg.Storage == nil {
		cfg.Namespace.InlineMax = 0 // an inline file could not be written to again
	}
	n, err := ns.New(cfg.KV, cfg.Namespace)
	if err != nil {
		return nil, fmt.Errorf("metad: %w", err)
	}
	s := &Server{ns: n, rpc: rpc.NewServer(cfg.RPC), log: cfg.Logger, routing: cfg.Routing, done: make(chan struct{}),
		metrics: newMetrics(reg, n)}
	ctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if cfg.Routing != nil && cfg.Storage != nil {
		if cfg.GCInterval <= 0 {
			cfg.GCInterval = time.Second
		}
		if cfg.GCBatch <= 0 {
			cfg.GCBatch = 64
		}
		s.storage = storageapi.Client{RPC: cfg.Storage}
		s.chunks = client.NewChunkIO(cfg.Routing, cfg.Storage, 0)
		go func() { defer close(s.done); s.runGC(ctx, cfg.GCInterval, cfg.GCBatch) }()
	} else {
		close(s.done)
	}
	if cfg.Mgmtd != nil && cfg.Addr != "" {
		s.startRegistry(ctx, cfg)
	}
	handle(s, metaapi.MethodStat, s.stat)
	handle(s, metaapi.MethodLookup, s.lookup)
	handle(s, metaapi.MethodResolve, s.resolve)
	handle(s, metaapi.MethodCreate, s.create)
	handle(s, metaapi.MethodMkdir, s.mkdir)
	handle(s, metaapi.MethodSymlink, s.symlink)
	handle(s, metaapi.MethodLink, s.link)
	handle(s, metaapi.MethodReadlink, s.readlink)
	handle(s, metaapi.MethodReadDir, s.readDir)
	handle(s, metaapi.MethodUnlink, s.unlink)
	handle(s, metaapi.MethodRmdir, s.rmdir)
	handle(s, metaapi.MethodRename, s.rename)
	handle(s, metaapi.MethodClose, s.close)
	handle(s, metaapi.MethodReport, s.report)
	handle(s, metaapi.MethodMkdirAll, s.mkdirAll)
	handle(s, metaapi.MethodRemoveAll, s.removeAll)
	handle(s, metaapi.MethodOpen, s.open)
	handle(s, metaapi.MethodSetAttr, s.setAttr)
	handle(s, metaapi.MethodStatFS, s.statFS)
	handle(s, metaapi.MethodGetXattr, s.getXattr)
	handle(s, metaapi.MethodSetXattr, s.setXattr)
	handle(s, metaapi.MethodListXattr, s.listXattr)
	handle(s, metaapi.MethodRemoveXattr, s.removeXattr)
	handle(s, metaapi.MethodSetLayout, s.setLayout)
	handle(s, metaapi.MethodGetLayout, s.getLayout)
	handle(s, metaapi.MethodFsck, s.fsck)
	handle(s, metaapi.MethodMknod, s.mknod)
	handle(s, metaapi.MethodSync, s.sync)
	handle(s, metaapi.MethodLockSession, s.lockSession)
	handle(s, metaapi.MethodGetLock, s.getLock)
	handle(s, metaapi.MethodSetLock, s.setLock)
	handle(s, metaapi.MethodCollect, s.handleCollect)
	s.serveVersions()
	if err := s.serveKeys(cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Namespace exposes the namespace (GC workers, fsck).
func (s *Server) Namespace() *ns.Namespace { return s.ns }

// Serve serves RPCs on l until Close.
func (s *Server) Serve(l net.Listener) error { return s.rpc.Serve(l) }

// Close stops serving and the GC worker.
func (s *Server) Close() error {
	s.stop()
	<-s.done
	s.bg.Wait()
	s.metrics.close()
	return s.rpc.Close()
}

// wire maps a namespace error onto the wire: errnos travel as errnos, KV
// errors that outlived the retry loop as Unavailable (the client may retry:
// requests are idempotent), anything else as Internal.
func wire(err error) error {
	if err == nil {
		return nil
	}
	var e ns.Errno
	if errors.As(err, &e) {
		return metaapi.ErrnoError(e.Errno(), err.Error())
	}
	var ke *kv.Error
	if errors.As(err, &ke) {
		if kv.IsRetryable(err) || errors.Is(err, kv.ErrTooManyTries) {
			return rpc.Errorf(rpc.Unavailable, "metad: %v", err)
		}
		return metaapi.ErrnoError(syscall.EIO, err.Error())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return rpc.Errorf(rpc.Internal, "metad: %v", err)
}

func toWire(in ns.Inode) metaapi.Inode {
	return metaapi.Inode{ID: in.ID, Type: metaapi.Type(in.Type), Mode: in.Mode, UID: in.UID, GID: in.GID,
		Atime: in.Atime, Mtime: in.Mtime, Ctime: in.Ctime, Nlink: in.Nlink, Length: in.Length,
		TruncateVer: in.TruncateVer, Layout: in.Layout, Target: in.Target, Gen: in.Gen, Implicit: in.Implicit, StripeHint: in.StripeHint,
		Rdev: in.Rdev, VersionID: in.VersionID, Versions: in.Versions,
		RetainUntil: in.RetainUntil, RetainMode: metaapi.RetainMode(in.RetainMode), LegalHold: in.LegalHold,
		Data: in.Data, Layers: in.Layers, Inline: in.Inline, InlineOmitted: in.InlineLen > 0 && in.Inline == nil}
}

// listWire is toWire for a listing: an inline file's bytes are left out (a
// page of small files would carry them all), and said to be.
func listWire(in ns.Inode) metaapi.Inode {
	in.Inline = nil
	return toWire(in)
}

func inodeResp(in ns.Inode, err error) (*metaapi.InodeResp, []byte, error) {
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.InodeResp{Inode: toWire(in)}, nil, nil
}

func empty(err error) (*metaapi.Empty, []byte, error) {
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.Empty{}, nil, nil
}

func (s *Server) stat(ctx context.Context, r *metaapi.InodeReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Stat(ctx, r.Ino))
}

func (s *Server) lookup(ctx context.Context, r *metaapi.LookupReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Lookup(ctx, r.Parent, r.Name))
}

func (s *Server) resolve(ctx context.Context, r *metaapi.ResolveReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	if r.WithInline || r.Xattr != "" {
		in, v, found, err := s.ns.ResolveRead(ctx, r.Path, r.FollowLast, r.WithInline, r.Xattr)
		resp, _, err := inodeResp(in, err)
		if err == nil {
			resp.Xattr, resp.HasXattr = v, found
		}
		return resp, nil, err
	}
	return inodeResp(s.ns.Resolve(ctx, r.Path, r.FollowLast))
}

func (s *Server) readlink(ctx context.Context, r *metaapi.InodeReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	target, err := s.ns.Readlink(ctx, r.Ino)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.InodeResp{Inode: metaapi.Inode{ID: r.Ino, Type: metaapi.TypeSymlink, Target: target}}, nil, nil
}

func clientID(c uint64) ns.ClientID { return ns.ClientID(strconv.FormatUint(c, 16)) }

func (s *Server) create(ctx context.Context, r *metaapi.CreateReq, _ []byte) (*metaapi.CreateResp, []byte, error) {
	var res ns.CreateResult
	err := s.spillRetry(ctx, func() (err error) {
		res, err = s.ns.Create(ctx, ns.CreateRequest{ReqID: ns.RequestID(r.ReqID), Parent: r.Parent, Name: r.Name, Mode: r.Mode,
			Exclusive: r.Exclusive, Truncate: r.Truncate, Write: r.Write, Client: clientID(r.Client), UID: r.UID, GID: r.GID, Umask: r.Umask})
		return err
	})
	if err != nil {
		return nil, nil, wire(err)
	}
	return openResp(res.Inode, res.Created, res.Session)
}

func openResp(in ns.Inode, created bool, sess *ns.Session) (*metaapi.CreateResp, []byte, error) {
	resp := &metaapi.CreateResp{Inode: toWire(in), Created: created}
	if sess != nil {
		var err error
		if resp.Session, err = cbor.Marshal(sess); err != nil {
			return nil, nil, rpc.Errorf(rpc.Internal, "encode session: %v", err)
		}
	}
	return resp, nil, nil
}

func (s *Server) mkdir(ctx context.Context, r *metaapi.MkdirReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Mkdir(ctx, ns.MkdirRequest{ReqID: ns.RequestID(r.ReqID), Parent: r.Parent, Name: r.Name, Mode: r.Mode, UID: r.UID, GID: r.GID, Umask: r.Umask}))
}

func (s *Server) symlink(ctx context.Context, r *metaapi.SymlinkReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Symlink(ctx, ns.SymlinkRequest{ReqID: ns.RequestID(r.ReqID), Parent: r.Parent, Name: r.Name, Target: r.Target, UID: r.UID, GID: r.GID}))
}

func (s *Server) mknod(ctx context.Context, r *metaapi.MknodReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Mknod(ctx, ns.MknodRequest{ReqID: ns.RequestID(r.ReqID), Parent: r.Parent, Name: r.Name,
		Type: ns.InodeType(r.Type), Mode: r.Mode, Rdev: r.Rdev, UID: r.UID, GID: r.GID, Umask: r.Umask}))
}

func (s *Server) link(ctx context.Context, r *metaapi.LinkReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Link(ctx, ns.LinkRequest{ReqID: ns.RequestID(r.ReqID), Ino: r.Ino, NewParent: r.NewParent, NewName: r.NewName}))
}

func (s *Server) clone(ctx context.Context, r *metaapi.CloneReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.Clone(ctx, ns.CloneRequest{ReqID: ns.RequestID(r.ReqID), Src: r.Src, Parent: r.Parent, Name: r.Name,
		Preserve: r.Preserve, Mode: r.Mode, UID: r.UID, GID: r.GID}))
}

func (s *Server) cloneInto(ctx context.Context, r *metaapi.CloneIntoReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	var sess ns.Session
	if err := cbor.Unmarshal(r.Session, &sess); err != nil {
		return nil, nil, metaapi.ErrnoError(syscall.EBADF, "bad session handle")
	}
	return inodeResp(s.ns.ShareInto(ctx, ns.RequestID(r.ReqID), r.Src, sess))
}

func (s *Server) readDir(ctx context.Context, r *metaapi.ReadDirReq, _ []byte) (*metaapi.ReadDirResp, []byte, error) {
	ents, more, err := s.ns.ReadDir(ctx, r.Dir, r.After, r.Limit)
	if err != nil {
		return nil, nil, wire(err)
	}
	resp := &metaapi.ReadDirResp{More: more, Entries: make([]metaapi.DirEntry, len(ents))}
	for i, e := range ents {
		resp.Entries[i] = metaapi.DirEntry{Name: e.Name, Ino: e.Ino, Type: metaapi.Type(e.Type)}
	}
	if r.Plus && len(ents) > 0 {
		ids := make([]uint64, len(ents))
		for i, e := range ents {
			ids[i] = e.Ino
		}
		ins, vals, err := s.ns.StatManyXattr(ctx, ids, r.Xattr)
		if err != nil {
			return nil, nil, wire(err)
		}
		for i := range ins {
			if ins[i] != nil {
				w := listWire(*ins[i])
				resp.Entries[i].Inode = &w
				resp.Entries[i].Xattr = vals[i]
			}
		}
	}
	return resp, nil, nil
}

func (s *Server) unlink(ctx context.Context, r *metaapi.RemoveReq, _ []byte) (*metaapi.ChangeResp, []byte, error) {
	return changeResp(s.ns.UnlinkChange(ctx, removeReq(r)))
}

func changeResp(c ns.Change, err error) (*metaapi.ChangeResp, []byte, error) {
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.ChangeResp{DirTime: c.DirTime, Subdirs: c.Subdirs}, nil, nil
}

func removeReq(r *metaapi.RemoveReq) ns.RemoveRequest {
	return ns.RemoveRequest{ReqID: ns.RequestID(r.ReqID), Parent: r.Parent, Name: r.Name,
		IfIno: r.IfIno, IfGen: r.IfGen, PruneImplicit: r.PruneImplicit}
}

func (s *Server) rmdir(ctx context.Context, r *metaapi.RemoveReq, _ []byte) (*metaapi.Empty, []byte, error) {
	return empty(s.ns.Rmdir(ctx, removeReq(r)))
}

func (s *Server) removeAll(ctx context.Context, r *metaapi.RemoveReq, _ []byte) (*metaapi.Empty, []byte, error) {
	return empty(s.ns.RemoveAll(ctx, removeReq(r)))
}

func (s *Server) rename(ctx context.Context, r *metaapi.RenameReq, _ []byte) (*metaapi.ChangeResp, []byte, error) {
	return changeResp(s.ns.RenameChange(ctx, ns.RenameRequest{ReqID: ns.RequestID(r.ReqID), SrcParent: r.SrcParent, SrcName: r.SrcName,
		DstParent: r.DstParent, DstName: r.DstName, Flags: r.Flags,
		IfDstIno: r.IfDstIno, IfDstGen: r.IfDstGen, PruneImplicit: r.PruneImplicit, Lock: lockOf(r.Lock)}))
}

func (s *Server) close(ctx context.Context, r *metaapi.CloseReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	var sess ns.Session
	if err := cbor.Unmarshal(r.Session, &sess); err != nil {
		return nil, nil, metaapi.ErrnoError(syscall.EBADF, "bad session handle")
	}
	in, err := s.ns.Close(ctx, sess, &ns.LengthHint{TruncateVer: r.TruncateVer, Length: r.Length, Wrote: r.Wrote, Inline: r.Inline})
	if err == nil && r.Wrote && !r.Exact {
		in, err = s.settleIfLastWriter(ctx, in)
	}
	return inodeResp(in, err)
}

func (s *Server) report(ctx context.Context, r *metaapi.ReportReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.ReportLength(ctx, r.Ino, r.TruncateVer, r.Length, r.Wrote))
}

func (s *Server) mkdirAll(ctx context.Context, r *metaapi.MkdirAllReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.MkdirAll(ctx, ns.MkdirAllRequest{ReqID: ns.RequestID(r.ReqID), Path: r.Path, Mode: r.Mode,
		UID: r.UID, GID: r.GID, Implicit: r.Implicit}))
}

func (s *Server) open(ctx context.Context, r *metaapi.OpenReq, _ []byte) (*metaapi.OpenResp, []byte, error) {
	var res ns.OpenResult
	err := s.spillRetry(ctx, func() (err error) {
		if r.Flags&(syscall.O_ACCMODE|syscall.O_TRUNC) == syscall.O_RDONLY {
			res.Inode, err = s.ns.OpenRead(ctx, r.Ino, r.KnownGen)
			return err
		}
		res, err = s.ns.Open(ctx, r.Ino, r.Flags, clientID(r.Client))
		return err
	})
	if err != nil {
		return nil, nil, wire(err)
	}
	return openResp(res.Inode, false, res.Session)
}

func (s *Server) setAttr(ctx context.Context, r *metaapi.SetAttrReq, _ []byte) (*metaapi.InodeResp, []byte, error) {
	return inodeResp(s.ns.SetAttr(ctx, r.Ino, ns.SetAttrRequest{Mask: ns.AttrMask(r.Mask), Mode: r.Mode, UID: r.UID, GID: r.GID,
		Atime: r.Atime, Mtime: r.Mtime, Size: r.Size, Implicit: r.Implicit, StripeHint: r.StripeHint, Gen: r.Gen}))
}

func (s *Server) statFS(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.StatFSResp, []byte, error) {
	st, err := s.ns.StatFS(ctx)
	if err != nil {
		return nil, nil, wire(err)
	}
	q, err := s.ns.GCQueue(ctx)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.StatFSResp{Inodes: st.Inodes, Bytes: st.Bytes, GCQueue: int64(q.Entries), GCBytes: q.Bytes,
		GCDue: int64(q.Due), GCDueBytes: q.DueBytes, GCGraceSec: int64(s.ns.GCGrace() / time.Second)}, nil, nil
}

func (s *Server) getXattr(ctx context.Context, r *metaapi.XattrReq, _ []byte) (*metaapi.XattrResp, []byte, error) {
	v, err := s.ns.GetXattr(ctx, r.Ino, r.Name)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.XattrResp{Value: v}, nil, nil
}

func (s *Server) setXattr(ctx context.Context, r *metaapi.XattrReq, _ []byte) (*metaapi.Empty, []byte, error) {
	return empty(s.ns.SetXattr(ctx, r.Ino, r.Name, r.Value, r.Flags))
}

func (s *Server) listXattr(ctx context.Context, r *metaapi.XattrReq, _ []byte) (*metaapi.XattrResp, []byte, error) {
	names, err := s.ns.ListXattr(ctx, r.Ino)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.XattrResp{Names: names}, nil, nil
}

func (s *Server) removeXattr(ctx context.Context, r *metaapi.XattrReq, _ []byte) (*metaapi.Empty, []byte, error) {
	return empty(s.ns.RemoveXattr(ctx, r.Ino, r.Name))
}

func (s *Server) setLayout(ctx context.Context, r *metaapi.LayoutReq, _ []byte) (*metaapi.Empty, []byte, error) {
	_, err := s.ns.SetLayout(ctx, r.Ino, r.Layout)
	return empty(err)
}

func (s *Server) getLayout(ctx context.Context, r *metaapi.InodeReq, _ []byte) (*metaapi.LayoutReq, []byte, error) {
	l, err := s.ns.GetLayout(ctx, r.Ino)
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.LayoutReq{Ino: r.Ino, Layout: l}, nil, nil
}

func (s *Server) fsck(ctx context.Context, _ *metaapi.Empty, _ []byte) (*metaapi.FsckResp, []byte, error) {
	r, err := ns.Check(ctx, s.ns.DB())
	if err != nil {
		return nil, nil, wire(err)
	}
	return &metaapi.FsckResp{Inodes: r.Inodes, Dirs: r.Dirs, Files: r.Files, Symlinks: r.Symlinks, Specials: r.Specials, Dentries: r.Dentries,
		GCQueued: r.GCQueued, Sessions: r.Sessions, Problems: r.Problems, Summary: r.String()}, nil, nil
}
