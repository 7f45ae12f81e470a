package ns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// The trash (Options.TrashDays > 0): a file that loses its last name to an
// unlink or to a rename over it, and a tree removed whole (RemoveAll), is
// moved into /.flyfs-trash/<hour>/<ino>-<name> instead of being collected
// (not from the root's /.flyfs* directories: the trash, the gateway's
// staging area),
// in the same transaction, and a record keeps where it was. Restore moves
// it back; PurgeTrash removes the hours older than TrashDays for good (the
// GC worker runs it). Removals inside the trash are for good, and files of
// versioned buckets are kept by their versions instead. Empty directories
// removed one by one (rmdir, rm -r through a mount) are not kept: their
// files are, each under its own path.
//
//	TRSH at(8, BE) ino(8, LE) -> trashRecord
//
// A record outlives an entry removed inside the trash (for good) until its
// hour is purged; listings leave such records out.

// TrashDir is the trash's directory in the root.
const TrashDir = ".flyfs-trash"

var tagTrash = kv.Tag("TRSH")

func trashKey(at int64, ino uint64) []byte {
	return putID(binary.BigEndian.AppendUint64(withTag(tagTrash, 16), uint64(at)), ino)
}

// trashRecord says where a trashed entry was and where it is.
type trashRecord struct {
	Ino    uint64    `cbor:"1,keyasint"`
	Parent uint64    `cbor:"2,keyasint,omitempty"` // the directory it was in
	Path   string    `cbor:"3,keyasint,omitempty"` // that directory's path then
	Name   string    `cbor:"4,keyasint,omitempty"`
	Hour   string    `cbor:"5,keyasint,omitempty"` // its directory in the trash
	Entry  string    `cbor:"6,keyasint,omitempty"` // its name there
	At     int64     `cbor:"7,keyasint,omitempty"`
	Type   InodeType `cbor:"8,keyasint,omitempty"`
}

// TrashEntry is a trashed file or tree as listed.
type TrashEntry struct {
	Ino    uint64
	Path   string // where it was: its directory's path and name
	Type   InodeType
	Length uint64
	At     time.Time
	Trash  string // where it is: a path in the trash
}

// TrashDays is how long the trash keeps entries (0: no trash).
func (n *Namespace) TrashDays() int { return n.opts.TrashDays }

// trashHour names the hour directory of a removal at ns.
func trashHour(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02-15") }

// trashable returns the path of dir when a removal from it goes to the
// trash (trash on, dir not in the trash, not in a versioned bucket); ok is
// false otherwise. Snapshot reads: the path is for the record only.
func (o *op) trashable(dir uint64) (string, bool, error) {
	if o.n.opts.TrashDays <= 0 {
		return "", false, nil
	}
	var names []string
	top := uint64(0)
	for cur, depth := dir, 0; cur != RootID; depth++ {
		if depth > maxBucketDepth {
			return "", false, fail(ErrIO, "directory cycle above %d", dir)
		}
		in, err := getInode(o.ctx, o.tx, cur, true)
		if err != nil {
			return "", false, err
		}
		if in.Nlink == 0 {
			return "", false, nil // inside a removed tree: going anyway
		}
		names = append(names, in.Name)
		top = cur
		cur = in.Parent
	}
	if top != 0 {
		t, err := getInode(o.ctx, o.tx, top, true)
		if err != nil {
			return "", false, err
		}
		if strings.HasPrefix(t.Name, ".flyfs") {
			return "", false, nil // the trash itself, the gateway's staging area
		}
		if st, err := o.versioning(top); err != nil || st != Unversioned {
			return "", false, err
		}
	}
	var b strings.Builder
	for i := len(names) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(names[i])
	}
	if b.Len() == 0 {
		return "/", true, nil
	}
	return b.String(), true, nil
}

// trashDirs returns the trash's hour directory for now, made if missing.
// ids keeps the ids an earlier attempt allocated.
func (o *op) trashDirs(hour string, ids *[2]uint64) (*Inode, error) {
	root, err := o.liveDir(RootID)
	if err != nil {
		return nil, err
	}
	parent := root
	for i, name := range []string{TrashDir, hour} {
		d, found, err := o.dentry(parent.ID, name)
		if err != nil {
			return nil, err
		}
		if found {
			if d.Type != TypeDir {
				return nil, fail(ErrIO, "%q in the trash is a %s", name, d.Type)
			}
			if parent, err = o.inode(d.Ino); err != nil {
				return nil, err
			}
			continue
		}
		if err := o.newID(&ids[i]); err != nil {
			return nil, err
		}
		mode := uint32(0o755)
		if i == 0 {
			mode = 0o711 // names inside are not listed to everyone
		}
		if parent, err = o.mkdir(parent, ids[i], name, mode, 0, 0, 0, nil, RequestID{}); err != nil {
			return nil, err
		}
	}
	return parent, nil
}

