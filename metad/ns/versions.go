package ns

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/flyfs/flyfs/core/kv"
)

// Versioning: a bucket (a directory whose parent is the root) can keep the
// versions of its files, as an S3 bucket with versioning does. The namespace
// knows nothing else of S3; a key is a file's path below its bucket
// ("a/b/c").
//
// Keys:
//
//	VBKT bucket(8, LE)                          -> Versioning (CBOR)
//	VERS bucket(8, LE) key 0x00 ^seq(8, BE)     -> Version
//
// A key's records sort newest first (seq grows per key, stored inverted),
// keys in byte order, as ListObjectVersions lists them.
//
// The current version of a key is the file its name holds (Inode.VersionID
// is its id, empty for "null"); the records are the noncurrent versions and
// the delete markers. In a versioned bucket a file that loses its name to an
// unlink or to a rename over it is kept: its record names the inode, whose
// Versions counts such records, and an inode with no links is kept while
// Versions > 0 (never queued for GC). Which version is kept follows S3:
//
//   - Enabled: the replaced or removed version is kept whatever its id; a
//     new file gets a fresh id; an unlink adds a delete marker with a fresh id.
//   - Suspended: a new file, and the delete marker an unlink adds, take the
//     id "null", so the key's earlier null version (current or noncurrent)
//     goes for good; a version with another id is kept.
//
// A file renamed away from a key of a versioned bucket leaves a delete
// marker there when the key has older versions (so they stay noncurrent;
// a key without any, like a temporary file renamed into place, just
// goes); a directory rename
// carries the current files with it and leaves their old keys' records
// where they are. Hard links, symlinks and directories keep no versions.
//
// Invariants (Check):
//   - Every object record names a file whose Versions is the number of
//     records naming it; a file with Versions > 0 is not in the GC queue.
//   - A key has at most one record with the id "null", and when its name
//     holds a file whose id is null, none.
//   - A bucket with records or a versioning state is a live directory whose
//     parent is the root.

// Versioning is a bucket's versioning state.
type Versioning uint8

// The versioning states. A bucket that was never versioned is Unversioned;
// once Enabled it can only be Suspended or Enabled again (the front end
// enforces that, as S3 does).
const (
	Unversioned         Versioning = 0
	VersioningEnabled   Versioning = 1
	VersioningSuspended Versioning = 2
)

// NullVersion is the id of a key's version made while its bucket was not
// Enabled.
const NullVersion = "null"

var (
	tagVersioning = kv.Tag("VBKT")
	tagVersion    = kv.Tag("VERS")
)

func versioningKey(bucket uint64) []byte { return putID(withTag(tagVersioning, 8), bucket) }

func versionsOfBucket(bucket uint64) []byte { return putID(withTag(tagVersion, 8), bucket) }

// versionsOfKey is the prefix of key's records.
func versionsOfKey(bucket uint64, key string) []byte {
	return append(append(versionsOfBucket(bucket), key...), 0)
}

func versionKey(bucket uint64, key string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(versionsOfKey(bucket, key), ^seq)
}

// parseVersionKey splits a VERS key of bucket into its object key and seq.
func parseVersionKey(bucket uint64, k []byte) (string, uint64, bool) {
	p := versionsOfBucket(bucket)
	if len(k) < len(p)+9 || string(k[:len(p)]) != string(p) || k[len(k)-9] != 0 {
		return "", 0, false
	}
	return string(k[len(p) : len(k)-9]), ^binary.BigEndian.Uint64(k[len(k)-8:]), true
}

// Version is one record of a key: a noncurrent version (Ino names its
// file) or a delete marker (Ino 0).
type Version struct {
	ID   string `cbor:"1,keyasint,omitempty"`
	Ino  uint64 `cbor:"2,keyasint,omitempty"`
	Time int64  `cbor:"3,keyasint,omitempty"` // when it stopped being current, or the marker was made
}

// DeleteMarker reports whether v is a delete marker.
func (v Version) DeleteMarker() bool { return v.Ino == 0 }

