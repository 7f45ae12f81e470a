package ns

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func inlineOpts() Options {
	o := testOpts()
	o.InlineMax = 64
	return o
}

// writeSession creates path open for writing.
func (e *tenv) writeSession(path string) (Inode, Session) {
	e.t.Helper()
	p, name, err := e.pn(path)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Mode: 0o644, Write: true, Client: "c"})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Inode, *res.Session
}

// inlineData is what a read open answers of ino's inline data.
func (e *tenv) inlineData(ino uint64) string {
	e.t.Helper()
	r, err := e.ns.Open(ctx, ino, os.O_RDONLY, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return string(r.Inode.Inline)
}

func inlineHint(in Inode, data string) *LengthHint {
	return &LengthHint{TruncateVer: in.TruncateVer, Length: uint64(len(data)), Wrote: true, Inline: []byte(data)}
}

// A close that brings a new file's bytes keeps them in the inode: one
// transaction, no session left, Gen moved once; a retry answers the same.
func TestInlineClose(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	got, err := e.ns.Close(ctx, s, inlineHint(in, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Inline != nil || got.InlineLen != 5 || got.Length != 5 || got.Gen != 1 {
		t.Fatalf("closed inode: inline %q (%d), length %d, gen %d", got.Inline, got.InlineLen, got.Length, got.Gen)
	}
	if st, _ := e.stat("/f"); st.Inline != nil || st.InlineLen != 5 {
		t.Fatalf("a stat carries %d inline bytes, says %d", len(st.Inline), st.InlineLen)
	}
	if d := e.inlineData(in.ID); d != "hello" {
		t.Fatalf("a read open answers %q", d)
	}
	if ss, _ := e.ns.Sessions(ctx, in.ID); len(ss) != 0 {
		t.Fatalf("%d sessions left", len(ss))
	}
	again, err := e.ns.Close(ctx, s, inlineHint(in, "hello"))
	if err != nil || again.Gen != 1 || again.InlineLen != 5 {
		t.Fatalf("retried close: %v, gen %d, inline %d", err, again.Gen, again.InlineLen)
	}
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "other")); !errors.Is(err, ErrNotInlined) {
		t.Fatalf("a gone session's close with other bytes: %v, want ErrNotInlined", err)
	}
	mustFsck(t, e.db)
}

// A close that may not keep the bytes refuses and leaves the session open,
// so the writer can send them to storage and close as usual.
func TestInlineCloseRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  func(*Options)
		setup func(e *tenv, in *Inode, s Session) *LengthHint
	}{
		{name: "off", opts: func(o *Options) { o.InlineMax = 0 }},
		{name: "too big", setup: func(e *tenv, in *Inode, s Session) *LengthHint {
			return inlineHint(*in, string(bytes.Repeat([]byte("x"), 65)))
		}},
		{name: "another writer", setup: func(e *tenv, in *Inode, s Session) *LengthHint {
			if _, err := e.ns.Open(ctx, in.ID, os.O_WRONLY, "c2"); err != nil {
				e.t.Fatal(err)
			}
			return nil
		}},
		{name: "written before", setup: func(e *tenv, in *Inode, s Session) *LengthHint {
			if _, err := e.ns.ReportLength(ctx, in.ID, in.TruncateVer, 3, true); err != nil {
				e.t.Fatal(err)
			}
			return nil
		}},
		{name: "truncated while open", setup: func(e *tenv, in *Inode, s Session) *LengthHint {
			if _, err := e.ns.Truncate(ctx, in.ID, 10); err != nil {
				e.t.Fatal(err)
			}
			if _, err := e.ns.Truncate(ctx, in.ID, 0); err != nil {
				e.t.Fatal(err)
			}
			return nil
		}},
		{name: "length beyond the bytes", setup: func(e *tenv, in *Inode, s Session) *LengthHint {
			h := inlineHint(*in, "abc")
			h.Length = 10
			return h
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := inlineOpts()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			e := newEnv(t, nil, opts)
			in, s := e.writeSession("/f")
			hint := inlineHint(in, "abc")
			if tc.setup != nil {
				if h := tc.setup(e, &in, s); h != nil {
					hint = h
				}
			}
			if _, err := e.ns.Close(ctx, s, hint); !errors.Is(err, ErrNotInlined) {
				t.Fatalf("close: %v, want ErrNotInlined", err)
			}
			ss, _ := e.ns.Sessions(ctx, in.ID)
			if !containsSession(ss, s.ID) {
				t.Fatal("the refused close ended the session")
			}
			got, err := e.ns.Close(ctx, s, &LengthHint{TruncateVer: hint.TruncateVer, Length: 3, Wrote: true})
			if err != nil || got.InlineLen != 0 {
				t.Fatalf("the usual close after: %v, inline %d", err, got.InlineLen)
			}
			mustFsck(t, e.db)
		})
	}
}

