package ns

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/flyfs/flyfs/core/kv"
)

// ClientID names a client (a FUSE mount, a gateway); sessions of clients that
// the cluster manager no longer knows are reaped.
type ClientID string

// SessionID names one write open.
type SessionID [16]byte

// NewSessionID returns a random session id.
func NewSessionID() SessionID {
	var s SessionID
	_, _ = rand.Read(s[:])
	return s
}

// Session is an open-for-write file. While a file has sessions, removing its
// last name does not queue it for GC: the last Close does.
type Session struct {
	Ino    uint64    `cbor:"1,keyasint,omitempty"`
	ID     SessionID `cbor:"2,keyasint,omitempty"`
	Client ClientID  `cbor:"3,keyasint,omitempty"`
	Opened int64     `cbor:"4,keyasint,omitempty"` // unix ns
	// Dir and Name are where a create opened it (none for an open by
	// inode): what a listing of the sessions names the file by.
	Dir  uint64 `cbor:"5,keyasint,omitempty"`
	Name string `cbor:"6,keyasint,omitempty"`
}

// openSession stores a write session on in, or returns the one an earlier
// attempt stored (the id is fixed per call); dir and name are where a create
// made or found the file (0 and "" for an open by inode).
func (o *op) openSession(in *Inode, id SessionID, client ClientID, dir uint64, name string) (*Session, error) {
	key := sessionKey(in.ID, id)
	v, found, err := o.tx.Get(o.ctx, key)
	if err != nil {
		return nil, err
	}
	s := new(Session)
	if found {
		return s, decode(v, s)
	}
	if in.InlineLen > 0 {
		return nil, &InlinedError{Ino: in.ID}
	}
	*s = Session{Ino: in.ID, ID: id, Client: client, Opened: o.now, Dir: dir, Name: name}
	o.tx.Set(key, encode(s))
	if in.OwnClean { // the writer's chunks are its own: a clone from now on freezes them
		in.OwnClean = false
		o.putInode(in)
	}
	return s, nil
}

// hasSessions reports whether ino has a write session, conflict-tracked: a
// concurrent open or close must abort whoever decides GC on it.
// sessionsBeside reads ino's sessions in one conflict-tracked range: whether
// the session at key is among them, and how many there are (at most two
// are read: an inline close only asks whether another writer has the file).
// Should two others sort before key, key is read on its own.
func (o *op) sessionsBeside(ino uint64, key []byte) (open bool, n int, err error) {
	p := sessionPrefix(ino)
	res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 2})
	if err != nil {
		return false, 0, err
	}
	for _, x := range res.KVs {
		open = open || bytes.Equal(x.Key, key)
	}
	if !open && len(res.KVs) == 2 {
		_, open, err = o.tx.Get(o.ctx, key)
	}
	return open, len(res.KVs), err
}

func (o *op) hasSessions(ino uint64) (bool, error) {
	p := sessionPrefix(ino)
	res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 1})
	if err != nil {
		return false, err
	}
	return len(res.KVs) > 0, nil
}

// OpenResult is Open's answer; Session is set for write opens.
type OpenResult struct {
	Inode   Inode
	Session *Session
}