// VersionEntry is a record as listed: its key and place, and for an object
// version the inode it names.
type VersionEntry struct {
	Key string
	Seq uint64
	Version
	Inode *Inode // nil for a delete marker
	// Prefix: this entry is a common prefix (Key) standing for every record
	// below it, not a record.
	Prefix bool
}

// newVersionID is a fresh version id: the time, for a rough order when
// read, and random bytes.
func newVersionID(now int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now))
	_, _ = rand.Read(b[8:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// versionOf is the id of the version a file is as current.
func versionOf(in *Inode) string {
	if in.VersionID == "" {
		return NullVersion
	}
	return in.VersionID
}

// versionScope is where a name of a versioned bucket is: the bucket, its
// state, and the key of the directory holding the name ("a/b/", or "").
type versionScope struct {
	bucket uint64
	state  Versioning
	dirKey string
}

func (s *versionScope) key(name string) string { return s.dirKey + name }

// newNull reports whether a version made now takes the id "null".
func (s *versionScope) newNull() bool { return s.state == VersioningSuspended }

// maxBucketDepth bounds the ancestor walk (a deeper chain is a cycle).
const maxBucketDepth = MaxPathLen / 2

// versioned returns the scope of dir's names when dir is in a bucket that
// has a versioning state, else nil. Reads are conflict-tracked: the
// versioning keys (so turning versioning on aborts a racing remove), and
// dir's ancestors (a directory rename moves the keys below it). With no
// bucket versioned, that is one empty range read.
func (o *op) versioned(dir uint64) (*versionScope, error) {
	if o.unversioned {
		return nil, nil // the range read once (a rename asks for two directories)
	}
	res, err := o.tx.GetRange(o.ctx, tagVersioning, prefixEnd(tagVersioning), kv.RangeOptions{Limit: 1})
	if err != nil || len(res.KVs) == 0 {
		o.unversioned = err == nil
		return nil, err
	}
	var names []string
	for cur, depth := dir, 0; cur != RootID; depth++ {
		if depth > maxBucketDepth {
			return nil, fail(ErrIO, "directory cycle above %d", dir)
		}
		in, err := o.inode(cur)
		if err != nil {
			return nil, err
		}
		if in.Type != TypeDir {
			return nil, fail(ErrIO, "ancestor %d of %d is a %s", cur, dir, in.Type)
		}
		if in.Parent == RootID {
			st, err := o.versioning(in.ID)
			if err != nil || st == Unversioned {
				return nil, err
			}
			var b strings.Builder
			for i := len(names) - 1; i >= 0; i-- {
				b.WriteString(names[i])
				b.WriteByte('/')
			}
			return &versionScope{bucket: in.ID, state: st, dirKey: b.String()}, nil
		}
		names = append(names, in.Name)
		cur = in.Parent
	}
	return nil, nil // a name in the root is in no bucket
}

// versioning reads a bucket's state with conflict tracking.
func (o *op) versioning(bucket uint64) (Versioning, error) {
	v, found, err := o.tx.Get(o.ctx, versioningKey(bucket))
	if err != nil || !found {
		return Unversioned, err
	}
	var st Versioning
	return st, decode(v, &st)
}

// keyRecords reads every record of key, newest first, conflict-tracked.
func (o *op) keyRecords(bucket uint64, key string) ([]VersionEntry, error) {
	p := versionsOfKey(bucket, key)
	var out []VersionEntry
	for begin := p; ; {
		res, err := o.tx.GetRange(o.ctx, begin, prefixEnd(p), kv.RangeOptions{Limit: 256})
		if err != nil {
			return nil, err
		}
		for _, e := range res.KVs {
			k, seq, ok := parseVersionKey(bucket, e.Key)
			if !ok || k != key {
				return nil, fail(ErrIO, "bad version key %x", e.Key)
			}
			var v Version
			if err := decode(e.Value, &v); err != nil {
				return nil, err
			}
			out = append(out, VersionEntry{Key: key, Seq: seq, Version: v})
		}
		if !res.More {
			return out, nil
		}
		begin = kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
	}
}

// addRecord writes a new newest record of key. Its seq is above the
// newest one's and at least the clock, so records sort by age even when
// metads' clocks disagree.
func (o *op) addRecord(s *versionScope, key string, v Version) error {
	p := versionsOfKey(s.bucket, key)
	res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 1})
	if err != nil {
		return err
	}
	seq := uint64(o.now)
	if len(res.KVs) == 1 {
		_, last, ok := parseVersionKey(s.bucket, res.KVs[0].Key)
		if !ok {
			return fail(ErrIO, "bad version key %x", res.KVs[0].Key)
		}
		seq = max(seq, last+1)
	}
	v.Time = o.now
	o.tx.Set(versionKey(s.bucket, key, seq), encode(&v))
	return nil
}