// With several writers an inline close refuses whatever order their
// sessions sort in, also when two others sort before the closing one (the
// range read that finds them stops at two).
func TestInlineCloseAmongWriters(t *testing.T) {
	behind := false
	for try := 0; try < 40 && !behind; try++ {
		e := newEnv(t, nil, inlineOpts())
		in, s := e.writeSession("/f")
		for _, c := range []ClientID{"c2", "c3", "c4"} {
			if _, err := e.ns.Open(ctx, in.ID, os.O_WRONLY, c); err != nil {
				t.Fatal(err)
			}
		}
		ss, err := e.ns.Sessions(ctx, in.ID) // in key order
		if err != nil {
			t.Fatal(err)
		}
		before := 0
		for before < len(ss) && ss[before].ID != s.ID {
			before++
		}
		behind = before >= 2
		if _, err := e.ns.Close(ctx, s, inlineHint(in, "abc")); !errors.Is(err, ErrNotInlined) {
			t.Fatalf("inline close beside 3 writers (%d sort before it): %v, want ErrNotInlined", before, err)
		}
		if ss, _ := e.ns.Sessions(ctx, in.ID); !containsSession(ss, s.ID) || len(ss) != 4 {
			t.Fatalf("the refused close left %d sessions, its own kept: %v", len(ss), containsSession(ss, s.ID))
		}
		mustFsck(t, e.db)
	}
	if !behind {
		t.Fatal("in 40 tries the closing session never sorted after two others")
	}
}

func containsSession(ss []Session, id SessionID) bool {
	for _, s := range ss {
		if s.ID == id {
			return true
		}
	}
	return false
}

// A write open of an inline file names it for a spill; Spilled adopts the
// spill's data id only while the file is still inline at the spilled Gen;
// after it the open goes through and the file reads its chunks.
func TestInlineSpill(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "hello")); err != nil {
		t.Fatal(err)
	}
	_, err := e.ns.Open(ctx, in.ID, os.O_RDWR, "c")
	var inl *InlinedError
	if !errors.As(err, &inl) || inl.Ino != in.ID || !errors.Is(err, ErrInlined) {
		t.Fatalf("write open of an inline file: %v", err)
	}
	p, name, _ := e.pn("/f")
	if _, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Write: true}); !errors.As(err, &inl) {
		t.Fatalf("create-open of an inline file: %v", err)
	}
	// A read open and a truncating create need no spill.
	if r, err := e.ns.Open(ctx, in.ID, os.O_RDONLY, "c"); err != nil || string(r.Inode.Inline) != "hello" {
		t.Fatalf("read open: %v, %q", err, r.Inode.Inline)
	}
	cur, _ := e.stat("/f")
	d, err := e.ns.NewDataID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if won, err := e.ns.Spilled(ctx, in.ID, cur.Gen+1, d); err != nil || won {
		t.Fatalf("a spill at another Gen: won %v, %v", won, err)
	}
	if won, err := e.ns.Spilled(ctx, in.ID, cur.Gen, d); err != nil || !won {
		t.Fatalf("spill: won %v, %v", won, err)
	}
	if won, _ := e.ns.Spilled(ctx, in.ID, cur.Gen, d+1); won {
		t.Fatal("a second spill was adopted too")
	}
	after, _ := e.stat("/f")
	if after.InlineLen != 0 || after.Data != d || after.Length != 5 || after.Gen != cur.Gen {
		t.Fatalf("spilled inode: inline %d, data %d (want %d), length %d, gen %d", after.InlineLen, after.Data, d, after.Length, after.Gen)
	}
	r, err := e.ns.Open(ctx, in.ID, os.O_RDWR, "c")
	if err != nil || r.Session == nil {
		t.Fatalf("write open after the spill: %v", err)
	}
	if _, err := e.ns.Close(ctx, *r.Session, inlineHint(after, "x")); !errors.Is(err, ErrNotInlined) {
		t.Fatalf("a spilled file is inline again: %v", err)
	}
	mustFsck(t, e.db)
}

// A truncate trims an inline file's bytes; one that extends it leaves them
// (zeros follow); to 0 it is an empty file again. A truncating create
// needs no spill.
func TestInlineTruncate(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "hello")); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		size   uint64
		inline string
	}{{100, "hello"}, {3, "hel"}, {50, "hel"}, {2, "he"}, {0, ""}} {
		got, err := e.ns.Truncate(ctx, in.ID, step.size)
		if err != nil || got.Length != step.size || int(got.InlineLen) != len(step.inline) {
			t.Fatalf("truncate to %d: %v, length %d, inline %d (want %q)", step.size, err, got.Length, got.InlineLen, step.inline)
		}
		if d := e.inlineData(in.ID); d != step.inline {
			t.Fatalf("after truncate to %d the data is %q, want %q", step.size, d, step.inline)
		}
		mustFsck(t, e.db)
	}
	in, s = e.writeSession("/g")
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "abc")); err != nil {
		t.Fatal(err)
	}
	p, name, _ := e.pn("/g")
	res, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Write: true, Truncate: true})
	if err != nil || res.Inode.InlineLen != 0 || res.Inode.Length != 0 {
		t.Fatalf("truncating create of an inline file: %v, inline %d", err, res.Inode.InlineLen)
	}
	mustFsck(t, e.db)
}