// trash moves in (a file that would lose its last name, or a removed tree,
// its dentry in dir already cleared) into the trash. It returns false when
// the trash does not take it (off, or a removal inside the trash).
func (o *op) trash(dir uint64, name string, in *Inode, ids *[2]uint64) (bool, error) {
	path, ok, err := o.trashable(dir)
	if err != nil || !ok {
		return false, err
	}
	hour := trashHour(o.now)
	h, err := o.trashDirs(hour, ids)
	if err != nil {
		return false, err
	}
	entry := fmt.Sprintf("%d-%s", in.ID, name)
	if len(entry) > MaxNameLen {
		entry = entry[:MaxNameLen]
	}
	o.putDentry(h.ID, entry, &Dentry{Ino: in.ID, Type: in.Type})
	in.Ctime = o.now
	if in.Type == TypeDir {
		in.Parent, in.Name = h.ID, entry
		if err := o.addSubdir(h.ID, in.ID, 1); err != nil {
			return false, err
		}
	}
	o.putInode(in)
	rec := trashRecord{Ino: in.ID, Parent: dir, Path: path, Name: name, Hour: hour, Entry: entry, At: o.now, Type: in.Type}
	o.tx.Set(trashKey(o.now, in.ID), encode(&rec))
	return true, nil
}

// trashReplaced keeps a file a rename replaces, when it was its last name
// and no version keeps it.
func (o *op) trashReplaced(dir uint64, name string, in *Inode) (bool, error) {
	if in.Type != TypeFile || in.Nlink != 1 || in.Versions > 0 {
		return false, nil
	}
	return o.trash(dir, name, in, &[2]uint64{})
}