// dropRecord removes a record for good; the file of an object version
// goes to GC when nothing else keeps it.
func (o *op) dropRecord(bucket uint64, e VersionEntry) error {
	o.tx.Clear(versionKey(bucket, e.Key, e.Seq))
	if e.DeleteMarker() {
		return nil
	}
	in, err := o.inode(e.Ino)
	if err != nil {
		return err
	}
	if in.Versions == 0 {
		return fail(ErrIO, "inode %d has a version record it does not count", in.ID)
	}
	in.Versions--
	return o.releaseIfUnused(in)
}

// releaseIfUnused writes in back, queueing it for GC if nothing keeps it
// any more (no link, no version record, no write session).
func (o *op) releaseIfUnused(in *Inode) error {
	o.putInode(in)
	if in.Nlink > 0 || in.Versions > 0 {
		return nil
	}
	if err := in.removable(o.now, o.bypass); err != nil {
		return err
	}
	busy, err := o.hasSessions(in.ID)
	if err != nil || busy {
		return err
	}
	o.queueGC(in, o.now)
	return nil
}

// dropNullRecord removes key's noncurrent null version, if it has one: a
// new null version is about to take its id.
func (o *op) dropNullRecord(s *versionScope, key string) error {
	recs, err := o.keyRecords(s.bucket, key)
	if err != nil {
		return err
	}
	for _, e := range recs {
		if e.ID == NullVersion {
			return o.dropRecord(s.bucket, e)
		}
	}
	return nil
}

// displace is the current version cur (nil: the key has none) of key
// ceasing to be current because a new version takes its place; the caller
// then drops cur's link as usual. The new version is null in a Suspended
// bucket, which ends the key's earlier null version; any other current
// version is kept as a record.
func (o *op) displace(s *versionScope, key string, cur *Inode) error {
	if s.newNull() {
		if err := o.dropNullRecord(s, key); err != nil {
			return err
		}
	}
	if cur == nil || cur.Type != TypeFile || (s.newNull() && cur.VersionID == "") {
		return nil
	}
	if cur.Versions == ^uint32(0) {
		return fail(ErrMLink, "inode %d has too many versions", cur.ID)
	}
	cur.Versions++
	return o.addRecord(s, key, Version{ID: versionOf(cur), Ino: cur.ID})
}

// newVersion gives in the id of a new current version of a key of s.
func (o *op) newVersion(s *versionScope, in *Inode) {
	in.VersionID = ""
	if !s.newNull() {
		in.VersionID = newVersionID(o.now)
	}
}

// deleteMarker adds key's delete marker (after displace) and returns its id.
func (o *op) deleteMarker(s *versionScope, key string) (string, error) {
	id := NullVersion
	if !s.newNull() {
		id = newVersionID(o.now)
	}
	return id, o.addRecord(s, key, Version{ID: id})
}

