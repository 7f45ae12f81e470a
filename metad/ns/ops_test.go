package ns

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// step is one operation of the semantics script and the errno it must return
// (0: success). do may also check results and return a non-errno error.
type step struct {
	name string
	want Errno
	do   func(e *tenv) error
}

func okIno(in Inode, err error) error { return err }

// script is the per-operation semantics table. It is a sequence (later steps
// build on earlier ones) and runs as is with and without fault injection.
func script() []step {
	return []step{
		// create / mkdir / lookup / stat
		{"mkdir /a", 0, func(e *tenv) error { return okIno(e.mkdir("/a")) }},
		{"creating in a directory moves its mtime, not its inode", 0, func(e *tenv) error {
			before, err := e.stat("/a")
			if err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			if _, err := e.create("/a/t", true); err != nil {
				return err
			}
			after, err := e.stat("/a")
			if err != nil {
				return err
			}
			if err := e.unlink("/a/t"); err != nil {
				return err
			}
			raw, err := e.ns.view2inode(after.ID)
			if err != nil {
				return err
			}
			return check(after.Mtime > before.Mtime && after.Ctime > before.Ctime && raw.Mtime == before.Mtime,
				"mtime %d -> %d, inode %d", before.Mtime, after.Mtime, raw.Mtime)
		}},
		{"an explicit mtime of a directory holds until its next entry change", 0, func(e *tenv) error {
			if _, err := e.create("/a/t2", true); err != nil {
				return err
			}
			in, err := e.ns.SetAttr(ctx, e.must("/a"), SetAttrRequest{Mask: SetMtime | SetAtime, Mtime: 1e9, Atime: 2e9})
			if err != nil {
				return err
			}
			st, err := e.stat("/a")
			if err != nil {
				return err
			}
			if err := check(in.Mtime == 1e9 && st.Mtime == 1e9 && st.Atime == 2e9 && st.Ctime > 1e18 && in.Nlink == 2,
				"setattr answered %+v, stat %+v", in, st); err != nil {
				return err
			}
			if err := e.unlink("/a/t2"); err != nil {
				return err
			}
			st, err = e.stat("/a")
			return check(err == nil && st.Mtime > 1e18, "after an unlink: %+v %v", st, err)
		}},
		{"mkdir /a again", ErrExist, func(e *tenv) error { return okIno(e.mkdir("/a")) }},
		{"create /a/f exclusive", 0, func(e *tenv) error {
			r, err := e.create("/a/f", true)
			e.ids["f"] = r.Inode.ID
			if err != nil {
				return err
			}
			return check(r.Created && r.Inode.Type == TypeFile && r.Inode.Nlink == 1 && r.Inode.Mode == 0o644, "%+v", r)
		}},
		{"create /a/f exclusive again", ErrExist, func(e *tenv) error { _, err := e.create("/a/f", true); return err }},
		{"create /a/f non-exclusive opens it", 0, func(e *tenv) error {
			r, err := e.create("/a/f", false)
			if err != nil {
				return err
			}
			return check(!r.Created && r.Inode.ID == e.ids["f"], "%+v", r)
		}},
		{"create over a directory", ErrIsDir, func(e *tenv) error { _, err := e.create("/a", false); return err }},
		{"create in a missing directory", ErrNotExist, func(e *tenv) error { _, err := e.create("/nope/f", true); return err }},
		{"create under a file", ErrNotDir, func(e *tenv) error { _, err := e.create("/a/f/x", true); return err }},
		{"create in a file by inode", ErrNotDir, func(e *tenv) error {
			_, err := e.ns.Create(ctx, CreateRequest{Parent: e.ids["f"], Name: "x"})
			return err
		}},
		{"mkdir name too long", ErrNameTooLong, func(e *tenv) error { return okIno(e.mkdir("/" + strings.Repeat("n", 256))) }},
		{"mkdir name of 255 bytes", 0, func(e *tenv) error { return okIno(e.mkdir("/" + strings.Repeat("n", 255))) }},
		{"mkdir '.'", ErrInvalid, func(e *tenv) error { return okIno(e.ns.Mkdir(ctx, MkdirRequest{Parent: RootID, Name: "."})) }},
		{"mkdir with a slash", ErrInvalid, func(e *tenv) error { return okIno(e.ns.Mkdir(ctx, MkdirRequest{Parent: RootID, Name: "x/y"})) }},
		{"lookup missing", ErrNotExist, func(e *tenv) error { return okIno(e.ns.Lookup(ctx, RootID, "missing")) }},
		{"lookup in a file", ErrNotDir, func(e *tenv) error { return okIno(e.ns.Lookup(ctx, e.ids["f"], "x")) }},
		{"stat missing inode", ErrNotExist, func(e *tenv) error { return okIno(e.ns.Stat(ctx, 1<<40)) }},
		{"stat /a", 0, func(e *tenv) error {
			in, err := e.stat("/a")
			if err != nil {
				return err
			}
			return check(in.Type == TypeDir && in.Nlink == 2 && in.Parent == RootID && in.Name == "a" &&
				in.StatMode() == syscall.S_IFDIR|0o755, "%+v", in)
		}},
		{"errno matches syscall and io/fs", 0, func(e *tenv) error {
			_, err := e.stat("/zz")
			e2, _ := AsErrno(err)
			return check(errors.Is(err, syscall.ENOENT) && errors.Is(err, ErrNotExist) && errors.Is(err, fs.ErrNotExist) &&
				!errors.Is(err, ErrExist) && e2.Errno() == syscall.ENOENT, "%v", err)
		}},

		// symlinks and path resolution
		{"symlink /a/s -> /a/f", 0, func(e *tenv) error { return okIno(e.symlink("/a/s", "/a/f")) }},
		{"symlink over an existing name", ErrExist, func(e *tenv) error { return okIno(e.symlink("/a/s", "/x")) }},
		{"symlink with an empty target", ErrNotExist, func(e *tenv) error { return okIno(e.symlink("/a/s2", "")) }},
		{"readlink /a/s", 0, func(e *tenv) error {
			ino, err := e.ino("/a/s")
			if err != nil {
				return err
			}
			t, err := e.ns.Readlink(ctx, ino)
			if err != nil {
				return err
			}
			return check(t == "/a/f", "target %q", t)
		}},
		{"readlink of a file", ErrInvalid, func(e *tenv) error { _, err := e.ns.Readlink(ctx, e.ids["f"]); return err }},
		{"resolve follows the last symlink", 0, func(e *tenv) error {
			in, err := e.ns.Resolve(ctx, "/a/s", true)
			if err != nil {
				return err
			}
			nf, err := e.ns.Resolve(ctx, "/a/s", false)
			if err != nil {
				return err
			}
			return check(in.ID == e.ids["f"] && nf.Type == TypeSymlink, "%d %v", in.ID, nf.Type)
		}},
		{"relative symlink", 0, func(e *tenv) error {
			if _, err := e.symlink("/a/rel", "f"); err != nil {
				return err
			}
			in, err := e.ns.Resolve(ctx, "/a/rel", true)
			if err != nil {
				return err
			}
			return check(in.ID == e.ids["f"], "resolved to %d", in.ID)
		}},
		{"symlink to a directory in the middle of a path", 0, func(e *tenv) error {
			if _, err := e.symlink("/b", "a"); err != nil {
				return err
			}
			in, err := e.ns.Resolve(ctx, "/b/./f", false)
			if err != nil {
				return err
			}
			up, err := e.ns.Resolve(ctx, "/a/../b/f", false)
			if err != nil {
				return err
			}
			return check(in.ID == e.ids["f"] && up.ID == e.ids["f"], "%d %d", in.ID, up.ID)
		}},
		{"trailing slash on a file", ErrNotDir, func(e *tenv) error { _, err := e.ns.Resolve(ctx, "/a/s/", false); return err }},
		{"symlink loop", ErrLoop, func(e *tenv) error {
			if _, err := e.symlink("/l1", "/l2"); err != nil {
				return err
			}
			if _, err := e.symlink("/l2", "l1"); err != nil {
				return err
			}
			_, err := e.ns.Resolve(ctx, "/l1", true)
			return err
		}},
		{"symlink loop not followed at the end", 0, func(e *tenv) error { _, err := e.ns.Resolve(ctx, "/l1", false); return err }},
		{"symlink loop in the middle", ErrLoop, func(e *tenv) error { _, err := e.ns.Resolve(ctx, "/l1/x", false); return err }},
		{"path too long", ErrNameTooLong, func(e *tenv) error {
			_, err := e.ns.Resolve(ctx, strings.Repeat("/a", 2049), false)
			return err
		}},
		{"component too long", ErrNameTooLong, func(e *tenv) error {
			_, err := e.ns.Resolve(ctx, "/"+strings.Repeat("x", 256)+"/y", false)
			return err
		}},

		// hard links, unlink, rmdir
		{"link /a/f -> /a/g", 0, func(e *tenv) error {
			in, err := e.link("/a/f", "/a/g")
			if err != nil {
				return err
			}
			return check(in.ID == e.ids["f"] && in.Nlink == 2, "%+v", in)
		}},
		{"link to a directory", ErrPerm, func(e *tenv) error { return okIno(e.link("/a", "/a2")) }},
		{"link onto an existing name", ErrExist, func(e *tenv) error { return okIno(e.link("/a/f", "/a/g")) }},
		{"link a symlink", 0, func(e *tenv) error {
			in, err := e.link("/a/s", "/a/s-link")
			if err != nil {
				return err
			}
			return check(in.Type == TypeSymlink && in.Nlink == 2, "%+v", in)
		}},
		{"unlink one symlink name", 0, func(e *tenv) error { return e.unlink("/a/s-link") }},
		{"unlink /a/g", 0, func(e *tenv) error {
			if err := e.unlink("/a/g"); err != nil {
				return err
			}
			in, err := e.ns.Stat(ctx, e.ids["f"])
			if err != nil {
				return err
			}
			return check(in.Nlink == 1, "nlink %d", in.Nlink)
		}},
		{"unlink /a/g again", ErrNotExist, func(e *tenv) error { return e.unlink("/a/g") }},
		{"unlink a directory", ErrIsDir, func(e *tenv) error { return e.unlink("/a") }},
		{"unlink under a file", ErrNotDir, func(e *tenv) error {
			return e.ns.Unlink(ctx, RemoveRequest{Parent: e.ids["f"], Name: "x"})
		}},
		{"rmdir a non-empty directory", ErrNotEmpty, func(e *tenv) error { return e.rmdir("/a") }},
		{"rmdir a file", ErrNotDir, func(e *tenv) error { return e.rmdir("/a/f") }},
		{"rmdir an empty directory", 0, func(e *tenv) error {
			if _, err := e.mkdir("/a/d"); err != nil {
				return err
			}
			return e.rmdir("/a/d")
		}},
		{"rmdir it again", ErrNotExist, func(e *tenv) error { return e.rmdir("/a/d") }},
		{"mkdir in a removed directory", ErrNotExist, func(e *tenv) error {
			d, err := e.mkdir("/a/d2")
			if err != nil {
				return err
			}
			if err := e.rmdir("/a/d2"); err != nil {
				return err
			}
			return okIno(e.ns.Mkdir(ctx, MkdirRequest{Parent: d.ID, Name: "x"}))
		}},

		// rename
		{"rename /a/f -> /a/h", 0, func(e *tenv) error {
			if err := e.rename("/a/f", "/a/h", 0); err != nil {
				return err
			}
			if _, err := e.ino("/a/f"); !errors.Is(err, ErrNotExist) {
				return check(false, "/a/f still there: %v", err)
			}
			in, err := e.stat("/a/h")
			if err != nil {
				return err
			}
			return check(in.ID == e.ids["f"], "moved the wrong inode")
		}},
		{"rename a missing source", ErrNotExist, func(e *tenv) error { return e.rename("/a/f", "/a/k", 0) }},
		{"rename into a missing directory", ErrNotExist, func(e *tenv) error { return e.rename("/a/h", "/c/h", 0) }},
		{"rename a directory into its own subtree", ErrInvalid, func(e *tenv) error {
			if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/x/y/w", Mode: 0o755}); err != nil {
				return err
			}
			return e.rename("/x", "/x/y/w/z", 0)
		}},
		{"rename a directory into itself", ErrInvalid, func(e *tenv) error { return e.rename("/x", "/x/z", 0) }},
		{"rename onto itself", 0, func(e *tenv) error { return e.rename("/x", "/x", 0) }},
		{"rename a file over a file", 0, func(e *tenv) error {
			if _, err := e.create("/a/p", true); err != nil {
				return err
			}
			old, _ := e.ino("/a/p")
			if err := e.rename("/a/h", "/a/p", 0); err != nil {
				return err
			}
			in, err := e.ns.Stat(ctx, old)
			if err != nil {
				return err
			}
			now, err := e.ino("/a/p")
			if err != nil {
				return err
			}
			return check(in.Nlink == 0 && now == e.ids["f"], "replaced %+v, now %d", in, now)
		}},
		{"rename a directory over an empty directory", 0, func(e *tenv) error {
			if _, err := e.mkdir("/e"); err != nil {
				return err
			}
			return e.rename("/x", "/e", 0)
		}},
		{"rename a directory over a non-empty one", ErrNotEmpty, func(e *tenv) error {
			if _, err := e.mkdir("/n"); err != nil {
				return err
			}
			if _, err := e.mkdir("/n/c"); err != nil {
				return err
			}
			return e.rename("/e", "/n", 0)
		}},
		{"rename a directory over a file", ErrNotDir, func(e *tenv) error { return e.rename("/e", "/a/p", 0) }},
		{"rename a file over a directory", ErrIsDir, func(e *tenv) error { return e.rename("/a/p", "/e", 0) }},
		{"RENAME_NOREPLACE onto an existing name", ErrExist, func(e *tenv) error {
			return e.rename("/a/p", "/a/s", RenameNoReplace)
		}},
		{"RENAME_NOREPLACE onto a free name", 0, func(e *tenv) error {
			if err := e.rename("/a/p", "/a/q", RenameNoReplace); err != nil {
				return err
			}
			return e.rename("/a/q", "/a/p", RenameNoReplace)
		}},
		{"RENAME_EXCHANGE a file and a directory", 0, func(e *tenv) error {
			f, _ := e.ino("/a/p")
			d, _ := e.ino("/e")
			if err := e.rename("/a/p", "/e", RenameExchange); err != nil {
				return err
			}
			nf, _ := e.ino("/e")
			nd, err := e.stat("/a/p")
			if err != nil {
				return err
			}
			if err := check(nf == f && nd.ID == d && nd.Parent == e.ids["a"] && nd.Name == "p", "%d %+v", nf, nd); err != nil {
				return err
			}
			return e.rename("/a/p", "/e", RenameExchange) // and back
		}},
		{"RENAME_EXCHANGE with a missing entry", ErrNotExist, func(e *tenv) error {
			return e.rename("/a/p", "/a/none", RenameExchange)
		}},
		{"RENAME_EXCHANGE a directory into its own subtree", ErrInvalid, func(e *tenv) error {
			return e.rename("/e", "/e/y/w", RenameExchange)
		}},
		{"RENAME_WHITEOUT", ErrNotSup, func(e *tenv) error { return e.rename("/a/p", "/a/q", RenameWhiteout) }},
		{"bad rename flags", ErrInvalid, func(e *tenv) error { return e.rename("/a/p", "/a/q", 3) }},
		{"rename between two links of one file does nothing", 0, func(e *tenv) error {
			if _, err := e.link("/a/p", "/a/p2"); err != nil {
				return err
			}
			if err := e.rename("/a/p", "/a/p2", 0); err != nil {
				return err
			}
			in, err := e.stat("/a/p")
			if err != nil {
				return err
			}
			if err := check(in.Nlink == 2, "nlink %d", in.Nlink); err != nil {
				return err
			}
			return e.unlink("/a/p2")
		}},
		{"rename a non-empty directory across directories", 0, func(e *tenv) error {
			if err := e.rename("/n", "/a/m", 0); err != nil {
				return err
			}
			c, err := e.stat("/a/m/c")
			if err != nil {
				return err
			}
			path, err := e.ns.DirPath(ctx, c.ID)
			if err != nil {
				return err
			}
			m, _ := e.stat("/a/m")
			return check(path == "/a/m/c" && m.Parent == e.ids["a"] && m.Name == "m", "path %q, %+v", path, m)
		}},
		{"rename into a removed directory", ErrNotExist, func(e *tenv) error {
			d, err := e.mkdir("/gone")
			if err != nil {
				return err
			}
			if err := e.rmdir("/gone"); err != nil {
				return err
			}
			sp, sn, _ := e.pn("/a/p")
			return e.ns.Rename(ctx, RenameRequest{SrcParent: sp, SrcName: sn, DstParent: d.ID, DstName: "p"})
		}},

		// mkdir -p
		{"MkdirAll", 0, func(e *tenv) error {
			in, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/p/q/r", Mode: 0o700})
			if err != nil {
				return err
			}
			again, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/p/q/r/", Mode: 0o700})
			if err != nil {
				return err
			}
			path, err := e.ns.DirPath(ctx, in.ID)
			if err != nil {
				return err
			}
			return check(again.ID == in.ID && path == "/p/q/r" && in.Mode == 0o700, "%d %d %q", in.ID, again.ID, path)
		}},
		{"MkdirAll through a symlink", 0, func(e *tenv) error {
			in, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/b/new/deeper", Mode: 0o755})
			if err != nil {
				return err
			}
			d, err := e.stat("/a/new/deeper")
			if err != nil {
				return err
			}
			return check(d.ID == in.ID, "%d %d", d.ID, in.ID)
		}},
		{"MkdirAll under a file", ErrNotDir, func(e *tenv) error {
			return okIno(e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/a/p/x/y"}))
		}},
		{"MkdirAll of an existing file", ErrExist, func(e *tenv) error {
			return okIno(e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/a/p"}))
		}},

		// readdir
		{"readdir pages in name order", 0, func(e *tenv) error {
			names, err := e.names("/a")
			if err != nil {
				return err
			}
			want := []string{"m", "new", "p", "rel", "s"}
			return check(slices.Equal(names, want), "%v", names)
		}},
		{"readdir of a file", ErrNotDir, func(e *tenv) error { _, _, err := e.ns.ReadDir(ctx, e.ids["f"], "", 0); return err }},

		// attributes, truncate, length hints
		{"setattr mode uid gid times", 0, func(e *tenv) error {
			in, err := e.ns.SetAttr(ctx, e.ids["f"], SetAttrRequest{Mask: SetMode | SetUID | SetGID | SetAtime | SetMtime,
				Mode: 0o104755, UID: 7, GID: 8, Atime: 11, Mtime: 12})
			if err != nil {
				return err
			}
			return check(in.Mode == 0o4755 && in.UID == 7 && in.GID == 8 && in.Atime == 11 && in.Mtime == 12, "%+v", in)
		}},
		{"truncate grows", 0, func(e *tenv) error {
			in, err := e.ns.Truncate(ctx, e.ids["f"], 1000)
			if err != nil {
				return err
			}
			return check(in.Length == 1000 && in.TruncateVer == 0, "%+v", in)
		}},
		{"length hints grow within a truncateVer", 0, func(e *tenv) error {
			in, err := e.ns.ReportLength(ctx, e.ids["f"], 0, 5000, false)
			if err != nil {
				return err
			}
			smaller, err := e.ns.ReportLength(ctx, e.ids["f"], 0, 10, false)
			if err != nil {
				return err
			}
			return check(in.Length == 5000 && smaller.Length == 5000, "%d %d", in.Length, smaller.Length)
		}},
		{"truncate shrinks and bumps truncateVer", 0, func(e *tenv) error {
			in, err := e.ns.Truncate(ctx, e.ids["f"], 100)
			if err != nil {
				return err
			}
			stale, err := e.ns.ReportLength(ctx, e.ids["f"], 0, 9000, false)
			if err != nil {
				return err
			}
			fresh, err := e.ns.ReportLength(ctx, e.ids["f"], 1, 200, false)
			if err != nil {
				return err
			}
			return check(in.Length == 100 && in.TruncateVer == 1 && stale.Length == 100 && fresh.Length == 200, "%+v %+v %+v", in, stale, fresh)
		}},
		{"length hint from the future", ErrInvalid, func(e *tenv) error { return okIno(e.ns.ReportLength(ctx, e.ids["f"], 5, 1, false)) }},
		{"settle a smaller exact length", 0, func(e *tenv) error {
			in, err := e.ns.SettleLength(ctx, e.ids["f"], 150)
			if err != nil {
				return err
			}
			return check(in.Length == 150 && in.TruncateVer == 2, "%+v", in)
		}},
		{"truncate a directory", ErrIsDir, func(e *tenv) error { return okIno(e.ns.Truncate(ctx, RootID, 0)) }},
		{"stripe hint grows up to the stripe", 0, func(e *tenv) error {
			if _, err := e.ns.SetLayout(ctx, RootID, Layout{TableID: 1, ChunkSize: 1 << 20, Stripe: 64}); err != nil {
				return err
			}
			r, err := e.create("/striped", true)
			if err != nil {
				return err
			}
			in, err := e.ns.SetAttr(ctx, r.Inode.ID, SetAttrRequest{Mask: SetStripeHint, StripeHint: 1000})
			if err != nil {
				return err
			}
			return check(r.Inode.StripeHint == 16 && in.StripeHint == 64, "%d %d", r.Inode.StripeHint, in.StripeHint)
		}},

		// layouts
		{"directory layout is inherited", 0, func(e *tenv) error {
			l := Layout{TableID: 3, TableVersion: 2, ChunkSize: 4 << 20, Stripe: 8, Seed: 99, Algo: 1}
			d, err := e.mkdir("/L")
			if err != nil {
				return err
			}
			if _, err := e.ns.SetLayout(ctx, d.ID, l); err != nil {
				return err
			}
			sub, err := e.mkdir("/L/sub")
			if err != nil {
				return err
			}
			r, err := e.create("/L/sub/f", true)
			if err != nil {
				return err
			}
			got, err := e.ns.GetLayout(ctx, r.Inode.ID)
			if err != nil {
				return err
			}
			own := Layout{TableID: 5}
			r2, err := e.ns.Create(ctx, CreateRequest{Parent: sub.ID, Name: "own", Layout: &own})
			if err != nil {
				return err
			}
			return check(got == l && r.Inode.StripeHint == 8 && *sub.DefaultLayout == l && r2.Inode.Layout == own, "%+v %+v", got, r2.Inode.Layout)
		}},
		{"set layout of a file", ErrNotDir, func(e *tenv) error { return okIno(e.ns.SetLayout(ctx, e.ids["f"], Layout{})) }},

		// xattrs
		{"xattrs", 0, func(e *tenv) error {
			f := e.ids["f"]
			if err := e.ns.SetXattr(ctx, f, "user.b", []byte("2"), 0); err != nil {
				return err
			}
			if err := e.ns.SetXattr(ctx, f, "user.a", []byte("1"), XattrCreate); err != nil {
				return err
			}
			if err := e.ns.SetXattr(ctx, f, "user.a", []byte("one"), XattrReplace); err != nil {
				return err
			}
			v, err := e.ns.GetXattr(ctx, f, "user.a")
			if err != nil {
				return err
			}
			names, err := e.ns.ListXattr(ctx, f)
			if err != nil {
				return err
			}
			if err := e.ns.RemoveXattr(ctx, f, "user.b"); err != nil {
				return err
			}
			return check(string(v) == "one" && slices.Equal(names, []string{"user.a", "user.b"}), "%q %v", v, names)
		}},
		{"xattr create existing", ErrExist, func(e *tenv) error {
			return e.ns.SetXattr(ctx, e.ids["f"], "user.a", []byte("other"), XattrCreate)
		}},
		{"xattr replace missing", ErrNoData, func(e *tenv) error {
			return e.ns.SetXattr(ctx, e.ids["f"], "user.zz", []byte("x"), XattrReplace)
		}},
		{"xattr get missing", ErrNoData, func(e *tenv) error { _, err := e.ns.GetXattr(ctx, e.ids["f"], "user.b"); return err }},
		{"xattr remove missing", ErrNoData, func(e *tenv) error { return e.ns.RemoveXattr(ctx, e.ids["f"], "user.b") }},
		{"xattr value too big", ErrTooBig, func(e *tenv) error {
			return e.ns.SetXattr(ctx, e.ids["f"], "user.big", make([]byte, MaxXattrValue+1), 0)
		}},

		// sessions
		{"unlink with an open write session defers GC to close", 0, func(e *tenv) error {
			r, err := e.create("/a/open", true)
			if err != nil {
				return err
			}
			o, err := e.ns.Open(ctx, r.Inode.ID, syscall.O_WRONLY, "client-1")
			if err != nil {
				return err
			}
			before, _ := e.ns.GCQueueLength(ctx)
			if err := e.unlink("/a/open"); err != nil {
				return err
			}
			mid, _ := e.ns.GCQueueLength(ctx)
			in, err := e.ns.Stat(ctx, r.Inode.ID) // readers of the open file still see it
			if err != nil {
				return err
			}
			if _, err := e.ns.Open(ctx, r.Inode.ID, syscall.O_RDWR, "client-2"); !errors.Is(err, ErrNotExist) {
				return check(false, "write open of an unlinked file: %v", err)
			}
			closed, err := e.ns.Close(ctx, *o.Session, &LengthHint{TruncateVer: 0, Length: 4096})
			if err != nil {
				return err
			}
			after, _ := e.ns.GCQueueLength(ctx)
			again, err := e.ns.Close(ctx, *o.Session, nil) // closing twice is harmless
			if err != nil {
				return err
			}
			return check(mid == before && in.Nlink == 0 && closed.Length == 4096 && after == before+1 && again.ID == r.Inode.ID,
				"queue %d/%d/%d, %+v, %+v", before, mid, after, in, closed)
		}},
		{"O_TRUNC on open", 0, func(e *tenv) error {
			o, err := e.ns.Open(ctx, e.ids["f"], syscall.O_RDWR|syscall.O_TRUNC, "client-1")
			if err != nil {
				return err
			}
			e.sess["f"] = *o.Session
			return check(o.Inode.Length == 0 && o.Inode.TruncateVer == 3 && o.Session.Client == "client-1", "%+v", o)
		}},
		{"read-only open is not tracked", 0, func(e *tenv) error {
			o, err := e.ns.Open(ctx, e.ids["f"], syscall.O_RDONLY, "client-1")
			if err != nil {
				return err
			}
			ss, err := e.ns.Sessions(ctx, e.ids["f"])
			if err != nil {
				return err
			}
			return check(o.Session == nil && len(ss) == 1, "%+v %v", o, ss)
		}},
		{"open a directory for writing", ErrIsDir, func(e *tenv) error {
			_, err := e.ns.Open(ctx, RootID, syscall.O_WRONLY, "c")
			return err
		}},
		{"create with a write session and O_TRUNC", 0, func(e *tenv) error {
			p, _ := e.ino("/a")
			r, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: "h2", Write: true, Client: "client-2"})
			if err != nil {
				return err
			}
			if _, err := e.ns.Truncate(ctx, r.Inode.ID, 77); err != nil {
				return err
			}
			r2, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: "h2", Write: true, Truncate: true, Client: "client-2"})
			if err != nil {
				return err
			}
			ss, _ := e.ns.Sessions(ctx, r.Inode.ID)
			return check(r.Session != nil && r2.Session != nil && r2.Inode.Length == 0 && len(ss) == 2, "%+v %+v %d", r, r2, len(ss))
		}},
		{"reap sessions of dead clients", 0, func(e *tenv) error {
			n, err := e.ns.ReapSessions(ctx, func(c ClientID) bool { return c != "client-2" })
			if err != nil {
				return err
			}
			ss, _ := e.ns.Sessions(ctx, e.ids["f"])
			return check(n == 2 && len(ss) == 1, "reaped %d, f has %d", n, len(ss))
		}},
		{"close the last session", 0, func(e *tenv) error { return okIno(e.ns.Close(ctx, e.sess["f"], nil)) }},

		// recursive remove and GC
		{"RemoveAll a tree", 0, func(e *tenv) error {
			if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/t/u/v"}); err != nil {
				return err
			}
			for _, p := range []string{"/t/1", "/t/u/2", "/t/u/v/3"} {
				if _, err := e.create(p, true); err != nil {
					return err
				}
			}
			if _, err := e.link("/t/u/2", "/kept"); err != nil { // survives the tree
				return err
			}
			if err := e.removeAll("/t"); err != nil {
				return err
			}
			if _, err := e.ino("/t"); !errors.Is(err, ErrNotExist) {
				return check(false, "/t still resolves: %v", err)
			}
			removed := drainGC(e.t, e.ns)
			kept, err := e.stat("/kept")
			if err != nil {
				return err
			}
			// /t/1, /t/u/v/3, plus files unlinked or replaced earlier in the script.
			return check(kept.Nlink == 1 && len(removed) >= 2, "kept %+v, removed %d", kept, len(removed))
		}},
		{"RemoveAll of a missing name", ErrNotExist, func(e *tenv) error { return e.removeAll("/t") }},
		{"RemoveAll of a file", 0, func(e *tenv) error { return e.removeAll("/kept") }},

		// idempotent retries with the same request id
		{"retried create returns the same file", 0, func(e *tenv) error {
			req := CreateRequest{ReqID: NewRequestID(), Parent: RootID, Name: "idem", Exclusive: true}
			a, err := e.ns.Create(ctx, req)
			if err != nil {
				return err
			}
			b, err := e.ns.Create(ctx, req)
			if err != nil {
				return err
			}
			return check(a.Inode.ID == b.Inode.ID && b.Created, "%d %d", a.Inode.ID, b.Inode.ID)
		}},
		{"retried mkdir, symlink and link succeed", 0, func(e *tenv) error {
			m := MkdirRequest{ReqID: NewRequestID(), Parent: RootID, Name: "idem-d"}
			s := SymlinkRequest{ReqID: NewRequestID(), Parent: RootID, Name: "idem-s", Target: "x"}
			idem, _ := e.ino("/idem")
			l := LinkRequest{ReqID: NewRequestID(), Ino: idem, NewParent: RootID, NewName: "idem-l"}
			for range 2 {
				if _, err := e.ns.Mkdir(ctx, m); err != nil {
					return err
				}
				if _, err := e.ns.Symlink(ctx, s); err != nil {
					return err
				}
				if _, err := e.ns.Link(ctx, l); err != nil {
					return err
				}
			}
			in, _ := e.ns.Stat(ctx, idem)
			return check(in.Nlink == 2, "nlink %d after a retried link", in.Nlink)
		}},
		{"retried unlink does not remove a new file of the same name", 0, func(e *tenv) error {
			req := e.req("unlink")
			if err := e.unlinkReq("/idem-l", req); err != nil {
				return err
			}
			if _, err := e.create("/idem-l", true); err != nil {
				return err
			}
			if err := e.unlinkReq("/idem-l", req); err != nil {
				return err
			}
			_, err := e.ino("/idem-l")
			return err
		}},
		{"retried failed unlink fails the same way", ErrNotExist, func(e *tenv) error {
			req := e.req("unlink-missing")
			if err := e.unlinkReq("/later", req); !errors.Is(err, ErrNotExist) {
				return check(false, "first unlink: %v", err)
			}
			if _, err := e.create("/later", true); err != nil {
				return err
			}
			err := e.unlinkReq("/later", req)
			if _, serr := e.ino("/later"); serr != nil {
				return check(false, "the retry removed the new file: %v", serr)
			}
			return err
		}},
		{"retried rename does not move twice", 0, func(e *tenv) error {
			req := NewRequestID()
			if err := e.renameReq("/idem", "/idem2", 0, req); err != nil {
				return err
			}
			if _, err := e.create("/idem", true); err != nil {
				return err
			}
			if err := e.renameReq("/idem", "/idem2", 0, req); err != nil {
				return err
			}
			_, err := e.ino("/idem")
			return err
		}},
		{"request id of a mkdir reused for a create", ErrInvalid, func(e *tenv) error {
			req := NewRequestID()
			if _, err := e.ns.Mkdir(ctx, MkdirRequest{ReqID: req, Parent: RootID, Name: "reuse"}); err != nil {
				return err
			}
			_, err := e.ns.Create(ctx, CreateRequest{ReqID: req, Parent: RootID, Name: "reuse"})
			return err
		}},
		{"request id reused for another operation", ErrInvalid, func(e *tenv) error {
			return e.renameReq("/idem", "/idem3", 0, e.req("unlink"))
		}},
		{"idempotency records expire", 0, func(e *tenv) error {
			n, err := e.ns.CleanIdem(ctx)
			if err != nil {
				return err
			}
			if n != 0 {
				return check(false, "dropped %d fresh records", n)
			}
			opts := testOpts()
			opts.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
			n, err = e.another(opts).CleanIdem(ctx)
			return check(err == nil && n > 5, "dropped %d: %v", n, err)
		}},

		// set-group-id directories
		{"a set-group-id directory gives what is made in it its group", 0, func(e *tenv) error {
			sg, err := e.ns.Mkdir(ctx, MkdirRequest{Parent: RootID, Name: "sg", Mode: 0o2775, UID: 1, GID: 50})
			if err != nil {
				return err
			}
			f, err := e.ns.Create(ctx, CreateRequest{Parent: sg.ID, Name: "f", Mode: 0o644, UID: 2, GID: 60})
			if err != nil {
				return err
			}
			d, err := e.ns.Mkdir(ctx, MkdirRequest{Parent: sg.ID, Name: "d", Mode: 0o755, UID: 2, GID: 60})
			if err != nil {
				return err
			}
			deep, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/sg/d/x/y", Mode: 0o700, UID: 3, GID: 70})
			if err != nil {
				return err
			}
			l, err := e.ns.Symlink(ctx, SymlinkRequest{Parent: sg.ID, Name: "l", Target: "f", UID: 2, GID: 60})
			if err != nil {
				return err
			}
			n, err := e.ns.Mknod(ctx, MknodRequest{Parent: sg.ID, Name: "n", Type: TypeFifo, Mode: 0o640, UID: 2, GID: 60})
			if err != nil {
				return err
			}
			plain, err := e.ns.Create(ctx, CreateRequest{Parent: RootID, Name: "plain-gid", Mode: 0o644, UID: 2, GID: 60})
			if err != nil {
				return err
			}
			return check(f.Inode.GID == 50 && f.Inode.Mode == 0o644 && f.Inode.UID == 2 &&
				d.GID == 50 && d.Mode == 0o2755 && deep.GID == 50 && deep.Mode == 0o2700 && deep.UID == 3 &&
				l.GID == 50 && n.GID == 50 && n.Mode == 0o640 && plain.Inode.GID == 60,
				"file %+v\ndir %+v\nmkdir -p %+v\nsymlink %+v\nfifo %+v\nplain %+v", f.Inode, d, deep, l, n, plain.Inode)
		}},

		// special files
		{"mknod a fifo, a socket and two devices", 0, func(e *tenv) error {
			if _, err := e.mkdir("/sp"); err != nil {
				return err
			}
			sp, _ := e.ino("/sp")
			for _, c := range []struct {
				name string
				typ  InodeType
				rdev uint32
				mode uint32
			}{{"fifo", TypeFifo, 77, syscall.S_IFIFO}, {"sock", TypeSocket, 0, syscall.S_IFSOCK},
				{"chr", TypeCharDev, 1<<8 | 3, syscall.S_IFCHR}, {"blk", TypeBlockDev, 7<<8 | 200, syscall.S_IFBLK}} {
				req := MknodRequest{ReqID: e.req("mknod " + c.name), Parent: sp, Name: c.name, Type: c.typ, Mode: 0o1640, Rdev: c.rdev, UID: 5, GID: 6}
				in, err := e.ns.Mknod(ctx, req)
				if err != nil {
					return err
				}
				again, err := e.ns.Mknod(ctx, req) // a retry answers the first result
				if err != nil {
					return err
				}
				want := c.rdev
				if !c.typ.Device() {
					want = 0
				}
				st, err := e.stat("/sp/" + c.name)
				if err != nil {
					return err
				}
				if err := check(in.Type == c.typ && in.Rdev == want && in.Nlink == 1 && in.UID == 5 && in.GID == 6 &&
					in.StatMode() == c.mode|0o1640 && again.ID == in.ID && st.ID == in.ID && st.Rdev == want,
					"%s: %+v, retry %+v, stat %+v", c.name, in, again, st); err != nil {
					return err
				}
				e.ids[c.name] = in.ID
			}
			ents, _, err := e.ns.ReadDir(ctx, sp, "", 0)
			if err != nil {
				return err
			}
			types := map[string]InodeType{}
			for _, d := range ents {
				types[d.Name] = d.Type
			}
			return check(types["fifo"] == TypeFifo && types["sock"] == TypeSocket && types["chr"] == TypeCharDev && types["blk"] == TypeBlockDev, "%v", types)
		}},
		{"mknod over an existing name", ErrExist, func(e *tenv) error {
			sp, _ := e.ino("/sp")
			return okIno(e.ns.Mknod(ctx, MknodRequest{Parent: sp, Name: "chr", Type: TypeFifo}))
		}},
		{"mknod of a regular file", ErrInvalid, func(e *tenv) error {
			return okIno(e.ns.Mknod(ctx, MknodRequest{Parent: RootID, Name: "reg", Type: TypeFile}))
		}},
		{"mknod in a file", ErrNotDir, func(e *tenv) error {
			return okIno(e.ns.Mknod(ctx, MknodRequest{Parent: e.ids["f"], Name: "x", Type: TypeFifo}))
		}},
		{"create over a special file", ErrExist, func(e *tenv) error { _, err := e.create("/sp/fifo", false); return err }},
		{"open a special file for writing", ErrNoDevice, func(e *tenv) error {
			_, err := e.ns.Open(ctx, e.ids["fifo"], syscall.O_WRONLY, "c")
			return err
		}},
		{"open a special file for reading", 0, func(e *tenv) error {
			r, err := e.ns.Open(ctx, e.ids["chr"], syscall.O_RDONLY, "c")
			return check(err == nil && r.Session == nil && r.Inode.Rdev == 1<<8|3, "%+v %v", r, err)
		}},
		{"truncate a special file", ErrInvalid, func(e *tenv) error { return okIno(e.ns.Truncate(ctx, e.ids["fifo"], 0)) }},
		{"chmod, link, rename and unlink a special file", 0, func(e *tenv) error {
			in, err := e.ns.SetAttr(ctx, e.ids["blk"], SetAttrRequest{Mask: SetMode | SetUID, Mode: 0o600, UID: 9})
			if err != nil || in.Mode != 0o600 || in.UID != 9 || in.Rdev != 7<<8|200 {
				return check(false, "chmod: %+v %v", in, err)
			}
			if in, err := e.link("/sp/blk", "/sp/blk2"); err != nil || in.Nlink != 2 {
				return check(false, "link: %+v %v", in, err)
			}
			if err := e.rename("/sp/blk2", "/blk3", 0); err != nil {
				return err
			}
			if err := e.unlink("/sp/blk"); err != nil {
				return err
			}
			if in, err := e.stat("/blk3"); err != nil || in.Nlink != 1 || in.Type != TypeBlockDev {
				return check(false, "after unlinking one name: %+v %v", in, err)
			}
			if err := e.unlink("/blk3"); err != nil {
				return err
			}
			_, err = e.ns.Stat(ctx, e.ids["blk"])
			return wantErrno(err, ErrNotExist) // deleted with its last name
		}},
		{"a file renamed over a special file", 0, func(e *tenv) error {
			if _, err := e.create("/sp/over", true); err != nil {
				return err
			}
			if err := e.rename("/sp/over", "/sp/sock", 0); err != nil {
				return err
			}
			if in, err := e.stat("/sp/sock"); err != nil || in.Type != TypeFile {
				return check(false, "%+v %v", in, err)
			}
			_, err := e.ns.Stat(ctx, e.ids["sock"])
			return wantErrno(err, ErrNotExist)
		}},

		// versioned buckets
		{"a versioned bucket keeps overwrites and deletes, and a deleted marker brings the object back", 0, func(e *tenv) error {
			b, err := e.mkdir("/vb")
			if err != nil {
				return err
			}
			e.ids["vb"] = b.ID
			if err := e.ns.SetVersioning(ctx, b.ID, VersioningEnabled); err != nil {
				return err
			}
			first, err := e.create("/vb/k", true)
			if err != nil {
				return err
			}
			second, err := e.create("/vb/new", true)
			if err != nil {
				return err
			}
			if err := e.rename("/vb/new", "/vb/k", 0); err != nil {
				return err
			}
			if err := e.unlink("/vb/k"); err != nil {
				return err
			}
			if _, err := e.ns.DeleteKey(ctx, RequestID{}, b.ID, "k", Cond{}, false); err != nil {
				return err
			}
			recs, _, err := e.ns.ListVersions(ctx, ListVersionsRequest{Bucket: b.ID, Prefix: "k"})
			if err != nil {
				return err
			}
			if len(recs) != 4 || !recs[0].DeleteMarker() || !recs[1].DeleteMarker() || recs[2].Ino != second.Inode.ID || recs[3].Ino != first.Inode.ID {
				return check(false, "records of k: %+v", recs)
			}
			for _, r := range recs[:2] {
				if _, err := e.ns.DeleteVersion(ctx, RequestID{}, b.ID, "k", r.ID, DeleteOptions{}); err != nil {
					return err
				}
			}
			cur, err := e.stat("/vb/k")
			return check(err == nil && cur.ID == second.Inode.ID && cur.VersionID == recs[2].ID, "/vb/k: %+v, %v", cur, err)
		}},
		{"a removed version's file is collected; a kept one is not", 0, func(e *tenv) error {
			recs, _, err := e.ns.ListVersions(ctx, ListVersionsRequest{Bucket: e.ids["vb"], Prefix: "k"})
			if err != nil || len(recs) != 1 {
				return check(false, "records of k: %+v, %v", recs, err)
			}
			if _, err := e.ns.DeleteVersion(ctx, RequestID{}, e.ids["vb"], "k", recs[0].ID, DeleteOptions{}); err != nil {
				return err
			}
			cur, err := e.stat("/vb/k")
			if err != nil {
				return err
			}
			gone := drainGC(e.t, e.ns)
			removed := slices.IndexFunc(gone, func(r Removed) bool { return r.Ino == recs[0].Ino }) >= 0
			kept := slices.IndexFunc(gone, func(r Removed) bool { return r.Ino == cur.ID }) < 0
			return check(removed && kept, "collected %+v: want %d, not %d", gone, recs[0].Ino, cur.ID)
		}},
		{"remove -r in a versioned bucket", ErrNotEmpty, func(e *tenv) error {
			if _, err := e.mkdir("/vb/d"); err != nil {
				return err
			}
			if _, err := e.create("/vb/d/f", true); err != nil {
				return err
			}
			return e.removeAll("/vb/d")
		}},

		// statfs
		{"statfs counts inodes and bytes", 0, func(e *tenv) error {
			if _, err := e.ns.Truncate(ctx, e.ids["f"], 12345); err != nil {
				return err
			}
			st, err := e.ns.StatFS(ctx)
			if err != nil {
				return err
			}
			r, err := Check(ctx, e.db)
			if err != nil {
				return err
			}
			if err := e.ns.foldStats(ctx); err != nil {
				return err
			}
			st2, err := e.ns.StatFS(ctx)
			if err != nil {
				return err
			}
			return check(st.Inodes == int64(r.Inodes) && st == st2 && st.Bytes == 12345, "%+v %+v, fsck %d inodes", st, st2, r.Inodes)
		}},
	}
}