// Open opens inode ino with open(2) flags. Read-only opens are not tracked (a
// reader of a removed file reads until GC's grace period ends). Write opens
// store a session for client; O_TRUNC truncates a file to 0 (bumping
// truncateVer). Directories opened for writing are EISDIR, symlinks ELOOP,
// special files ENXIO, removed files ENOENT.
func (n *Namespace) Open(ctx context.Context, ino uint64, flags int, client ClientID) (OpenResult, error) {
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	trunc := flags&syscall.O_TRUNC != 0
	if !write && !trunc {
		in, err := n.OpenRead(ctx, ino, 0)
		return OpenResult{Inode: in}, err
	}
	sid := NewSessionID()
	var res OpenResult
	err := n.update(ctx, func(o *op) error {
		res = OpenResult{}
		in, err := o.inode(ino)
		if err != nil {
			return err
		}
		switch {
		case in.Type == TypeDir:
			return fail(ErrIsDir, "open directory %d for writing", ino)
		case in.Type == TypeSymlink:
			return fail(ErrLoop, "open symlink %d", ino)
		case in.Type.Special():
			return fail(ErrNoDevice, "open %s %d for writing: its data is the kernel's", in.Type, ino)
		case in.Nlink == 0:
			return fail(ErrNotExist, "open removed file %d", ino)
		}
		if write || trunc {
			if err := o.changeable(in); err != nil {
				return err
			}
		}
		if trunc && o.truncate(in, 0) {
			o.putInode(in)
		}
		if write {
			if res.Session, err = o.openSession(in, sid, client, 0, ""); err != nil {
				return err
			}
		}
		res.Inode = *in
		return nil
	})
	if err != nil {
		return OpenResult{}, fmt.Errorf("open %d: %w", ino, err)
	}
	return res, nil
}

// OpenRead is Open for reading (O_RDONLY, no session): the inode with an
// inline file's bytes, unless the caller holds them at generation known
// (0: it holds none) and the file is still at it; then Inline is nil while
// InlineLen says the file is inline.
func (n *Namespace) OpenRead(ctx context.Context, ino, known uint64) (Inode, error) {
	in, err := n.statData(ctx, ino, known)
	if err != nil {
		return Inode{}, err
	}
	if in.Type == TypeSymlink {
		return Inode{}, fail(ErrLoop, "open symlink %d", ino)
	}
	return in, nil
}

// LengthHint is a client's report of a file's length: the largest offset it
// wrote, under the truncateVer it saw.
type LengthHint struct {
	TruncateVer uint64
	Length      uint64
	Wrote       bool // data was written since the last hint: Gen moves
	// Inline is the file's whole data, written through this session alone
	// and sent with its close instead of to chunks (inline.go).
	Inline []byte
}

// Close ends a write session, applying the client's length hint. If the file
// lost its last name while open and this was its last session, it goes to the
// GC queue now. Closing a session that is gone (already closed, reaped) is not
// an error; if the inode is gone too the result is the zero Inode.
func (n *Namespace) Close(ctx context.Context, s Session, hint *LengthHint) (Inode, error) {
	var res Inode
	err := n.update(ctx, func(o *op) error {
		res = Inode{}
		key := sessionKey(s.Ino, s.ID)
		inline := hint != nil && hint.Inline != nil
		var open bool
		var writers int // the inode's sessions, read for an inline close
		var err error
		if inline {
			open, writers, err = o.sessionsBeside(s.Ino, key)
		} else {
			_, open, err = o.tx.Get(o.ctx, key)
		}
		if err != nil {
			return err
		}
		in, err := o.inode(s.Ino)
		if err != nil {
			if !open && isErrno(err) {
				return nil
			}
			return err
		}
		if inline {
			return o.closeInline(in, s, open, writers, hint, &res)
		}
		changed := false
		if hint != nil {
			if changed, err = o.applyHint(in, hint.TruncateVer, hint.Length, hint.Wrote); err != nil {
				return err
			}
		}
		if open {
			o.tx.Clear(key)
			if in.Nlink == 0 && in.Type == TypeFile && in.Versions == 0 {
				busy, err := o.hasSessions(in.ID) // sees our clear
				if err != nil {
					return err
				}
				if !busy {
					o.queueGC(in, o.now)
				}
			}
		}
		if changed {
			o.putInode(in)
		}
		res = *in
		return nil
	})
	if err != nil {
		return Inode{}, fmt.Errorf("close %d: %w", s.Ino, err)
	}
	return res, nil
}

