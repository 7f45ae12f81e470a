package ns

import (
	"context"
	"fmt"
	"strings"

	"github.com/flyfs/flyfs/core/kv"
)

// MaxSymlinkHops bounds symlink resolution in a path walk (Linux's 40).
const MaxSymlinkHops = 40

// Stat returns inode ino. A directory's Mtime/Ctime include its latest entry
// change and its Nlink counts its subdirectories (both kept off the inode,
// see dirattr.go).
func (n *Namespace) Stat(ctx context.Context, ino uint64) (Inode, error) {
	var in *Inode
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		var err error
		in, err = statInode(ctx, tx, ino)
		return err
	})
	if err != nil {
		return Inode{}, err
	}
	return *in, nil
}

// StatMany returns the inodes of ids in one snapshot (readdirplus); an id
// whose inode is gone gets nil.
func (n *Namespace) StatMany(ctx context.Context, ids []uint64) ([]*Inode, error) {
	out, _, err := n.StatManyXattr(ctx, ids, "")
	return out, err
}

// StatManyXattr is StatMany that also reads the extended attribute name of
// each inode in the same snapshot (nil where absent; none if name is "").
func (n *Namespace) StatManyXattr(ctx context.Context, ids []uint64, name string) ([]*Inode, [][]byte, error) {
	if name != "" {
		if err := checkXattrName(name); err != nil {
			return nil, nil, err
		}
	}
	out := make([]*Inode, len(ids))
	vals := make([][]byte, len(ids))
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		for i, id := range ids {
			in, err := statInode(ctx, tx, id)
			if _, isErrno := AsErrno(err); err != nil && !isErrno {
				return err
			}
			out[i] = in
			if in == nil || name == "" {
				continue
			}
			v, found, err := tx.SnapshotGet(ctx, xattrKey(id, name))
			if err != nil {
				return err
			}
			if found {
				vals[i] = v
			}
		}
		return nil
	})
	return out, vals, err
}

// statInode reads an inode as Stat reports it (snapshot reads).
func statInode(ctx context.Context, tx kv.ReadTxn, ino uint64) (*Inode, error) {
	in, err := getInode(ctx, tx, ino, true)
	if err != nil {
		return nil, err
	}
	if in.Type == TypeDir {
		if err := dirView(ctx, tx, in); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Lookup returns the inode named name in directory parent.
func (n *Namespace) Lookup(ctx context.Context, parent uint64, name string) (Inode, error) {
	if err := checkName(name); err != nil {
		return Inode{}, err
	}
	var in *Inode
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		d, found, err := getDentry(ctx, tx, parent, name, true)
		if err != nil {
			return err
		}
		if !found {
			// No such name, or no such directory to hold it.
			p, err := getInode(ctx, tx, parent, true)
			if err != nil {
				return err
			}
			if p.Type != TypeDir {
				return fail(ErrNotDir, "lookup in inode %d", parent)
			}
			return fail(ErrNotExist, "lookup %q in %d", name, parent)
		}
		// A dentry's parent is a directory (an invariant; fsck checks it),
		// so a found name needs no read of the parent.
		in, err = statInode(ctx, tx, d.Ino)
		return err
	})
	if err != nil {
		return Inode{}, err
	}
	return *in, nil
}

// Readlink returns a symlink's target.
func (n *Namespace) Readlink(ctx context.Context, ino uint64) (string, error) {
	in, err := n.Stat(ctx, ino)
	if err != nil {
		return "", err
	}
	if in.Type != TypeSymlink {
		return "", fail(ErrInvalid, "readlink of %s %d", in.Type, ino)
	}
	return in.Target, nil
}

// Resolve walks path (relative paths start at the root too) and returns the
// inode it names. Intermediate symlinks are followed, the last one only with
// followLast; a trailing slash requires a directory (and follows). Errors:
// ENOENT, ENOTDIR, ELOOP after MaxSymlinkHops, ENAMETOOLONG for components over
// MaxNameLen or paths over MaxPathLen. Reads are snapshot reads: a path is a
// hint that a later operation revalidates with conflict-tracked reads.
func (n *Namespace) Resolve(ctx context.Context, path string, followLast bool) (Inode, error) {
	in, _, _, err := n.ResolveRead(ctx, path, followLast, false, "")
	return in, err
}

// ResolveRead is Resolve for a reader: in the same snapshot it also reads,
// with inline, an inline file's bytes (Inode.Inline), and with xattr set,
// that extended attribute's value (found false: there is none).
func (n *Namespace) ResolveRead(ctx context.Context, path string, followLast, inline bool, xattr string) (_ Inode, value []byte, found bool, _ error) {
	if xattr != "" {
		if err := checkXattrName(xattr); err != nil {
			return Inode{}, nil, false, err
		}
	}
	var in *Inode
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		w := walker{ctx: ctx, tx: tx}
		var err error
		in, err = w.walk(RootID, path, followLast)
		if err != nil {
			return err
		}
		if xattr != "" {
			if value, found, err = tx.SnapshotGet(ctx, xattrKey(in.ID, xattr)); err != nil {
				return err
			}
		}
		if in.Type == TypeDir {
			return dirView(ctx, tx, in)
		}
		if inline {
			return loadInline(ctx, tx, in, true)
		}
		return nil
	})
	if err != nil {
		return Inode{}, nil, false, fmt.Errorf("resolve %q: %w", path, err)
	}
	return *in, value, found, nil
}

