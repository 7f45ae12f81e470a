package metad_test

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/access"
	"github.com/flyfs/flyfs/core/api/metaapi"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/memkv"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/core/rpc/rpctest"
	"github.com/flyfs/flyfs/e2e/harness"
	"github.com/flyfs/flyfs/metad"
	"github.com/flyfs/flyfs/metad/keys"
	"github.com/flyfs/flyfs/metad/ns"
	"github.com/fxamacker/cbor/v2"
)

// metadMethods is every method metad registers, with its request type.
var metadMethods = []rpctest.Method{
	rpctest.M[metaapi.InodeReq](metaapi.MethodStat),
	rpctest.M[metaapi.LookupReq](metaapi.MethodLookup),
	rpctest.M[metaapi.ResolveReq](metaapi.MethodResolve),
	rpctest.M[metaapi.CreateReq](metaapi.MethodCreate),
	rpctest.M[metaapi.MkdirReq](metaapi.MethodMkdir),
	rpctest.M[metaapi.SymlinkReq](metaapi.MethodSymlink),
	rpctest.M[metaapi.LinkReq](metaapi.MethodLink),
	rpctest.M[metaapi.InodeReq](metaapi.MethodReadlink),
	rpctest.M[metaapi.ReadDirReq](metaapi.MethodReadDir),
	rpctest.M[metaapi.RemoveReq](metaapi.MethodUnlink),
	rpctest.M[metaapi.RemoveReq](metaapi.MethodRmdir),
	rpctest.M[metaapi.RenameReq](metaapi.MethodRename),
	rpctest.M[metaapi.CloseReq](metaapi.MethodClose),
	rpctest.M[metaapi.ReportReq](metaapi.MethodReport),
	rpctest.M[metaapi.MkdirAllReq](metaapi.MethodMkdirAll),
	rpctest.M[metaapi.RemoveReq](metaapi.MethodRemoveAll),
	rpctest.M[metaapi.OpenReq](metaapi.MethodOpen),
	rpctest.M[metaapi.SetAttrReq](metaapi.MethodSetAttr),
	rpctest.M[metaapi.Empty](metaapi.MethodStatFS),
	rpctest.M[metaapi.XattrReq](metaapi.MethodGetXattr),
	rpctest.M[metaapi.XattrReq](metaapi.MethodSetXattr),
	rpctest.M[metaapi.XattrReq](metaapi.MethodListXattr),
	rpctest.M[metaapi.XattrReq](metaapi.MethodRemoveXattr),
	rpctest.M[metaapi.LayoutReq](metaapi.MethodSetLayout),
	rpctest.M[metaapi.InodeReq](metaapi.MethodGetLayout),
	rpctest.M[metaapi.Empty](metaapi.MethodFsck),
	rpctest.M[metaapi.MknodReq](metaapi.MethodMknod),
	rpctest.M[metaapi.LockSessionReq](metaapi.MethodLockSession),
	rpctest.M[metaapi.LockReq](metaapi.MethodGetLock),
	rpctest.M[metaapi.LockReq](metaapi.MethodSetLock),
	rpctest.M[metaapi.KeyReq](metaapi.MethodKeyGet),
	rpctest.M[metaapi.Empty](metaapi.MethodKeyList),
	rpctest.M[access.Key](metaapi.MethodKeyCreate),
	rpctest.M[metaapi.KeyReq](metaapi.MethodKeyRevoke),
	rpctest.M[metaapi.KeyGrantsReq](metaapi.MethodKeySetGrants),
	rpctest.M[metaapi.KeyRootReq](metaapi.MethodKeyEnsureRoot),
	rpctest.M[metaapi.KeyRotateReq](metaapi.MethodKeyRotate),
	rpctest.M[metaapi.VersioningReq](metaapi.MethodSetVersioning),
	rpctest.M[metaapi.VersioningReq](metaapi.MethodGetVersioning),
	rpctest.M[metaapi.ListVersionsReq](metaapi.MethodListVersions),
	rpctest.M[metaapi.VersionReq](metaapi.MethodGetVersion),
	rpctest.M[metaapi.DeleteKeyReq](metaapi.MethodDeleteKey),
	rpctest.M[metaapi.DeleteVersionReq](metaapi.MethodDeleteVersion),
	rpctest.M[metaapi.InodeReq](metaapi.MethodVersionScope),
	rpctest.M[metaapi.RetentionReq](metaapi.MethodSetRetention),
	rpctest.M[metaapi.Empty](metaapi.MethodTrashList),
	rpctest.M[metaapi.TrashRestoreReq](metaapi.MethodTrashRestore),
	rpctest.M[metaapi.Empty](metaapi.MethodTrashEmpty),
	rpctest.M[metaapi.ListSessionsReq](metaapi.MethodListSessions),
	rpctest.M[metaapi.CloneReq](metaapi.MethodClone),
	rpctest.M[metaapi.CloneIntoReq](metaapi.MethodCloneInto),
	rpctest.M[metaapi.SnapshotCreateReq](metaapi.MethodSnapshotCreate),
	rpctest.M[metaapi.Empty](metaapi.MethodSnapshotList),
	rpctest.M[metaapi.SnapshotDeleteReq](metaapi.MethodSnapshotDelete),
	rpctest.M[metaapi.Empty](metaapi.MethodSync),
}