// Sessions lists the write sessions of ino.
func (n *Namespace) Sessions(ctx context.Context, ino uint64) ([]Session, error) {
	var out []Session
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		out = nil
		p := sessionPrefix(ino)
		return scan(ctx, tx, p, prefixEnd(p), func(_, v []byte) error {
			var s Session
			if err := decode(v, &s); err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
	})
	return out, err
}

// OpenFile is a write session as a listing shows it: the file's length now,
// and the path it was created under (empty for an open by inode, or when
// its directory is gone).
type OpenFile struct {
	Session
	Path   string
	Length uint64
}

// ListSessions returns up to limit write sessions of the whole namespace, in
// inode order, and whether there are more.
func (n *Namespace) ListSessions(ctx context.Context, limit int) ([]OpenFile, bool, error) {
	var out []OpenFile
	var more bool
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		out, more = nil, false
		errFull := errors.New("full")
		err := scan(ctx, tx, tagSession, prefixEnd(tagSession), func(_, v []byte) error {
			if len(out) == limit {
				more = true
				return errFull
			}
			var f OpenFile
			if err := decode(v, &f.Session); err != nil {
				return err
			}
			if in, err := getInode(ctx, tx, f.Ino, true); err == nil {
				f.Length = in.Length
			}
			if f.Name != "" {
				if dir, ok := dirPath(ctx, tx, f.Dir); ok {
					f.Path = strings.TrimSuffix(dir, "/") + "/" + f.Name
				}
			}
			out = append(out, f)
			return nil
		})
		if errors.Is(err, errFull) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("ns: list sessions: %w", err)
	}
	return out, more, nil
}

// dirPath is the path of directory dir from its Parent and Name links, or
// false when a link is broken (a removed directory) or too deep.
func dirPath(ctx context.Context, tx kv.ReadTxn, dir uint64) (string, bool) {
	var names []string
	for cur, depth := dir, 0; cur != RootID; depth++ {
		if depth > maxBucketDepth {
			return "", false
		}
		in, err := getInode(ctx, tx, cur, true)
		if err != nil || in.Type != TypeDir || in.Nlink == 0 {
			return "", false
		}
		names = append(names, in.Name)
		cur = in.Parent
	}
	slices.Reverse(names)
	return "/" + strings.Join(names, "/"), true
}

// ReapSessions closes (without a length report) every session whose client is
// not live, and returns how many it closed. The caller asks the cluster
// manager which clients are alive, and must not reap while that answer is
// unreliable (e.g. during mgmtd's bootstrapping window).
func (n *Namespace) ReapSessions(ctx context.Context, live func(ClientID) bool) (int, error) {
	dead, err := n.DeadSessions(ctx, live)
	if err != nil {
		return 0, err
	}
	for i, s := range dead {
		if _, err := n.Close(ctx, s, nil); err != nil {
			return i, fmt.Errorf("ns: reap sessions: %w", err)
		}
	}
	return len(dead), nil
}

// DeadSessions lists the sessions whose client is not live (for a caller
// that settles each file's length before closing the session).
func (n *Namespace) DeadSessions(ctx context.Context, live func(ClientID) bool) ([]Session, error) {
	var dead []Session
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		dead = nil
		return scan(ctx, tx, tagSession, prefixEnd(tagSession), func(_, v []byte) error {
			var s Session
			if err := decode(v, &s); err != nil {
				return err
			}
			if !live(s.Client) {
				dead = append(dead, s)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("ns: reap sessions: %w", err)
	}
	return dead, nil
}

// scan calls fn for every entry of [begin, end), paging with snapshot reads.
func scan(ctx context.Context, tx kv.ReadTxn, begin, end []byte, fn func(k, v []byte) error) error {
	for {
		res, err := tx.SnapshotGetRange(ctx, begin, end, kv.RangeOptions{Limit: 1024})
		if err != nil {
			return err
		}
		for _, e := range res.KVs {
			if err := fn(e.Key, e.Value); err != nil {
				return err
			}
		}
		if !res.More {
			return nil
		}
		begin = kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
	}
}