// ResolveParent walks all but the last component of path (following symlinks)
// and returns that directory and the last component, for create-by-path.
func (n *Namespace) ResolveParent(ctx context.Context, path string) (Inode, string, error) {
	dir, name := splitLast(path)
	if err := checkName(name); err != nil {
		return Inode{}, "", fmt.Errorf("resolve %q: %w", path, err)
	}
	in, err := n.Resolve(ctx, dir, true)
	if err != nil {
		return Inode{}, "", err
	}
	if in.Type != TypeDir {
		return Inode{}, "", fail(ErrNotDir, "resolve %q", path)
	}
	return in, name, nil
}

// splitLast splits path into its directory part and last component.
func splitLast(path string) (dir, name string) {
	path = strings.TrimRight(path, "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "/", path
	}
	if i == 0 {
		return "/", path[1:]
	}
	return path[:i], path[i+1:]
}

// walker resolves paths inside one transaction with snapshot reads. It caches
// what it read (one transaction sees one version), so a symlink loop costs a
// few reads, not 2 per hop.
type walker struct {
	ctx    context.Context
	tx     kv.ReadTxn
	hops   int
	inodes map[uint64]*Inode
	dents  map[string]*Dentry // nil value: known missing
}

func (w *walker) inode(ino uint64) (*Inode, error) {
	if in, ok := w.inodes[ino]; ok {
		c := *in
		return &c, nil
	}
	in, err := getInode(w.ctx, w.tx, ino, true)
	if err != nil {
		return nil, err
	}
	if w.inodes == nil {
		w.inodes = map[uint64]*Inode{}
	}
	c := *in
	w.inodes[ino] = &c
	return in, nil
}

func (w *walker) dentry(parent uint64, name string) (*Dentry, bool, error) {
	key := string(dentryKey(parent, name))
	if d, ok := w.dents[key]; ok {
		return d, d != nil, nil
	}
	d, found, err := getDentry(w.ctx, w.tx, parent, name, true)
	if err != nil {
		return nil, false, err
	}
	if w.dents == nil {
		w.dents = map[string]*Dentry{}
	}
	w.dents[key] = d
	return d, found, nil
}

// walk resolves path from directory start.
func (w *walker) walk(start uint64, path string, followLast bool) (*Inode, error) {
	if len(path) > MaxPathLen {
		return nil, fail(ErrNameTooLong, "path of %d bytes", len(path))
	}
	if strings.HasPrefix(path, "/") {
		start = RootID
	}
	cur, err := w.inode(start)
	if err != nil {
		return nil, err
	}
	trailingSlash := strings.HasSuffix(path, "/")
	comps := splitPath(path)
	for i := 0; i < len(comps); i++ {
		c := comps[i]
		last := i == len(comps)-1
		if cur.Type != TypeDir {
			return nil, fail(ErrNotDir, "%q is not a directory", c)
		}
		if len(c) > MaxNameLen {
			return nil, fail(ErrNameTooLong, "component of %d bytes", len(c))
		}
		var next *Inode
		switch c {
		case ".":
			continue
		case "..":
			if next, err = w.inode(cur.Parent); err != nil {
				return nil, err
			}
		default:
			d, found, err := w.dentry(cur.ID, c)
			if err != nil {
				return nil, err
			}
			if !found {
				return nil, fail(ErrNotExist, "%q", c)
			}
			if next, err = w.inode(d.Ino); err != nil {
				return nil, err
			}
		}
		if next.Type == TypeSymlink && (!last || followLast || trailingSlash) {
			if w.hops++; w.hops > MaxSymlinkHops {
				return nil, fail(ErrLoop, "more than %d symlinks", MaxSymlinkHops)
			}
			if next.Target == "" {
				return nil, fail(ErrNotExist, "empty symlink")
			}
			if len(next.Target) > MaxPathLen {
				return nil, fail(ErrNameTooLong, "symlink target of %d bytes", len(next.Target))
			}
			// Splice the target's components in front of the rest.
			rest := append(splitPath(next.Target), comps[i+1:]...)
			comps, i = rest, -1
			if strings.HasPrefix(next.Target, "/") {
				next, err = w.inode(RootID)
			} else {
				next = cur // relative to the directory holding the link
			}
			if err != nil {
				return nil, err
			}
		}
		cur = next
	}
	if trailingSlash && cur.Type != TypeDir {
		return nil, fail(ErrNotDir, "trailing slash on a %s", cur.Type)
	}
	return cur, nil
}

func splitPath(path string) []string {
	var out []string
	for _, c := range strings.Split(path, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// DirPath reconstructs a directory's absolute path from the Parent and Name
// fields (snapshot reads).
func (n *Namespace) DirPath(ctx context.Context, dir uint64) (string, error) {
	var path string
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		var parts []string
		cur := dir
		for depth := 0; cur != RootID; depth++ {
			if depth > 4096 {
				return fail(ErrIO, "directory %d: parent chain too long", dir)
			}
			in, err := getInode(ctx, tx, cur, true)
			if err != nil {
				return err
			}
			if in.Type != TypeDir {
				return fail(ErrNotDir, "inode %d", cur)
			}
			if in.Nlink == 0 {
				return fail(ErrNotExist, "directory %d was removed", cur)
			}
			parts = append(parts, in.Name)
			cur = in.Parent
		}
		var b strings.Builder
		for i := len(parts) - 1; i >= 0; i-- {
			b.WriteString("/" + parts[i])
		}
		path = b.String()
		if path == "" {
			path = "/"
		}
		return nil
	})
	return path, err
}
