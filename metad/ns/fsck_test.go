package ns

import (
	"strings"
	"testing"

	"github.com/flyfs/flyfs/core/kv"
)

// TestFsckDetects corrupts a clean namespace in one way at a time and checks
// that Check reports it.
func TestFsckDetects(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(e *tenv, tx kv.Txn, ids map[string]uint64)
		want    string
	}{
		{"dangling dentry", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(dentryKey(RootID, "ghost"), encode(&Dentry{Ino: 1 << 40, Type: TypeFile}))
		}, "inode missing"},
		{"wrong nlink", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			in, _ := getInode(ctx, tx, ids["/d/f"], false)
			in.Nlink = 3
			tx.Set(inodeKey(in.ID), encode(in))
		}, "nlink 3, 1 dentries"},
		{"hard link to a directory", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(dentryKey(RootID, "d2"), encode(&Dentry{Ino: ids["/d/e"], Type: TypeDir}))
		}, "2 dentries (want 1)"},
		{"dentry type mismatch", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(dentryKey(ids["/d"], "f"), encode(&Dentry{Ino: ids["/d/f"], Type: TypeDir}))
		}, "says dir, inode is file"},
		{"leaked file", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			in, _ := getInode(ctx, tx, ids["/d/f"], false)
			in.Nlink = 0
			tx.Set(inodeKey(in.ID), encode(in))
			tx.Clear(dentryKey(ids["/d"], "f"))
		}, "leaked"},
		{"directory cycle", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			// Move /d under /d/e by hand, without the loop check.
			tx.Clear(dentryKey(RootID, "d"))
			tx.Set(dentryKey(ids["/d/e"], "d"), encode(&Dentry{Ino: ids["/d"], Type: TypeDir}))
			in, _ := getInode(ctx, tx, ids["/d"], false)
			in.Parent = ids["/d/e"]
			tx.Set(inodeKey(in.ID), encode(in))
		}, "cycle"},
		{"parent field out of date", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			in, _ := getInode(ctx, tx, ids["/d/e"], false)
			in.Parent = RootID
			tx.Set(inodeKey(in.ID), encode(in))
		}, "inode says"},
		{"statfs counters off", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			e.ns.writeDelta(tx, 1, statDelta{Inodes: 1})
		}, "statfs counters"},
		{"id never allocated", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(inodeKey(1<<50), encode(&Inode{ID: 1 << 50, Type: TypeFile, Nlink: 1}))
			tx.Set(dentryKey(RootID, "forged"), encode(&Dentry{Ino: 1 << 50, Type: TypeFile}))
		}, "not handed out"},
		{"subdirectory count off", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(subdirKey(ids["/d"], 3), encode(int64(1)))
		}, "nlink counts 2 subdirectories, it has 1"},
		{"subdirectory counted in the wrong shard", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			sub := ids["/d/e"]
			tx.Clear(subdirKey(ids["/d"], sub))
			tx.Set(subdirKey(ids["/d"], sub+1), encode(int64(1)))
		}, "by id mod 16"},
		{"session of a missing inode", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(sessionKey(1<<41, SessionID{1}), encode(&Session{Ino: 1 << 41}))
		}, "sessions of missing inode"},
		{"lock table of a missing inode", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(lockKey(1<<41, LockFlock), encode([]RangeLock{{Holder: LockOwner{"c", 1}, Kind: LockWrite, End: LockEOF}}))
		}, "lock table of missing inode"},
		{"one holder's ranges overlap", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			h := LockOwner{"c", 1}
			tx.Set(lockKey(ids["/d/f"], LockPOSIX), encode([]RangeLock{{Holder: h, Kind: LockRead, End: 9}, {Holder: h, Kind: LockWrite, Start: 5, End: 20}}))
		}, "ranges overlap"},
		{"mode and access ACL disagree", func(e *tenv, tx kv.Txn, ids map[string]uint64) {
			tx.Set(xattrKey(ids["/d/f"], xattrACLAccess), acl(uObj(7), gObj(7), other(7)))
		}, "does not match its access ACL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, testOpts())
			ids := map[string]uint64{}
			for _, p := range []string{"/d", "/d/e"} {
				in, err := e.mkdir(p)
				if err != nil {
					t.Fatal(err)
				}
				ids[p] = in.ID
			}
			r, err := e.create("/d/f", true)
			if err != nil {
				t.Fatal(err)
			}
			ids["/d/f"] = r.Inode.ID
			mustFsck(t, e.db)
			if err := e.db.Run(ctx, func(tx kv.Txn) error { tc.corrupt(e, tx, ids); return nil }); err != nil {
				t.Fatal(err)
			}
			rep, err := Check(ctx, e.db)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Clean() || !strings.Contains(rep.String(), tc.want) {
				t.Fatalf("want a problem mentioning %q, got:\n%s", tc.want, rep.String())
			}
		})
	}
}
