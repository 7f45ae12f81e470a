package ns

import (
	"errors"
	"testing"
)

// TestGenMovesOnEveryDataChange: a write session that wrote moves Gen at close,
// a size change moves it, attribute changes and sessions that wrote nothing do
// not. Front ends build ETags and If-Match on it.
func TestGenMovesOnEveryDataChange(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	p, name, _ := e.pn("/f")
	r, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Mode: 0o644, Write: true, Client: "c"})
	if err != nil {
		t.Fatal(err)
	}
	g0 := r.Inode.Gen
	in, err := e.ns.Close(ctx, *r.Session, &LengthHint{Length: 10, Wrote: true})
	if err != nil || in.Gen != g0+1 || in.Length != 10 {
		t.Fatalf("close after a write: gen %d (was %d), length %d, %v", in.Gen, g0, in.Length, err)
	}
	o, err := e.ns.Open(ctx, in.ID, 1 /* O_WRONLY */, "c")
	if err != nil {
		t.Fatal(err)
	}
	if in, err = e.ns.Close(ctx, *o.Session, &LengthHint{Length: 10}); err != nil || in.Gen != g0+1 {
		t.Fatalf("close without a write moved gen to %d (%v)", in.Gen, err)
	}
	if in, err = e.ns.SetAttr(ctx, in.ID, SetAttrRequest{Mask: SetMode, Mode: 0o600}); err != nil || in.Gen != g0+1 {
		t.Fatalf("chmod moved gen to %d (%v)", in.Gen, err)
	}
	if in, err = e.ns.Truncate(ctx, in.ID, 3); err != nil || in.Gen != g0+2 {
		t.Fatalf("truncate: gen %d (%v)", in.Gen, err)
	}
	if in, err = e.ns.ReportLength(ctx, in.ID, in.TruncateVer, 3, true); err != nil || in.Gen != g0+3 {
		t.Fatalf("report of an overwrite: gen %d (%v)", in.Gen, err)
	}
	if _, err := e.ns.Truncate(ctx, in.ID, MaxFileSize+1); !errors.Is(err, ErrFBig) {
		t.Fatalf("truncate past the largest file: %v, want EFBIG", err)
	}
	// A truncate conditional on Gen: at another Gen it changes nothing.
	if _, err := e.ns.SetAttr(ctx, in.ID, SetAttrRequest{Mask: SetSize | IfGenIs, Size: 1, Gen: in.Gen - 1}); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("truncate at a stale generation: %v, want ErrPrecondition", err)
	}
	if in, err = e.ns.SetAttr(ctx, in.ID, SetAttrRequest{Mask: SetSize | IfGenIs, Size: 1, Gen: in.Gen}); err != nil || in.Gen != g0+4 || in.Length != 1 {
		t.Fatalf("truncate at the current generation: gen %d, length %d (%v)", in.Gen, in.Length, err)
	}
}

// TestConditionalRemoveAndRename: IfIno/IfGen decide inside the transaction;
// a stale expectation is ErrPrecondition and changes nothing.
func TestConditionalRemoveAndRename(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	root := uint64(RootID)
	a, _ := e.create("/a", true)
	b, _ := e.create("/b", true)
	c, _ := e.create("/c", true)

	err := e.ns.Rename(ctx, RenameRequest{SrcParent: root, SrcName: "a", DstParent: root, DstName: "b", IfDstIno: b.Inode.ID, IfDstGen: b.Inode.Gen + 1})
	if !errors.Is(err, ErrPrecondition) {
		t.Fatalf("rename with a stale generation: %v", err)
	}
	err = e.ns.Rename(ctx, RenameRequest{SrcParent: root, SrcName: "a", DstParent: root, DstName: "b", IfDstIno: c.Inode.ID})
	if !errors.Is(err, ErrPrecondition) {
		t.Fatalf("rename expecting another inode: %v", err)
	}
	err = e.ns.Rename(ctx, RenameRequest{SrcParent: root, SrcName: "a", DstParent: root, DstName: "nope", IfDstIno: b.Inode.ID})
	if !errors.Is(err, ErrPrecondition) {
		t.Fatalf("rename expecting a missing destination to exist: %v", err)
	}
	if err := e.ns.Rename(ctx, RenameRequest{SrcParent: root, SrcName: "a", DstParent: root, DstName: "b", IfDstIno: b.Inode.ID, IfDstGen: b.Inode.Gen}); err != nil {
		t.Fatal(err)
	}
	if in, err := e.stat("/b"); err != nil || in.ID != a.Inode.ID {
		t.Fatalf("/b after the swap is %d (%v), want %d", in.ID, err, a.Inode.ID)
	}
	if err := e.ns.Unlink(ctx, RemoveRequest{Parent: root, Name: "c", IfIno: a.Inode.ID}); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("unlink expecting another inode: %v", err)
	}
	if err := e.ns.Unlink(ctx, RemoveRequest{Parent: root, Name: "c", IfIno: c.Inode.ID, IfGen: c.Inode.Gen}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.stat("/c"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("/c after conditional unlink: %v", err)
	}
}

// TestPruneImplicit: removing the last entry of implicit directories removes
// them up to the first explicit (or non-empty) one; explicit ones stay.
func TestPruneImplicit(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/bucket", Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	deep, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/bucket/x/y/z", Mode: 0o755, Implicit: true})
	if err != nil || !deep.Implicit {
		t.Fatalf("mkdir -p implicit: %+v %v", deep, err)
	}
	if _, err := e.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/bucket/x/keep", Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.Create(ctx, CreateRequest{Parent: deep.ID, Name: "obj", Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if err := e.ns.Unlink(ctx, RemoveRequest{Parent: deep.ID, Name: "obj", PruneImplicit: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.stat("/bucket/x/y"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("empty implicit /bucket/x/y survived: %v", err)
	}
	if _, err := e.stat("/bucket/x"); err != nil {
		t.Fatalf("/bucket/x (holds an explicit dir) was pruned: %v", err)
	}
	// Explicit directories are never pruned.
	if _, err := e.create("/bucket/x/keep/o", true); err != nil {
		t.Fatal(err)
	}
	keep, _ := e.ino("/bucket/x/keep")
	if err := e.ns.Unlink(ctx, RemoveRequest{Parent: keep, Name: "o", PruneImplicit: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.stat("/bucket/x/keep"); err != nil {
		t.Fatalf("explicit dir pruned: %v", err)
	}
	mustFsck(t, e.db)
}