// SetVersioning sets a bucket's versioning state. The bucket must be a live
// directory in the root.
func (n *Namespace) SetVersioning(ctx context.Context, bucket uint64, st Versioning) error {
	switch st {
	case Unversioned, VersioningEnabled, VersioningSuspended:
	default:
		return fail(ErrInvalid, "versioning state %d", st)
	}
	return n.update(ctx, func(o *op) error {
		in, err := o.liveDir(bucket)
		if err != nil {
			return err
		}
		if in.Parent != RootID || in.ID == RootID {
			return fail(ErrInvalid, "directory %d is not a bucket (a directory in the root)", bucket)
		}
		if st == Unversioned {
			o.tx.Clear(versioningKey(bucket))
		} else {
			o.tx.Set(versioningKey(bucket), encode(st))
			o.unversioned = false
		}
		return nil
	})
}

// GetVersioning returns a bucket's versioning state.
func (n *Namespace) GetVersioning(ctx context.Context, bucket uint64) (Versioning, error) {
	var st Versioning
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		st = Unversioned
		v, found, err := tx.SnapshotGet(ctx, versioningKey(bucket))
		if err != nil || !found {
			return err
		}
		return decode(v, &st)
	})
	return st, err
}

// checkKey validates an object key: segments that are names.
func checkKey(key string) ([]string, error) {
	if len(key) > MaxPathLen {
		return nil, fail(ErrNameTooLong, "key of %d bytes", len(key))
	}
	segs := strings.Split(key, "/")
	for _, s := range segs {
		if err := checkName(s); err != nil {
			return nil, err
		}
	}
	return segs, nil
}

// keyPlace is where key's name is: its directory (0 when a directory on the
// way is missing) and the file the name holds (nil if none).
type keyPlace struct {
	dir  uint64
	name string
	cur  *Inode
}

// findKey walks key's directories from the bucket with conflict-tracked
// reads (their absence decides as much as their presence).
func (o *op) findKey(bucket uint64, segs []string) (keyPlace, error) {
	dir := bucket
	for _, s := range segs[:len(segs)-1] {
		d, found, err := o.dentry(dir, s)
		if err != nil {
			return keyPlace{}, err
		}
		if !found || d.Type != TypeDir {
			return keyPlace{name: segs[len(segs)-1]}, nil
		}
		dir = d.Ino
	}
	pl := keyPlace{dir: dir, name: segs[len(segs)-1]}
	d, found, err := o.dentry(dir, pl.name)
	if err != nil || !found || d.Type != TypeFile {
		return pl, err
	}
	pl.cur, err = o.inode(d.Ino)
	return pl, err
}