// A clone of an inline file copies its bytes (it has no chunks to share);
// sharing them into a writer's file is refused (the writer copies bytes).
func TestInlineClone(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "hello")); err != nil {
		t.Fatal(err)
	}
	c, err := e.ns.Clone(ctx, CloneRequest{Src: in.ID, Parent: RootID, Name: "c", Mode: 0o644})
	if err != nil || c.InlineLen != 5 || c.Length != 5 || len(c.Layers) != 0 {
		t.Fatalf("clone: %v, inline %d, length %d, %d layers", err, c.InlineLen, c.Length, len(c.Layers))
	}
	if d := e.inlineData(c.ID); d != "hello" {
		t.Fatalf("the clone reads %q", d)
	}
	_, ws := e.writeSession("/w")
	if _, err := e.ns.ShareInto(ctx, NewRequestID(), in.ID, ws); !errors.Is(err, ErrInvalid) {
		t.Fatalf("share an inline file into a writer's: %v, want EINVAL", err)
	}
	if _, err := e.ns.Close(ctx, ws, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.unlink("/f"); err != nil { // the clone's bytes are its own
		t.Fatal(err)
	}
	if rm := drainGC(t, e.ns); len(rm) != 1 || rm[0].Ino != in.ID {
		t.Fatalf("GC removed %+v", rm)
	}
	if d := e.inlineData(c.ID); d != "hello" {
		t.Fatalf("the clone reads %q once its source is gone", d)
	}
	mustFsck(t, e.db)
}

// A path resolution carries the bytes only when asked, from its own
// snapshot; a truncate's cut shows at once.
func TestResolveWithInline(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "hello")); err != nil {
		t.Fatal(err)
	}
	plain, err := e.ns.Resolve(ctx, "/f", true)
	if err != nil || plain.Inline != nil || plain.InlineLen != 5 {
		t.Fatalf("Resolve: %v, %d inline bytes, says %d", err, len(plain.Inline), plain.InlineLen)
	}
	got, err := resolveInline(e, "/f")
	if err != nil || string(got.Inline) != "hello" {
		t.Fatalf("resolve with inline: %v, inline %q", err, got.Inline)
	}
	if _, err := e.ns.SetAttr(ctx, in.ID, SetAttrRequest{Mask: SetSize, Size: 2}); err != nil {
		t.Fatal(err)
	}
	if got, err = resolveInline(e, "/f"); err != nil || string(got.Inline) != "he" {
		t.Fatalf("after a truncate to 2: %v, inline %q", err, got.Inline)
	}
	e.mkdir("/d")
	if d, err := resolveInline(e, "/d"); err != nil || d.Inline != nil {
		t.Fatalf("a directory: %v, inline %q", err, d.Inline)
	}
}

func resolveInline(e *tenv, path string) (Inode, error) {
	in, _, _, err := e.ns.ResolveRead(ctx, path, true, true, "")
	return in, err
}

// ResolveRead brings the asked attribute from its snapshot, or says there is
// none.
func TestResolveReadXattr(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	if _, err := e.ns.Close(ctx, s, inlineHint(in, "hi")); err != nil {
		t.Fatal(err)
	}
	if _, v, found, err := e.ns.ResolveRead(ctx, "/f", true, false, "user.rec"); err != nil || found || v != nil {
		t.Fatalf("no attribute yet: %q, %v, %v", v, found, err)
	}
	if err := e.ns.SetXattr(ctx, in.ID, "user.rec", []byte("r1"), 0); err != nil {
		t.Fatal(err)
	}
	got, v, found, err := e.ns.ResolveRead(ctx, "/f", true, true, "user.rec")
	if err != nil || !found || string(v) != "r1" || string(got.Inline) != "hi" {
		t.Fatalf("ResolveRead: %q, %v, inline %q, %v", v, found, got.Inline, err)
	}
}

// A read open from a caller that holds the bytes of the file's current
// generation answers without them; any change of the bytes (a truncate,
// here) moves the generation, and the next such open brings them again.
func TestOpenReadKnowingTheBytes(t *testing.T) {
	e := newEnv(t, nil, inlineOpts())
	in, s := e.writeSession("/f")
	closed, err := e.ns.Close(ctx, s, inlineHint(in, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	open := func(known uint64) Inode {
		t.Helper()
		got, err := e.ns.OpenRead(ctx, in.ID, known)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, row := range []struct {
		name  string
		known uint64
		want  string
	}{
		{"holds nothing", 0, "hello"},
		{"holds the current generation", closed.Gen, ""},
		{"holds an older generation", closed.Gen - 1, "hello"},
	} {
		if got := open(row.known); string(got.Inline) != row.want || got.InlineLen != 5 {
			t.Errorf("%s: inline %q (%d), want %q", row.name, got.Inline, got.InlineLen, row.want)
		}
	}
	cut, err := e.ns.Truncate(ctx, in.ID, 3)
	if err != nil || cut.Gen == closed.Gen {
		t.Fatalf("truncate: %v, gen %d (was %d)", err, cut.Gen, closed.Gen)
	}
	if got := open(closed.Gen); string(got.Inline) != "hel" {
		t.Fatalf("after a truncate, a caller holding the old bytes gets %q", got.Inline)
	}
}
