package ns

import (
	"fmt"
	"strings"
	"testing"
)

// venv is a namespace with one bucket /b whose versioning the test sets.
type venv struct {
	*tenv
	bucket uint64
}

func newVenv(t *testing.T, st Versioning) *venv {
	t.Helper()
	e := newEnv(t, nil, testOpts())
	b, err := e.mkdir("/b")
	if err != nil {
		t.Fatal(err)
	}
	v := &venv{tenv: e, bucket: b.ID}
	v.setVersioning(st)
	return v
}

func (v *venv) setVersioning(st Versioning) {
	v.t.Helper()
	if err := v.ns.SetVersioning(ctx, v.bucket, st); err != nil {
		v.t.Fatal(err)
	}
}

// put publishes a new file at key as the gateway does: made in /stage,
// then renamed over the key. Returns the new file's inode id.
func (v *venv) put(key string) uint64 {
	v.t.Helper()
	if _, err := v.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/stage", Mode: 0o755}); err != nil {
		v.t.Fatal(err)
	}
	name := fmt.Sprintf("/stage/%d", len(v.ids))
	v.ids[name] = 1
	c, err := v.create(name, true)
	if err != nil {
		v.t.Fatal(err)
	}
	dir := "/b"
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		if _, err := v.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/b/" + key[:i], Mode: 0o755, Implicit: true}); err != nil {
			v.t.Fatal(err)
		}
		dir += "/" + key[:i]
	}
	sp, sn, _ := v.pn(name)
	dp, err := v.ino(dir)
	if err != nil {
		v.t.Fatal(err)
	}
	if err := v.ns.Rename(ctx, RenameRequest{SrcParent: sp, SrcName: sn, DstParent: dp, DstName: key[strings.LastIndexByte(key, '/')+1:]}); err != nil {
		v.t.Fatal(err)
	}
	return c.Inode.ID
}

// history renders key's versions newest first: "cur:<ino>" for the
// current one, "<ino>" for a kept one, "dm" for a delete marker; ids
// "null" marked with "=null".
func (v *venv) history(key string) string {
	v.t.Helper()
	var out []string
	if in, err := v.stat("/b/" + key); err == nil && in.Type == TypeFile {
		out = append(out, fmt.Sprintf("cur:%d%s", in.ID, nullMark(versionOf(&in))))
	}
	recs, _, err := v.ns.ListVersions(ctx, ListVersionsRequest{Bucket: v.bucket, Prefix: key})
	if err != nil {
		v.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Key != key {
			continue
		}
		if r.DeleteMarker() {
			out = append(out, "dm"+nullMark(r.ID))
		} else {
			out = append(out, fmt.Sprintf("%d%s", r.Ino, nullMark(r.ID)))
		}
	}
	return strings.Join(out, " ")
}

func nullMark(id string) string {
	if id == NullVersion {
		return "=null"
	}
	return ""
}

// idAt is the id of key's i-th version, newest first (the current one
// first, if any).
func (v *venv) idAt(key string, i int) string {
	v.t.Helper()
	if in, err := v.stat("/b/" + key); err == nil && in.Type == TypeFile {
		if i == 0 {
			return versionOf(&in)
		}
		i--
	}
	recs, _, err := v.ns.ListVersions(ctx, ListVersionsRequest{Bucket: v.bucket, Prefix: key})
	if err != nil {
		v.t.Fatal(err)
	}
	var mine []VersionEntry
	for _, r := range recs {
		if r.Key == key {
			mine = append(mine, r)
		}
	}
	if i >= len(mine) {
		v.t.Fatalf("%q has no version %d: %s", key, i, v.history(key))
	}
	return mine[i].ID
}

func (v *venv) want(key, history string) {
	v.t.Helper()
	got := v.history(key)
	if got != history {
		v.t.Fatalf("versions of %q: %q, want %q", key, got, history)
	}
	mustFsck(v.t, v.db)
}