// DeleteKey is an S3 DELETE of key (no version given) in a versioned
// bucket: the current version, if there is one, is displaced and unlinked,
// and a delete marker becomes the newest record. Returns the marker's id;
// a retry with req returns the first call's answer.
func (n *Namespace) DeleteKey(ctx context.Context, req RequestID, bucket uint64, key string, cond Cond, pruneImplicit bool) (string, error) {
	segs, err := checkKey(key)
	if err != nil {
		return "", err
	}
	rec, err := n.updateIdemAnswer(ctx, req.orNew(), opDeleteKey, func(o *op, answer *idemRecord) error {
		st, err := o.versioning(bucket)
		if err != nil {
			return err
		}
		if st == Unversioned {
			return fail(ErrInvalid, "bucket %d is not versioned", bucket)
		}
		pl, err := o.findKey(bucket, segs)
		if err != nil {
			return err
		}
		if cond.Ino != 0 || cond.Gen != 0 {
			if pl.cur == nil {
				return fail(ErrPrecondition, "%q has no current version", key)
			}
			if err := checkVersion(pl.cur, cond.Ino, cond.Gen); err != nil {
				return err
			}
		}
		s := &versionScope{bucket: bucket, state: st}
		if err := o.displace(s, key, pl.cur); err != nil {
			return err
		}
		if pl.cur != nil {
			if err := o.writable(pl.cur); err != nil {
				return err
			}
			o.clearDentry(pl.dir, pl.name)
			if err := o.dropLink(pl.cur, o.now); err != nil {
				return err
			}
		}
		if answer.Version, err = o.deleteMarker(s, key); err != nil {
			return err
		}
		if pl.cur != nil && pruneImplicit {
			return o.pruneImplicit(pl.dir)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("delete %q: %w", key, err)
	}
	return rec.Version, nil
}

// Cond, when set, makes DeleteKey conditional: the key's current version
// must be inode Ino at generation Gen (S3 If-Match), else ErrPrecondition.
type Cond struct{ Ino, Gen uint64 }

// DeletedVersion says what DeleteVersion removed.
type DeletedVersion struct {
	DeleteMarker bool
	// Promoted: a noncurrent version became current (its file took the
	// key's name again) because the newer ones went.
	Promoted string
}

// DeleteVersion removes one version of key for good, as S3 DELETE with a
// versionId: the current one (its file unlinked and collected unless a
// record still names it) or a record. When the key is left without a
// current version and its newest record is an object version, that version
// becomes current again, in implicit directories made for it if needed.
// ErrNotExist when no version has the id.
// DeleteOptions shape DeleteVersion.
type DeleteOptions struct {
	PruneImplicit bool // remove the implicit directories left empty
	// BypassGovernance removes a version under governance retention (the
	// caller checked that its asker may).
	BypassGovernance bool
}

func (n *Namespace) DeleteVersion(ctx context.Context, req RequestID, bucket uint64, key, id string, opts DeleteOptions) (DeletedVersion, error) {
	pruneImplicit := opts.PruneImplicit
	segs, err := checkKey(key)
	if err != nil {
		return DeletedVersion{}, err
	}
	var ids []uint64
	rec, err := n.updateIdemAnswer(ctx, req.orNew(), opDeleteVersion, func(o *op, res *idemRecord) error {
		o.bypass = opts.BypassGovernance
		pl, err := o.findKey(bucket, segs)
		if err != nil {
			return err
		}
		recs, err := o.keyRecords(bucket, key)
		if err != nil {
			return err
		}
		switch i := recordWithID(recs, id); {
		case pl.cur != nil && versionOf(pl.cur) == id:
			if err := o.writable(pl.cur); err != nil {
				return err
			}
			o.clearDentry(pl.dir, pl.name)
			if err := o.dropLink(pl.cur, o.now); err != nil {
				return err
			}
			pl.cur = nil
		case i >= 0:
			res.DeleteMarker = recs[i].DeleteMarker()
			if err := o.dropRecord(bucket, recs[i]); err != nil {
				return err
			}
			recs = append(recs[:i:i], recs[i+1:]...)
		default:
			return fail(ErrNotExist, "no version %q of %q", id, key)
		}
		if pl.cur != nil || len(recs) == 0 || recs[0].DeleteMarker() {
			if pl.cur == nil && pl.dir != 0 && pruneImplicit {
				return o.pruneImplicit(pl.dir)
			}
			return nil
		}
		res.Promoted = recs[0].ID
		return o.promote(bucket, segs, pl, recs[0], &ids)
	})
	if err != nil {
		return DeletedVersion{}, fmt.Errorf("delete version %q of %q: %w", id, key, err)
	}
	return DeletedVersion{DeleteMarker: rec.DeleteMarker, Promoted: rec.Promoted}, nil
}

func recordWithID(recs []VersionEntry, id string) int {
	for i, e := range recs {
		if e.ID == id {
			return i
		}
	}
	return -1
}

// promote makes record e the current version of key again: its file takes
// the key's name, in directories made (implicit) where missing. ids holds
// the directory ids an earlier attempt allocated.
func (o *op) promote(bucket uint64, segs []string, pl keyPlace, e VersionEntry, ids *[]uint64) error {
	dir := pl.dir
	if dir == 0 {
		var err error
		if dir, err = o.ensureDirs(bucket, segs[:len(segs)-1], ids); err != nil {
			return err
		}
	}
	in, err := o.inode(e.Ino)
	if err != nil {
		return err
	}
	if in.Type != TypeFile || in.Versions == 0 {
		return fail(ErrIO, "version %q names inode %d (%s, %d versions)", e.ID, in.ID, in.Type, in.Versions)
	}
	if in.Nlink >= MaxLinks {
		return fail(ErrMLink, "inode %d", in.ID)
	}
	o.tx.Clear(versionKey(bucket, e.Key, e.Seq))
	in.Versions--
	in.Nlink++
	in.Ctime = o.now
	if e.ID == NullVersion {
		in.VersionID = ""
	} else {
		in.VersionID = e.ID
	}
	o.putInode(in)
	o.putDentry(dir, segs[len(segs)-1], &Dentry{Ino: in.ID, Type: TypeFile})
	return nil
}

// ensureDirs walks names from the bucket, making each missing directory
// (implicit, as an S3 PUT would) and returns the last one.
func (o *op) ensureDirs(bucket uint64, names []string, ids *[]uint64) (uint64, error) {
	p, err := o.liveDir(bucket)
	if err != nil {
		return 0, err
	}
	made := 0
	for _, name := range names {
		d, found, err := o.dentry(p.ID, name)
		if err != nil {
			return 0, err
		}
		if found {
			if d.Type != TypeDir {
				return 0, fail(ErrNotDir, "%q is a %s", name, d.Type)
			}
			if p, err = o.inode(d.Ino); err != nil {
				return 0, err
			}
			continue
		}
		if made == len(*ids) {
			*ids = append(*ids, 0)
		}
		if err := o.newID(&(*ids)[made]); err != nil {
			return 0, err
		}
		in, err := o.mkdir(p, (*ids)[made], name, p.Mode&0o777, p.UID, p.GID, 0, nil, RequestID{})
		if err != nil {
			return 0, err
		}
		in.Implicit = true
		o.putInode(in)
		made++
		p = in
	}
	return p.ID, nil
}

// GetVersion returns key's record with id (a noncurrent version or a
// delete marker) and, for an object version, its inode. ErrNotExist if no
// record has it (the current version is the name's file: Lookup it).
func (n *Namespace) GetVersion(ctx context.Context, bucket uint64, key, id string) (VersionEntry, error) {
	var res VersionEntry
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		res = VersionEntry{}
		p := versionsOfKey(bucket, key)
		found := false
		err := scan(ctx, tx, p, prefixEnd(p), func(k, v []byte) error {
			if found {
				return nil
			}
			var ver Version
			if err := decode(v, &ver); err != nil {
				return err
			}
			if ver.ID != id {
				return nil
			}
			_, seq, _ := parseVersionKey(bucket, k)
			res, found = VersionEntry{Key: key, Seq: seq, Version: ver}, true
			return nil
		})
		if err != nil {
			return err
		}
		if !found {
			return fail(ErrNotExist, "no version %q of %q", id, key)
		}
		if !res.DeleteMarker() {
			res.Inode, err = getInode(ctx, tx, res.Ino, true)
		}
		return err
	})
	return res, err
}