// ListTrash returns what the trash holds, oldest first.
func (n *Namespace) ListTrash(ctx context.Context) ([]TrashEntry, error) {
	var out []TrashEntry
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		out = nil
		return scan(ctx, tx, tagTrash, prefixEnd(tagTrash), func(_, v []byte) error {
			var r trashRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			e := TrashEntry{Ino: r.Ino, Path: strings.TrimSuffix(r.Path, "/") + "/" + r.Name, Type: r.Type, At: time.Unix(0, r.At),
				Trash: "/" + TrashDir + "/" + r.Hour + "/" + r.Entry}
			in, err := getInode(ctx, tx, r.Ino, true)
			switch {
			case isErrno(err) || (err == nil && in.Nlink == 0):
				return nil // removed inside the trash
			case err != nil:
				return err
			}
			e.Length = in.Length
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// RestoreTrash moves the trashed entry of inode ino back to where it was,
// or to (toParent, toName) when toParent is set: the directory it was in
// must still be there (else restore it first, or give a place). ErrExist
// when the name is taken, ErrNotExist when no record has ino. A retry
// with req returns the first call's answer.
func (n *Namespace) RestoreTrash(ctx context.Context, req RequestID, ino, toParent uint64, toName string) (string, error) {
	var dirIDs []uint64
	rec, err := n.updateIdemAnswer(ctx, req.orNew(), opRestoreTrash, func(o *op, answer *idemRecord) error {
		key, r, err := o.trashRecordOf(ino)
		if err != nil {
			return err
		}
		parent, name := r.Parent, r.Name
		if toParent != 0 {
			parent, name = toParent, toName
			if err := checkName(name); err != nil {
				return err
			}
		}
		p, err := o.liveDir(parent)
		if err == nil {
			if in, err := o.inTrash(parent); err != nil || in {
				return errOr(err, fail(ErrNotExist, "%s is in the trash: restore it first, or restore to another directory", r.Path))
			}
		}
		if err != nil && toParent == 0 && errors.Is(err, ErrNotExist) {
			// Its directory went (rm -r removes directories one by one):
			// made again along the path it had.
			victim, verr := o.inode(ino)
			if verr != nil {
				return verr
			}
			p, err = o.ensurePath(r.Path, victim.UID, victim.GID, &dirIDs)
		}
		if err != nil {
			return fail(ErrNotExist, "%s is gone: restore it first or restore to another directory (%v)", r.Path, err)
		}
		if _, taken, err := o.dentry(p.ID, name); err != nil || taken {
			return errOr(err, fail(ErrExist, "%q is taken in %s", name, r.Path))
		}
		h, err := o.trashDirs(r.Hour, &[2]uint64{})
		if err != nil {
			return err
		}
		d, found, err := o.dentry(h.ID, r.Entry)
		if err != nil {
			return err
		}
		if !found || d.Ino != ino {
			return fail(ErrNotExist, "trash entry %s/%s is gone", r.Hour, r.Entry)
		}
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		o.clearDentry(h.ID, r.Entry)
		o.putDentry(p.ID, name, &Dentry{Ino: ino, Type: in.Type})
		in.Ctime = o.now
		if in.Type == TypeDir {
			if err := o.notAncestor(in.ID, p.ID); err != nil {
				return err
			}
			in.Parent, in.Name = p.ID, name
			if err := o.addSubdir(h.ID, in.ID, -1); err != nil {
				return err
			}
			if err := o.addSubdir(p.ID, in.ID, 1); err != nil {
				return err
			}
		}
		o.putInode(in)
		o.tx.Clear(key)
		answer.Version = name // where it went
		if toParent == 0 {
			answer.Version = strings.TrimSuffix(r.Path, "/") + "/" + r.Name
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("restore %d from the trash: %w", ino, err)
	}
	return rec.Version, nil
}

// ensurePath walks path from the root, making each missing directory
// (mode 0755, owned by uid and gid), and returns the last.
func (o *op) ensurePath(path string, uid, gid uint32, ids *[]uint64) (*Inode, error) {
	p, err := o.liveDir(RootID)
	if err != nil {
		return nil, err
	}
	made := 0
	for _, name := range splitPath(path) {
		d, found, err := o.dentry(p.ID, name)
		if err != nil {
			return nil, err
		}
		if found {
			if d.Type != TypeDir {
				return nil, fail(ErrNotDir, "%q in %s is a %s", name, path, d.Type)
			}
			if p, err = o.inode(d.Ino); err != nil {
				return nil, err
			}
			continue
		}
		if made == len(*ids) {
			*ids = append(*ids, 0)
		}
		if err := o.newID(&(*ids)[made]); err != nil {
			return nil, err
		}
		if p, err = o.mkdir(p, (*ids)[made], name, 0o755, uid, gid, 0, nil, RequestID{}); err != nil {
			return nil, err
		}
		made++
	}
	return p, nil
}

// inTrash reports whether dir is in the trash.
func (o *op) inTrash(dir uint64) (bool, error) {
	for cur, depth := dir, 0; cur != RootID; depth++ {
		if depth > maxBucketDepth {
			return false, fail(ErrIO, "directory cycle above %d", dir)
		}
		in, err := o.inode(cur)
		if err != nil {
			return false, err
		}
		if in.Parent == RootID {
			return in.Name == TrashDir, nil
		}
		cur = in.Parent
	}
	return false, nil
}

// trashRecordOf finds ino's record (conflict-tracked).
func (o *op) trashRecordOf(ino uint64) ([]byte, trashRecord, error) {
	var key []byte
	var rec trashRecord
	err := scan(o.ctx, o.tx, tagTrash, prefixEnd(tagTrash), func(k, v []byte) error {
		if key != nil || len(k) != len(tagTrash)+16 || binary.LittleEndian.Uint64(k[len(k)-8:]) != ino {
			return nil
		}
		key = append([]byte(nil), k...)
		return decode(v, &rec)
	})
	if err != nil {
		return nil, rec, err
	}
	if key == nil {
		return nil, rec, fail(ErrNotExist, "no trash record of inode %d", ino)
	}
	if _, found, err := o.tx.Get(o.ctx, key); err != nil || !found {
		return nil, rec, errOr(err, fail(ErrNotExist, "no trash record of inode %d", ino))
	}
	return key, rec, nil
}

// PurgeTrash removes for good the trash's hours older than TrashDays
// before now (their trees go through GC) and their records, and returns
// how many hours went.
func (n *Namespace) PurgeTrash(ctx context.Context, now time.Time) (int, error) {
	if n.opts.TrashDays <= 0 {
		return 0, nil
	}
	// Whole hours only: an hour goes when all of it is past the days, and
	// with it the records of its entries.
	return n.purgeTrashBefore(ctx, now.Add(-time.Duration(n.opts.TrashDays)*24*time.Hour).UTC().Truncate(time.Hour))
}

// EmptyTrash removes everything in the trash for good now (an admin
// freeing space), whatever its age or the trash's days.
func (n *Namespace) EmptyTrash(ctx context.Context) (int, error) {
	return n.purgeTrashBefore(ctx, n.opts.Now().Add(2*time.Hour).UTC().Truncate(time.Hour))
}

// purgeTrashBefore removes the hours that start before cutoff, and the
// records of the entries removed before it.
func (n *Namespace) purgeTrashBefore(ctx context.Context, cutoff time.Time) (int, error) {
	var hours []string
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		hours = nil
		d, found, err := getDentry(ctx, tx, RootID, TrashDir, true)
		if err != nil || !found {
			return err
		}
		p := dentryPrefix(d.Ino)
		return scan(ctx, tx, p, prefixEnd(p), func(k, _ []byte) error {
			name := string(k[len(p):])
			t, err := time.Parse("2006-01-02-15", name)
			if err == nil && t.Before(cutoff) {
				hours = append(hours, name)
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	purged := 0
	for _, h := range hours {
		err := n.update(ctx, func(o *op) error {
			d, found, err := o.dentry(RootID, TrashDir)
			if err != nil || !found {
				return err
			}
			e, found, err := o.dentry(d.Ino, h)
			if err != nil || !found {
				return err
			}
			in, err := o.inode(e.Ino)
			if err != nil {
				return err
			}
			o.clearDentry(d.Ino, h)
			if err := o.addSubdir(d.Ino, in.ID, -1); err != nil {
				return err
			}
			return o.dropLink(in, o.now)
		})
		if err != nil {
			return purged, fmt.Errorf("ns: purge trash hour %s: %w", h, err)
		}
		purged++
	}
	// Records of the purged hours (and of entries removed inside the trash).
	end := binary.BigEndian.AppendUint64(withTag(tagTrash, 8), uint64(cutoff.UnixNano()))
	err = n.update(ctx, func(o *op) error {
		o.tx.ClearRange(tagTrash, end)
		return nil
	})
	return purged, err
}
