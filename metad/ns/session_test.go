package ns

import (
	"os"
	"testing"
)

// ListSessions names each open-for-write file by the path a create opened
// it under (none for an open by inode), with its length, and pages by limit.
func TestListSessions(t *testing.T) {
	e := newEnv(t, nil, testOpts())
	if _, err := e.mkdir("/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.mkdir("/a/b"); err != nil {
		t.Fatal(err)
	}
	p, name, err := e.pn("/a/b/log")
	if err != nil {
		t.Fatal(err)
	}
	created, err := e.ns.Create(ctx, CreateRequest{Parent: p, Name: name, Mode: 0o644, Write: true, Client: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.create("/a/plain", false)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := e.ns.Open(ctx, plain.Inode.ID, os.O_WRONLY, "c2")
	if err != nil {
		t.Fatal(err)
	}

	got, more, err := e.ns.ListSessions(ctx, 10)
	if err != nil || more || len(got) != 2 {
		t.Fatalf("ListSessions: %d sessions, more %v, %v", len(got), more, err)
	}
	byIno := map[uint64]OpenFile{}
	for _, f := range got {
		byIno[f.Ino] = f
	}
	if f := byIno[created.Inode.ID]; f.Path != "/a/b/log" || f.Client != "c1" || f.ID != created.Session.ID || f.Opened == 0 {
		t.Errorf("the created file's session: %+v", f)
	}
	if f := byIno[plain.Inode.ID]; f.Path != "" || f.Client != "c2" || f.ID != opened.Session.ID {
		t.Errorf("the opened file's session: %+v", f)
	}

	if got, more, err := e.ns.ListSessions(ctx, 1); err != nil || !more || len(got) != 1 {
		t.Fatalf("a page of 1: %d sessions, more %v, %v", len(got), more, err)
	}

	// A moved directory: the path follows it; a removed one: no path.
	if err := e.rename("/a/b", "/a/c", 0); err != nil {
		t.Fatal(err)
	}
	got, _, _ = e.ns.ListSessions(ctx, 10)
	for _, f := range got {
		if f.Ino == created.Inode.ID && f.Path != "/a/c/log" {
			t.Errorf("after the directory's rename: path %q", f.Path)
		}
	}
	if _, err := e.ns.Close(ctx, *created.Session, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ns.Close(ctx, *opened.Session, nil); err != nil {
		t.Fatal(err)
	}
	if got, more, err := e.ns.ListSessions(ctx, 10); err != nil || more || len(got) != 0 {
		t.Fatalf("after the closes: %+v, more %v, %v", got, more, err)
	}
}