// ListVersionsRequest pages through a bucket's records in key order, each
// key's newest first.
type ListVersionsRequest struct {
	Bucket uint64
	Prefix string
	// Delimiter rolls up the keys that have it after Prefix into one
	// entry per common prefix (Prefix through the delimiter).
	Delimiter string
	// After resumes: records of keys after AfterKey, and of AfterKey those
	// with a seq below AfterSeq (0: none of AfterKey's).
	AfterKey string
	AfterSeq uint64
	Limit    int
}

// ListVersions returns up to Limit records (and common prefixes), and
// whether more follow. Snapshot reads: a listing is a view.
func (n *Namespace) ListVersions(ctx context.Context, req ListVersionsRequest) ([]VersionEntry, bool, error) {
	if req.Limit <= 0 {
		req.Limit = 1000
	}
	var out []VersionEntry
	var more bool
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		out, more = nil, false
		base := versionsOfBucket(req.Bucket)
		end := prefixEnd(base)
		begin := append(append([]byte{}, base...), req.Prefix...)
		if req.Prefix != "" {
			end = prefixEnd(begin)
		}
		if req.AfterKey != "" || req.AfterSeq != 0 {
			var after []byte
			if req.AfterSeq == 0 {
				after = prefixEnd(versionsOfKey(req.Bucket, req.AfterKey))
			} else {
				after = versionKey(req.Bucket, req.AfterKey, req.AfterSeq-1)
			}
			if string(after) > string(begin) {
				begin = after
			}
		}
		for string(begin) < string(end) {
			res, err := tx.SnapshotGetRange(ctx, begin, end, kv.RangeOptions{Limit: 256})
			if err != nil {
				return err
			}
			next := []byte(nil)
			for _, e := range res.KVs {
				key, seq, ok := parseVersionKey(req.Bucket, e.Key)
				if !ok {
					return fail(ErrIO, "bad version key %x", e.Key)
				}
				if len(out) == req.Limit {
					more = true
					return nil
				}
				if cp, ok := rollUp(req.Prefix, req.Delimiter, key); ok {
					if req.AfterKey != "" && cp <= req.AfterKey {
						// A prefix the previous page ended on or in.
						next = prefixEnd(append(append([]byte{}, base...), cp...))
						break
					}
					out = append(out, VersionEntry{Key: cp, Prefix: true})
					next = prefixEnd(append(append([]byte{}, base...), cp...))
					break
				}
				var v Version
				if err := decode(e.Value, &v); err != nil {
					return err
				}
				ve := VersionEntry{Key: key, Seq: seq, Version: v}
				if !v.DeleteMarker() {
					if ve.Inode, err = getInode(ctx, tx, v.Ino, true); err != nil {
						return err
					}
				}
				out = append(out, ve)
			}
			switch {
			case next != nil:
				begin = next
			case res.More:
				begin = kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
			default:
				return nil
			}
		}
		return nil
	})
	return out, more, err
}

