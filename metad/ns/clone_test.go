package ns

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/flyfs/flyfs/core/layout"
)

// Clone shares a file's chunks through layers: a frozen layer per written
// source, references counted by the files reading through it, limits cut by
// truncates, and the layer's chunks handed to GC when its last file goes.
func TestCloneLayers(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	lay := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1}
	root := RootID
	mk := func(name string, length uint64) Inode {
		t.Helper()
		r, err := e.ns.Create(ctx, CreateRequest{Parent: root, Name: name, Mode: 0o644, Layout: &lay, Write: true, Exclusive: true})
		if err != nil {
			t.Fatal(err)
		}
		in, err := e.ns.Close(ctx, *r.Session, &LengthHint{Length: length, Wrote: true})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	clone := func(src uint64, name string) (Inode, error) {
		return e.ns.Clone(ctx, CloneRequest{Src: src, Parent: root, Name: name, Mode: 0o600, UID: 7})
	}
	stat := func(name string) Inode {
		t.Helper()
		in, err := e.stat("/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	rec := func(id uint64) *layerRecord {
		t.Helper()
		var out *layerRecord
		if err := e.ns.update(ctx, func(o *op) error {
			r, err := o.layer(id)
			out = r
			return err
		}); err != nil {
			if errors.Is(err, ErrInvalid) {
				return nil
			}
			t.Fatal(err)
		}
		return out
	}

	a := mk("a", 5<<20)
	if err := e.ns.SetXattr(ctx, a.ID, "user.k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	b, err := clone(a.ID, "b")
	if err != nil {
		t.Fatal(err)
	}
	a2 := stat("a")
	frozen := layout.Layer{ID: a.ID, Limit: 5 << 20}
	switch {
	case a2.Data == 0 || a2.Data == a.ID:
		t.Fatalf("the source kept writing to its frozen chunks: data %d", a2.Data)
	case !slices.Equal(a2.Layers, []layout.Layer{frozen}) || !slices.Equal(b.Layers, []layout.Layer{frozen}):
		t.Fatalf("layers: source %v, clone %v", a2.Layers, b.Layers)
	case b.Length != a.Length || b.Layout != a.Layout || b.Mode != 0o600 || b.UID != 7 || !b.OwnClean:
		t.Fatalf("clone: %+v", b)
	case rec(a.ID) == nil || rec(a.ID).Refs != 2:
		t.Fatalf("frozen layer's record: %+v", rec(a.ID))
	}
	if x, _ := e.ns.GetXattr(ctx, b.ID, "user.k"); x != nil {
		t.Fatalf("a copy took the source's xattrs: %q", x)
	}
	mustFsck(t, e.db)

	// A clone of a clone nobody wrote freezes nothing: one more reference.
	c, err := clone(b.ID, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Layers, []layout.Layer{frozen}) || stat("b").Data != 0 || rec(a.ID).Refs != 3 {
		t.Fatalf("clone of an unwritten clone: layers %v, b's data %d, refs %d", c.Layers, stat("b").Data, rec(a.ID).Refs)
	}
	// A snapshot's copy keeps mode, owner, times and xattrs.
	p, err := e.ns.Clone(ctx, CloneRequest{Src: a.ID, Parent: root, Name: "p", Preserve: true})
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := e.ns.GetXattr(ctx, p.ID, "user.k"); string(x) != "v" || p.Mode != a.Mode || p.Mtime != a.Mtime {
		t.Fatalf("preserved clone: %+v, xattr %q", p, x)
	}
	if rec(a.ID).Refs != 4 {
		t.Fatalf("refs after the preserved clone: %d", rec(a.ID).Refs)
	}
	mustFsck(t, e.db)

	// Opened for writing, b owns chunks again: the next clone freezes them
	// (one more layer on top), and a clone while open is refused.
	open, err := e.ns.Open(ctx, b.ID, 1 /* O_WRONLY */, ClientID("w"))
	if err != nil || open.Session == nil {
		t.Fatalf("open b for writing: %v", err)
	}
	if _, err := clone(b.ID, "busy"); !errors.Is(err, ErrBusy) {
		t.Fatalf("clone of a file open for writing: %v", err)
	}
	if _, err := e.ns.Close(ctx, *open.Session, &LengthHint{Length: 6 << 20, Wrote: true}); err != nil {
		t.Fatal(err)
	}
	d, err := clone(b.ID, "d")
	if err != nil {
		t.Fatal(err)
	}
	b2 := stat("b")
	top := layout.Layer{ID: b.ID, Limit: 6 << 20}
	if !slices.Equal(d.Layers, []layout.Layer{top, frozen}) || !slices.Equal(b2.Layers, []layout.Layer{top, frozen}) || b2.Data == 0 {
		t.Fatalf("second freeze: clone %v, source %v (data %d)", d.Layers, b2.Layers, b2.Data)
	}
	mustFsck(t, e.db)

	// A truncate cuts the limits; one to 0 lets go of every layer.
	if _, err := e.ns.Truncate(ctx, d.ID, 1<<20); err != nil {
		t.Fatal(err)
	}
	if got := stat("d").Layers; !slices.Equal(got, []layout.Layer{{ID: b.ID, Limit: 1 << 20}, {ID: a.ID, Limit: 1 << 20}}) {
		t.Fatalf("cut layers: %v", got)
	}
	if _, err := e.ns.Truncate(ctx, d.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got := stat("d").Layers; len(got) != 0 || rec(b.ID).Refs != 1 {
		t.Fatalf("truncated to 0: layers %v, top refs %d", got, rec(b.ID).Refs)
	}
	mustFsck(t, e.db)

	// Remove everything: GC deletes each file's own chunks, then each layer's
	// once its last file is gone, and nothing is left.
	for _, name := range []string{"a", "b", "c", "d", "p"} {
		if err := e.ns.Unlink(ctx, RemoveRequest{Parent: root, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	removed := drainGC(t, e.ns)
	removed = append(removed, drainGC(t, e.ns)...)
	var datas, layers []uint64
	for _, r := range removed {
		if r.Layer {
			layers = append(layers, r.DataID())
		} else {
			datas = append(datas, r.DataID())
		}
	}
	slices.Sort(layers)
	if want := []uint64{a.ID, b.ID}; !slices.Equal(layers, want) {
		t.Fatalf("layers reclaimed: %v, want %v", layers, want)
	}
	if len(datas) != 5 || slices.Contains(datas, a.ID) || slices.Contains(datas, b.ID) {
		t.Fatalf("own chunks reclaimed: %v", datas)
	}
	if rec(a.ID) != nil || rec(b.ID) != nil {
		t.Fatal("layer records outlived their files")
	}
	mustFsck(t, e.db)
}

// ShareInto gives an empty file open for writing another file's bytes:
// layers, length and layout; a retry answers the same; a file with bytes,
// a second writer or a source open for writing are refused.
func TestShareInto(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	lay := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1, Seed: 3}
	r, err := e.ns.Create(ctx, CreateRequest{Parent: RootID, Name: "src", Mode: 0o644, Layout: &lay, Write: true, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	src, err := e.ns.Close(ctx, *r.Session, &LengthHint{Length: 3 << 20, Wrote: true})
	if err != nil {
		t.Fatal(err)
	}
	other := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1, Seed: 9}
	d, err := e.ns.Create(ctx, CreateRequest{Parent: RootID, Name: "dst", Mode: 0o644, Layout: &other, Write: true, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	req := NewRequestID()
	dst, err := e.ns.ShareInto(ctx, req, src.ID, *d.Session)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Length != 3<<20 || dst.Layout != lay || len(dst.Layers) != 1 || dst.Layers[0].ID != src.ID {
		t.Fatalf("shared into: %+v", dst)
	}
	if again, err := e.ns.ShareInto(ctx, req, src.ID, *d.Session); err != nil || again.Length != dst.Length || len(again.Layers) != 1 {
		t.Fatalf("retry: %+v %v", again, err)
	}
	mustFsck(t, e.db)
	if _, err := e.ns.ShareInto(ctx, NewRequestID(), src.ID, *d.Session); !errors.Is(err, ErrInvalid) {
		t.Fatalf("share into a file with bytes: %v", err)
	}
	// A second writer of the destination, a writer of the source.
	d2, _ := e.ns.Create(ctx, CreateRequest{Parent: RootID, Name: "dst2", Mode: 0o644, Layout: &other, Write: true, Exclusive: true})
	extra, err := e.ns.Open(ctx, d2.Inode.ID, 1, ClientID("other"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.ShareInto(ctx, NewRequestID(), src.ID, *d2.Session); !errors.Is(err, ErrBusy) {
		t.Fatalf("share into a file with another writer: %v", err)
	}
	e.ns.Close(ctx, *extra.Session, nil)
	w, _ := e.ns.Open(ctx, src.ID, 1, ClientID("w"))
	if _, err := e.ns.ShareInto(ctx, NewRequestID(), src.ID, *d2.Session); !errors.Is(err, ErrBusy) {
		t.Fatalf("share of a source open for writing: %v", err)
	}
	e.ns.Close(ctx, *w.Session, nil)
	e.ns.Close(ctx, *d.Session, nil)
	e.ns.Close(ctx, *d2.Session, nil)
	mustFsck(t, e.db)
}

// A file cloned and written in turn gains a layer each time; at
// layout.MaxLayers a clone of it is refused (EINVAL: copy its bytes
// instead) and a snapshot leaves it out, saying why.
func TestCloneLayerBound(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	lay := Layout{TableID: 1, TableVersion: 1, ChunkSize: 1 << 20, Stripe: 1}
	if _, err := e.mkdir("/d"); err != nil {
		t.Fatal(err)
	}
	d, _ := e.stat("/d")
	r, err := e.ns.Create(ctx, CreateRequest{Parent: d.ID, Name: "f", Mode: 0o644, Layout: &lay, Write: true, Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.ns.Close(ctx, *r.Session, &LengthHint{Length: 1 << 20, Wrote: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < layout.MaxLayers; i++ {
		if _, err := e.ns.Clone(ctx, CloneRequest{Src: f.ID, Parent: d.ID, Name: fmt.Sprintf("c%02d", i), Mode: 0o644}); err != nil {
			t.Fatalf("clone %d: %v", i, err)
		}
		w, err := e.ns.Open(ctx, f.ID, 1, ClientID("w"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.ns.Close(ctx, *w.Session, &LengthHint{Length: 1 << 20, Wrote: true}); err != nil {
			t.Fatal(err)
		}
	}
	if in, _ := e.stat("/d/f"); len(in.Layers) != layout.MaxLayers {
		t.Fatalf("%d layers", len(in.Layers))
	}
	if _, err := e.ns.Clone(ctx, CloneRequest{Src: f.ID, Parent: d.ID, Name: "one-more", Mode: 0o644}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("clone past the bound: %v", err)
	}
	s, err := e.ns.Snapshot(ctx, SnapshotRequest{Dir: d.ID, Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// The last clone reads through as many as f.
	if len(s.Skipped) != 2 || !strings.HasPrefix(s.Skipped[1], "f (reads through 32 layers") || s.Files != layout.MaxLayers-1 {
		t.Fatalf("snapshot: %d files, skipped %q", s.Files, s.Skipped)
	}
	mustFsck(t, e.db)
}