func methodIndex(m rpc.Method) uint8 {
	for i, x := range metadMethods {
		if x.ID == m {
			return uint8(i)
		}
	}
	panic("method not in metadMethods: " + m.String())
}

// fuzzMetad is one metad over memkv, laying files out over the chains of
// one storaged (which it asks when settling a file's length and garbage
// collecting removed files), with access keys on.
type fuzzMetad struct {
	fz   *rpctest.Fuzzer
	meta metaapi.Client
	dir  uint64 // /d
	file uint64 // /d/f
	sess []byte // a write session of /d/f
	key  string // an access key's id
}

const metadFuzzToken = "metad-fuzz"

func startFuzzMetad(tb testing.TB) *fuzzMetad {
	tb.Helper()
	watch := &rpctest.PanicWatch{}
	sc := harness.StartStorage(tb, harness.StorageConfig{Nodes: 1, Chains: 4, NoSync: true, Logger: watch.Logger()})
	sc.Routing.Update(func(in *routing.Info) {
		in.Tables = map[uint32][][]routing.ChainID{routing.DefaultTable: {{1, 2, 3, 4}}}
	})
	storage := rpc.NewClient(rpc.Options{Token: sc.Token, Logger: watch.Logger(), DialTimeout: time.Second})
	tb.Cleanup(func() { storage.Close() })
	db := memkv.Open(kv.Options{})
	tb.Cleanup(func() { db.Close() })
	s, err := metad.New(metad.Config{KV: db, Routing: sc.Routing, Storage: storage, GCInterval: 50 * time.Millisecond,
		MasterKey: bytes.Repeat([]byte{7}, keys.MasterKeySize),
		RPC:       rpc.Options{Token: metadFuzzToken, Logger: watch.Logger()}, Logger: watch.Logger()})
	if err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go s.Serve(l)
	tb.Cleanup(func() { s.Close() })

	rc := rpc.NewClient(rpc.Options{Token: metadFuzzToken, Logger: watch.Logger()})
	tb.Cleanup(func() { rc.Close() })
	m := &fuzzMetad{fz: &rpctest.Fuzzer{Addr: l.Addr().String(), Token: metadFuzzToken, Watches: []*rpctest.PanicWatch{watch}},
		meta: metaapi.Client{RPC: rc, Addr: l.Addr().String()}}
	tb.Cleanup(m.fz.Close)
	ctx := context.Background()
	d, err := m.meta.Mkdir(ctx, &metaapi.MkdirReq{ReqID: rid(1), Parent: ns.RootID, Name: "d", Mode: 0o755})
	if err != nil {
		tb.Fatal(err)
	}
	f, err := m.meta.Create(ctx, &metaapi.CreateReq{ReqID: rid(2), Parent: d.Inode.ID, Name: "f", Mode: 0o644, Write: true, Client: 9})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := m.meta.Symlink(ctx, &metaapi.SymlinkReq{ReqID: rid(3), Parent: d.Inode.ID, Name: "l", Target: "f"}); err != nil {
		tb.Fatal(err)
	}
	k, err := m.meta.KeyCreate(ctx, &access.Key{Description: "user", Buckets: map[string]access.Permission{"data": access.Read}})
	if err != nil {
		tb.Fatal(err)
	}
	m.dir, m.file, m.sess, m.key = d.Inode.ID, f.Inode.ID, f.Session, k.Key.ID
	return m
}