// rollUp returns the common prefix key falls under: prefix through the
// first delimiter after it.
func rollUp(prefix, delim, key string) (string, bool) {
	if delim == "" || !strings.HasPrefix(key, prefix) {
		return "", false
	}
	i := strings.Index(key[len(prefix):], delim)
	if i < 0 {
		return "", false
	}
	return key[:len(prefix)+i+len(delim)], true
}

// versionedUnlink is an unlink of a file's name in a versioned bucket: the
// file is displaced (kept as a record) and a delete marker added, as an S3
// DELETE does. Called after the dentry is cleared, before dropLink.
func (o *op) versionedUnlink(parent uint64, name string, in *Inode) error {
	s, err := o.versioned(parent)
	if err != nil || s == nil {
		return err
	}
	key := s.key(name)
	if err := o.displace(s, key, in); err != nil {
		return err
	}
	_, err = o.deleteMarker(s, key)
	return err
}

// removableTree refuses to remove what would lose versions or snapshots: a
// top directory holding snapshots, a bucket that still has records, or a
// non-empty directory of a versioned bucket at once (RemoveAll would collect
// its files without keeping them; removed file by file, each is kept).
// Removing a bucket ends its versioning state.
func (o *op) removableTree(parent uint64, dir *Inode) error {
	if parent == RootID {
		if _, found, err := o.dentry(dir.ID, SnapshotDir); err != nil || found {
			if err == nil {
				err = fail(ErrNotEmpty, "%q holds snapshots (flyfs admin snapshot delete)", dir.Name)
			}
			return err
		}
		p := versionsOfBucket(dir.ID)
		res, err := o.tx.GetRange(o.ctx, p, prefixEnd(p), kv.RangeOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(res.KVs) > 0 {
			return fail(ErrNotEmpty, "bucket %q still has noncurrent versions or delete markers", dir.Name)
		}
		// Cleared only when set: every create, unlink and rename reads the
		// versioning keys, so a needless write would abort them.
		st, err := o.versioning(dir.ID)
		if err == nil && st != Unversioned {
			o.tx.Clear(versioningKey(dir.ID))
		}
		return err
	}
	s, err := o.versioned(parent)
	if err != nil || s == nil {
		return err
	}
	empty, err := o.dirEmpty(dir.ID)
	if err != nil || empty {
		return err
	}
	return fail(ErrNotEmpty, "remove -r of %q in a versioned bucket: remove its files one by one so that each keeps its versions", dir.Name)
}

// versionedRename gives a file moving from (srcParent, srcName) onto
// (dstParent, dstName) its versions: the destination's current version
// (dst, nil if none) is displaced and the file becomes the new current
// version there; the source key, if in a versioned bucket, gets a delete
// marker. Outside versioned buckets a file has the id null.
func (o *op) versionedRename(srcParent uint64, srcName string, dstParent uint64, dstName string, src, dst *Inode, lock *Retention) error {
	d, err := o.versioned(dstParent)
	if err != nil {
		return err
	}
	if (lock != nil || src.retained(o.now)) && (d == nil || d.state != VersioningEnabled) {
		return fail(ErrPerm, "a file under object lock goes only into a bucket with versioning Enabled")
	}
	if lock != nil {
		if err := o.lockNew(src, *lock); err != nil {
			return err
		}
	}
	src.VersionID = ""
	if d != nil {
		if dst != nil && dst.Type != TypeFile {
			dst = nil
		}
		if err := o.displace(d, d.key(dstName), dst); err != nil {
			return err
		}
		o.newVersion(d, src)
	}
	s, err := o.versioned(srcParent)
	if err != nil || s == nil {
		return err
	}
	if src.retained(o.now) {
		return fail(ErrPerm, "a file under object lock cannot leave its key")
	}
	// A key with older versions gets a delete marker over them; one
	// without (a temporary file renamed into place, as editors, rsync and
	// uploads do) just goes, leaving no history behind.
	key := s.key(srcName)
	recs, err := o.keyRecords(s.bucket, key)
	if err != nil || len(recs) == 0 {
		return err
	}
	if s.newNull() {
		if err := o.dropNullRecord(s, key); err != nil {
			return err
		}
	}
	_, err = o.deleteMarker(s, key)
	return err
}

// versionedCreate gives a new file made at (parent, name) its version id.
func (o *op) versionedCreate(parent uint64, name string, in *Inode) error {
	s, err := o.versioned(parent)
	if err != nil || s == nil {
		return err
	}
	if err := o.displace(s, s.key(name), nil); err != nil {
		return err
	}
	o.newVersion(s, in)
	return nil
}

// VersionScope says where dir's names are as S3 keys: the bucket (0 when
// dir is the root or not below a bucket with a versioning state), the key
// prefix of dir's names ("a/b/", or "" in the bucket itself) and the
// bucket's state. Snapshot reads: a view for browsing old versions.
func (n *Namespace) VersionScope(ctx context.Context, dir uint64) (uint64, string, Versioning, error) {
	var bucket uint64
	var dirKey string
	var st Versioning
	err := n.view(ctx, func(tx kv.ReadTxn) error {
		bucket, dirKey, st = 0, "", Unversioned
		var names []string
		for cur, depth := dir, 0; cur != RootID; depth++ {
			if depth > maxBucketDepth {
				return fail(ErrIO, "directory cycle above %d", dir)
			}
			in, err := getInode(ctx, tx, cur, true)
			if err != nil {
				return err
			}
			if in.Type != TypeDir {
				return fail(ErrNotDir, "inode %d is a %s", cur, in.Type)
			}
			if in.Parent != RootID {
				names = append(names, in.Name)
				cur = in.Parent
				continue
			}
			v, found, err := tx.SnapshotGet(ctx, versioningKey(in.ID))
			if err != nil || !found {
				return err
			}
			if err := decode(v, &st); err != nil {
				return err
			}
			bucket = in.ID
			for i := len(names) - 1; i >= 0; i-- {
				dirKey += names[i] + "/"
			}
			return nil
		}
		return nil
	})
	return bucket, dirKey, st, err
}