func runScript(t *testing.T, e *tenv) {
	for _, s := range script() {
		t0 := time.Now()
		err := s.do(e)
		if d := time.Since(t0); d > 300*time.Millisecond {
			t.Logf("step %q took %v", s.name, d)
		}
		if werr := wantErrno(err, s.want); werr != nil {
			t.Fatalf("step %q: %v", s.name, werr)
		}
		if s.name == "mkdir /a" {
			e.ids["a"], _ = e.ino("/a")
		}
	}
}

// TestSemantics runs the operation table and checks the result with fsck.
func TestSemantics(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	runScript(t, e)
	mustFsck(t, e.db)
}

// TestSemanticsUnderFaults runs the same table on a store that fails 2% of
// reads and 20% of commits, a quarter of those after really committing
// (maybe-committed): every step must give the same result, the final tree must
// equal the fault-free one, and fsck must be clean. This is what proves the
// request-id idempotency.
func TestSemanticsUnderFaults(t *testing.T) {
	clean := newEnv(t, nil, testOpts())
	runScript(t, clean)
	for seed := uint64(1); seed <= 12; seed++ {
		start := time.Now()
		e := newEnv(t, &kv.Faults{ReadRate: 0.02, CommitRate: 0.2, Seed: seed}, testOpts())
		runScript(t, e)
		mustFsck(t, e.db)
		if got, want := dumpTree(t, e.ns), dumpTree(t, clean.ns); got != want {
			t.Fatalf("seed %d: tree differs from the fault-free run:\n%s\n--- want\n%s", seed, got, want)
		}
		fc := e.db.FaultCounts()
		if fc.MaybeCommitted == 0 || fc.Reads == 0 {
			t.Fatalf("seed %d: faults not injected: %+v", seed, fc)
		}
		t.Logf("seed %d: %+v %v", seed, fc, time.Since(start))
	}
}