// TestVersionsEnabled: overwrites and deletes in an Enabled bucket keep
// every version; deleting versions by id removes them for good, and the
// newest remaining object version becomes current again.
func TestVersionsEnabled(t *testing.T) {
	v := newVenv(t, VersioningEnabled)
	a := v.put("k")
	v.want("k", fmt.Sprintf("cur:%d", a))
	b := v.put("k")
	v.want("k", fmt.Sprintf("cur:%d %d", b, a))
	if err := v.unlink("/b/k"); err != nil {
		t.Fatal(err)
	}
	v.want("k", fmt.Sprintf("dm %d %d", b, a))

	// A DELETE of a key with no current version adds another marker.
	if _, err := v.ns.DeleteKey(ctx, RequestID{}, v.bucket, "k", Cond{}, false); err != nil {
		t.Fatal(err)
	}
	v.want("k", fmt.Sprintf("dm dm %d %d", b, a))

	// Deleting both markers brings the last object back.
	for i := 0; i < 2; i++ {
		res, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, "k", v.idAt("k", 0), DeleteOptions{})
		if err != nil || !res.DeleteMarker {
			t.Fatalf("delete marker: %+v, %v", res, err)
		}
	}
	v.want("k", fmt.Sprintf("cur:%d %d", b, a))
	if got, _ := v.ino("/b/k"); got != b {
		t.Fatalf("/b/k is inode %d, want %d", got, b)
	}

	// The old version read by id.
	old, err := v.ns.GetVersion(ctx, v.bucket, "k", v.idAt("k", 1))
	if err != nil || old.Inode == nil || old.Inode.ID != a {
		t.Fatalf("GetVersion: %+v, %v", old, err)
	}
	if _, err := v.ns.GetVersion(ctx, v.bucket, "k", "nope"); wantErrno(err, ErrNotExist) != nil {
		t.Fatal(wantErrno(err, ErrNotExist))
	}

	// Deleting the current version by id: the older one is current again,
	// and the deleted file is collected.
	res, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, "k", v.idAt("k", 0), DeleteOptions{})
	if err != nil || res.DeleteMarker || res.Promoted == "" {
		t.Fatalf("delete current: %+v, %v", res, err)
	}
	v.want("k", fmt.Sprintf("cur:%d", a))
	gone := drainGC(t, v.ns)
	if len(gone) != 1 || gone[0].Ino != b {
		t.Fatalf("collected %+v, want inode %d", gone, b)
	}
	if _, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, "k", "nope", DeleteOptions{}); wantErrno(err, ErrNotExist) != nil {
		t.Fatal(wantErrno(err, ErrNotExist))
	}
	mustFsck(t, v.db)
}

// TestVersionsSuspended: in a Suspended bucket new versions take the id
// null, replacing the key's earlier null version; versions with real ids
// are kept.
func TestVersionsSuspended(t *testing.T) {
	v := newVenv(t, Unversioned)
	n := v.put("k") // made before versioning: null
	v.setVersioning(VersioningEnabled)
	e := v.put("k")
	v.want("k", fmt.Sprintf("cur:%d %d=null", e, n))
	v.setVersioning(VersioningSuspended)
	s := v.put("k")
	// The null version goes for good; the real one is kept.
	v.want("k", fmt.Sprintf("cur:%d=null %d", s, e))
	s2 := v.put("k")
	v.want("k", fmt.Sprintf("cur:%d=null %d", s2, e))
	if err := v.unlink("/b/k"); err != nil {
		t.Fatal(err)
	}
	v.want("k", fmt.Sprintf("dm=null %d", e))
	if _, err := v.ns.DeleteKey(ctx, RequestID{}, v.bucket, "k", Cond{}, false); err != nil {
		t.Fatal(err)
	}
	v.want("k", fmt.Sprintf("dm=null %d", e))
	gone := drainGC(t, v.ns)
	if len(gone) != 3 {
		t.Fatalf("collected %+v, want the three null versions %d %d %d", gone, n, s, s2)
	}
}