func enc(tb testing.TB, v any) []byte {
	b, err := cbor.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// FuzzMetadHandlers sends arbitrary messages to every metad method over
// the wire: no input may panic the server, get an Internal error or be
// decoded differently from the request type, and a well-formed call works
// after each.
func FuzzMetadHandlers(f *testing.F) {
	m := startFuzzMetad(f)
	add := func(method rpc.Method, req any) { f.Add(methodIndex(method), enc(f, req)) }
	add(metaapi.MethodStat, &metaapi.InodeReq{Ino: m.file})
	add(metaapi.MethodLookup, &metaapi.LookupReq{Parent: m.dir, Name: "f"})
	add(metaapi.MethodResolve, &metaapi.ResolveReq{Path: "/d/l", FollowLast: true})
	add(metaapi.MethodCreate, &metaapi.CreateReq{ReqID: rid(10), Parent: m.dir, Name: "g", Mode: 0o644, Exclusive: true, Write: true, Client: 3})
	add(metaapi.MethodMkdir, &metaapi.MkdirReq{ReqID: rid(11), Parent: m.dir, Name: "sub", Mode: 0o755})
	add(metaapi.MethodSymlink, &metaapi.SymlinkReq{ReqID: rid(12), Parent: ns.RootID, Name: "s", Target: "/d/f"})
	add(metaapi.MethodLink, &metaapi.LinkReq{ReqID: rid(13), Ino: m.file, NewParent: ns.RootID, NewName: "hard"})
	add(metaapi.MethodReadlink, &metaapi.InodeReq{Ino: m.file + 1})
	add(metaapi.MethodReadDir, &metaapi.ReadDirReq{Dir: m.dir, After: "a", Limit: 10, Plus: true, Xattr: "user.x"})
	add(metaapi.MethodUnlink, &metaapi.RemoveReq{ReqID: rid(14), Parent: m.dir, Name: "l", IfIno: m.file + 1})
	add(metaapi.MethodRmdir, &metaapi.RemoveReq{ReqID: rid(15), Parent: m.dir, Name: "sub", PruneImplicit: true})
	add(metaapi.MethodRename, &metaapi.RenameReq{ReqID: rid(16), SrcParent: m.dir, SrcName: "f", DstParent: ns.RootID, DstName: "f2", Flags: metaapi.RenameNoReplace})
	add(metaapi.MethodClose, &metaapi.CloseReq{Session: m.sess, Length: 5 << 20, Wrote: true})
	add(metaapi.MethodReport, &metaapi.ReportReq{Ino: m.file, Length: 3 << 20, Wrote: true})
	add(metaapi.MethodMkdirAll, &metaapi.MkdirAllReq{ReqID: rid(17), Path: "/a/b/c", Mode: 0o755, Implicit: true})
	add(metaapi.MethodRemoveAll, &metaapi.RemoveReq{ReqID: rid(18), Parent: ns.RootID, Name: "a"})
	add(metaapi.MethodOpen, &metaapi.OpenReq{Ino: m.file, Flags: 1, Client: 4})
	add(metaapi.MethodSetAttr, &metaapi.SetAttrReq{Ino: m.file, Mask: metaapi.SetSize | metaapi.SetMode | metaapi.SetStripeHint, Mode: 0o600, Size: 7 << 20, StripeHint: 64})
	add(metaapi.MethodStatFS, &metaapi.Empty{})
	add(metaapi.MethodSetXattr, &metaapi.XattrReq{Ino: m.file, Name: "user.x", Value: []byte("v"), Flags: 1})
	add(metaapi.MethodGetXattr, &metaapi.XattrReq{Ino: m.file, Name: "user.x"})
	add(metaapi.MethodListXattr, &metaapi.XattrReq{Ino: m.file})
	add(metaapi.MethodRemoveXattr, &metaapi.XattrReq{Ino: m.file, Name: "user.x"})
	add(metaapi.MethodSetLayout, &metaapi.LayoutReq{Ino: m.dir, Layout: layout.Layout{TableID: routing.DefaultTable, TableVersion: 1, ChunkSize: 1 << 16, Stripe: 2}})
	add(metaapi.MethodGetLayout, &metaapi.InodeReq{Ino: m.file})
	add(metaapi.MethodFsck, &metaapi.Empty{})
	add(metaapi.MethodSync, &metaapi.Empty{})
	add(metaapi.MethodMknod, &metaapi.MknodReq{ReqID: rid(19), Parent: m.dir, Name: "dev", Type: metaapi.TypeCharDev, Mode: 0o600, Rdev: 1<<8 | 3})
	add(metaapi.MethodLockSession, &metaapi.LockSessionReq{Client: "fuzz", TTLms: 10000})
	add(metaapi.MethodSetLock, &metaapi.LockReq{Ino: m.file, Class: metaapi.LockPOSIX, Lock: metaapi.FileLock{Client: "fuzz", Owner: 1, Kind: metaapi.LockWrite, Start: 0, End: 99}})
	add(metaapi.MethodGetLock, &metaapi.LockReq{Ino: m.file, Class: metaapi.LockFlock, Lock: metaapi.FileLock{Client: "other", Owner: 2, Kind: metaapi.LockRead, End: 1<<64 - 1}})
	add(metaapi.MethodKeyGet, &metaapi.KeyReq{ID: m.key})
	add(metaapi.MethodKeyList, &metaapi.Empty{})
	add(metaapi.MethodKeyCreate, &access.Key{Description: "fuzz", Buckets: map[string]access.Permission{"data": access.Read}})
	add(metaapi.MethodKeySetGrants, &metaapi.KeyGrantsReq{ID: m.key, Buckets: map[string]access.Permission{"*": access.ReadWrite}})
	add(metaapi.MethodKeyRevoke, &metaapi.KeyReq{ID: m.key})
	add(metaapi.MethodKeyEnsureRoot, &metaapi.KeyRootReq{})
	add(metaapi.MethodKeyRotate, &metaapi.KeyRotateReq{ID: m.key, Secret: "fuzz-secret-that-is-long-enough-1234567890"})
	add(metaapi.MethodSetVersioning, &metaapi.VersioningReq{Bucket: m.dir, State: metaapi.VersioningEnabled})
	add(metaapi.MethodGetVersioning, &metaapi.VersioningReq{Bucket: m.dir})
	add(metaapi.MethodDeleteKey, &metaapi.DeleteKeyReq{ReqID: rid(20), Bucket: m.dir, Key: "f", PruneImplicit: true})
	add(metaapi.MethodListVersions, &metaapi.ListVersionsReq{Bucket: m.dir, Prefix: "f", Delimiter: "/", AfterKey: "e", AfterSeq: 9, Limit: 3})
	add(metaapi.MethodGetVersion, &metaapi.VersionReq{Bucket: m.dir, Key: "f", ID: "null"})
	add(metaapi.MethodVersionScope, &metaapi.InodeReq{Ino: m.dir})
	add(metaapi.MethodTrashList, &metaapi.Empty{})
	add(metaapi.MethodTrashEmpty, &metaapi.Empty{})
	add(metaapi.MethodListSessions, &metaapi.ListSessionsReq{Limit: 2})
	add(metaapi.MethodClone, &metaapi.CloneReq{ReqID: rid(23), Src: m.file, Parent: m.dir, Name: "clone", Mode: 0o644})
	add(metaapi.MethodCloneInto, &metaapi.CloneIntoReq{ReqID: rid(26), Src: m.file, Session: []byte{0xa1, 0x01, 0x05}})
	add(metaapi.MethodSnapshotCreate, &metaapi.SnapshotCreateReq{ReqID: rid(24), Dir: m.dir, Name: "snap"})
	add(metaapi.MethodSnapshotList, &metaapi.Empty{})
	add(metaapi.MethodSnapshotDelete, &metaapi.SnapshotDeleteReq{ReqID: rid(25), Top: m.dir, Name: "snap"})
	add(metaapi.MethodTrashRestore, &metaapi.TrashRestoreReq{ReqID: rid(22), Ino: m.file, ToParent: m.dir, ToName: "back"})
	add(metaapi.MethodSetRetention, &metaapi.RetentionReq{Ino: m.file, SetRetention: true, Mode: metaapi.RetainGovernance, Until: 1 << 62, SetHold: true, LegalHold: true})
	add(metaapi.MethodDeleteVersion, &metaapi.DeleteVersionReq{ReqID: rid(21), Bucket: m.dir, Key: "a/b/f", ID: "null", PruneImplicit: true})
	f.Add(methodIndex(metaapi.MethodStat), []byte{0xff})
	f.Add(methodIndex(metaapi.MethodCreate), []byte{0xa1, 0x01, 0x43, 1, 2, 3}) // a request id of 3 bytes

	stat := rpctest.M[metaapi.InodeReq](metaapi.MethodStat)
	statRoot := enc(f, &metaapi.InodeReq{Ino: ns.RootID})
	f.Fuzz(func(t *testing.T, method uint8, msg []byte) {
		m.fz.Call(t, metadMethods[int(method)%len(metadMethods)], msg, nil)
		m.fz.Healthy(t, stat, statRoot)
	})
}