// TestVersionsNestedKeys: a delete prunes the implicit directories it
// empties, and bringing the version back makes them again.
func TestVersionsNestedKeys(t *testing.T) {
	v := newVenv(t, VersioningEnabled)
	a := v.put("d/e/x")
	id, err := v.ns.DeleteKey(ctx, RequestID{}, v.bucket, "d/e/x", Cond{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.stat("/b/d"); wantErrno(err, ErrNotExist) != nil {
		t.Fatalf("implicit /b/d after the delete: %v", err)
	}
	v.want("d/e/x", fmt.Sprintf("dm %d", a))
	if _, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, "d/e/x", id, DeleteOptions{PruneImplicit: true}); err != nil {
		t.Fatal(err)
	}
	v.want("d/e/x", fmt.Sprintf("cur:%d", a))
	d, err := v.stat("/b/d/e")
	if err != nil || !d.Implicit {
		t.Fatalf("/b/d/e made again: %+v, %v", d, err)
	}
	// Deleting the only version leaves nothing, directories included.
	if _, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, "d/e/x", v.idAt("d/e/x", 0), DeleteOptions{PruneImplicit: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.stat("/b/d"); wantErrno(err, ErrNotExist) != nil {
		t.Fatalf("/b/d after its last version went: %v", err)
	}
	v.want("d/e/x", "")
}

// TestVersionsPOSIX: the POSIX calls keep versions as S3 calls do: unlink
// and rename over keep the old file, a rename away leaves a delete marker,
// a file open for writing when it is displaced is not collected at close.
func TestVersionsPOSIX(t *testing.T) {
	v := newVenv(t, VersioningEnabled)
	c, err := v.create("/b/p", true)
	if err != nil || c.Inode.VersionID == "" {
		t.Fatalf("create in an Enabled bucket: %+v, %v", c.Inode, err)
	}
	q, err := v.create("/b/q", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.rename("/b/q", "/b/p", 0); err != nil {
		t.Fatal(err)
	}
	v.want("p", fmt.Sprintf("cur:%d %d", q.Inode.ID, c.Inode.ID))
	v.want("q", "") // no older versions: the temporary name just goes
	if err := v.rename("/b/p", "/elsewhere", 0); err != nil {
		t.Fatal(err)
	}
	v.want("p", fmt.Sprintf("dm %d", c.Inode.ID))
	moved, _ := v.stat("/elsewhere")
	if moved.VersionID != "" {
		t.Fatalf("a file outside a bucket has version id %q", moved.VersionID)
	}

	// Displaced while open for writing: kept after its last close.
	w, err := v.ns.Create(ctx, CreateRequest{Parent: v.bucket, Name: "w", Mode: 0o644, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.unlink("/b/w"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ns.Close(ctx, *w.Session, nil); err != nil {
		t.Fatal(err)
	}
	v.want("w", fmt.Sprintf("dm %d", w.Inode.ID))
	if gone := drainGC(t, v.ns); len(gone) != 0 {
		t.Fatalf("collected kept versions: %+v", gone)
	}

	// What would lose versions is refused.
	if _, err := v.mkdir("/b/dir"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.create("/b/dir/f", true); err != nil {
		t.Fatal(err)
	}
	if err := wantErrno(v.removeAll("/b/dir"), ErrNotEmpty); err != nil {
		t.Fatal(err)
	}
	if err := v.unlink("/b/dir/f"); err != nil {
		t.Fatal(err)
	}
	if err := v.rmdir("/b/dir"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"p", "w"} {
		for {
			if _, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, k, v.idAt(k, 0), DeleteOptions{}); err != nil {
				break
			}
			if v.history(k) == "" {
				break
			}
		}
	}
	if err := wantErrno(v.rmdir("/b"), ErrNotEmpty); err != nil {
		t.Fatal(err) // dir/f's versions
	}
	for v.history("dir/f") != "" {
		if _, err := v.ns.DeleteVersion(ctx, RequestID{}, v.bucket, "dir/f", v.idAt("dir/f", 0), DeleteOptions{PruneImplicit: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.rmdir("/b"); err != nil {
		names, _ := v.names("/b")
		t.Fatalf("%v; /b holds %v", err, names)
	}
	drainGC(t, v.ns)
	mustFsck(t, v.db)
}

// TestListVersionsPaging: records in key order, each key newest first,
// with prefix, delimiter and resumption at any record.
func TestListVersionsPaging(t *testing.T) {
	v := newVenv(t, VersioningEnabled)
	keys := []string{"a", "a/x", "a/y", "a0", "b", "c/d/e"}
	for _, k := range keys {
		v.put(k + "-obj")
		v.put(k + "-obj")
		v.put(k + "-obj")
	}
	all, more, err := v.ns.ListVersions(ctx, ListVersionsRequest{Bucket: v.bucket})
	if err != nil || more || len(all) != 2*len(keys) {
		t.Fatalf("all: %d records, more %v, %v", len(all), more, err)
	}
	for i := 1; i < len(all); i++ {
		p, c := all[i-1], all[i]
		if p.Key > c.Key || (p.Key == c.Key && p.Seq <= c.Seq) {
			t.Fatalf("out of order: %q/%d before %q/%d", p.Key, p.Seq, c.Key, c.Seq)
		}
	}
	for _, page := range []int{1, 2, 3, 5} {
		var got []VersionEntry
		req := ListVersionsRequest{Bucket: v.bucket, Limit: page}
		for i := 0; ; i++ {
			res, more, err := v.ns.ListVersions(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, res...)
			if !more {
				break
			}
			last := res[len(res)-1]
			req.AfterKey, req.AfterSeq = last.Key, last.Seq
			if i > 100 {
				t.Fatal("paging does not end")
			}
		}
		if places(got) != places(all) {
			t.Fatalf("pages of %d: %d records, want %d", page, len(got), len(all))
		}
	}
	res, _, err := v.ns.ListVersions(ctx, ListVersionsRequest{Bucket: v.bucket, Delimiter: "/"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res {
		if r.Prefix {
			names = append(names, r.Key+"(p)")
		} else {
			names = append(names, r.Key)
		}
	}
	if want := "[a-obj a-obj a/(p) a0-obj a0-obj b-obj b-obj c/(p)]"; fmt.Sprint(names) != want {
		t.Fatalf("with delimiter: %v, want %s", names, want)
	}
	res, _, err = v.ns.ListVersions(ctx, ListVersionsRequest{Bucket: v.bucket, Prefix: "a/", Delimiter: "/", AfterKey: "a/x-obj"})
	if err != nil || len(res) != 2 || res[0].Key != "a/y-obj" {
		t.Fatalf("prefix a/ after a/x-obj: %+v, %v", res, err)
	}
}

// places renders entries as key/seq.
func places(es []VersionEntry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s/%d ", e.Key, e.Seq)
	}
	return b.String()
}
