package ns

import (
	"testing"
	"time"
)

// lockEnv is a versioned bucket /b under a clock the test moves.
type lockEnv struct {
	*venv
	now *time.Time
}

func newLockEnv(t *testing.T) *lockEnv {
	t.Helper()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	opts := testOpts()
	opts.Now = func() time.Time { return now }
	e := newEnv(t, nil, opts)
	b, err := e.mkdir("/b")
	if err != nil {
		t.Fatal(err)
	}
	v := &venv{tenv: e, bucket: b.ID}
	v.setVersioning(VersioningEnabled)
	if _, err := v.ns.MkdirAll(ctx, MkdirAllRequest{Path: "/stage", Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	return &lockEnv{venv: v, now: &now}
}

// putLocked publishes a new file at key (in the bucket itself) with lock.
func (l *lockEnv) putLocked(key string, lock *Retention) (uint64, error) {
	l.t.Helper()
	name := "/stage/" + key
	c, err := l.create(name, true)
	if err != nil {
		l.t.Fatal(err)
	}
	sp, sn, _ := l.pn(name)
	return c.Inode.ID, l.ns.Rename(ctx, RenameRequest{SrcParent: sp, SrcName: sn, DstParent: l.bucket, DstName: key, Lock: lock})
}

func (l *lockEnv) until(d time.Duration) int64 { return l.now.Add(d).UnixNano() }

// TestObjectLock: a retained version cannot change or be removed for good,
// by any path, until its time; governance yields to the bypass, compliance
// and a legal hold do not; retention can be extended, not shortened.
func TestObjectLock(t *testing.T) {
	l := newLockEnv(t)
	gov := &Retention{SetRetention: true, Mode: RetainGovernance, Until: l.until(time.Hour)}
	g, err := l.putLocked("g", gov)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		want Errno
		do   func() error
	}{
		{"open for writing", ErrPerm, func() error { _, err := l.ns.Open(ctx, g, 1, "c"); return err }},
		{"truncate", ErrPerm, func() error { _, err := l.ns.Truncate(ctx, g, 0); return err }},
		{"create with O_TRUNC", ErrPerm, func() error {
			_, err := l.ns.Create(ctx, CreateRequest{Parent: l.bucket, Name: "g", Mode: 0o644, Truncate: true})
			return err
		}},
		{"rename within the bucket", ErrPerm, func() error { return l.rename("/b/g", "/b/g2", 0) }},
		{"rename out of the bucket", ErrPerm, func() error { return l.rename("/b/g", "/elsewhere", 0) }},
		{"delete the current version for good", ErrPerm, func() error {
			_, err := l.ns.DeleteVersion(ctx, RequestID{}, l.bucket, "g", l.idAt("g", 0), DeleteOptions{})
			return err
		}},
		{"shorten governance retention", ErrPerm, func() error {
			_, err := l.ns.SetRetention(ctx, g, Retention{SetRetention: true, Mode: RetainGovernance, Until: l.until(time.Minute)})
			return err
		}},
		{"extend governance retention", 0, func() error {
			_, err := l.ns.SetRetention(ctx, g, Retention{SetRetention: true, Mode: RetainGovernance, Until: l.until(2 * time.Hour)})
			return err
		}},
		{"unlink keeps it behind a marker", 0, func() error { return l.unlink("/b/g") }},
		{"delete the kept version for good", ErrPerm, func() error {
			_, err := l.ns.DeleteVersion(ctx, RequestID{}, l.bucket, "g", l.idAt("g", 1), DeleteOptions{})
			return err
		}},
		{"with the governance bypass", 0, func() error {
			_, err := l.ns.DeleteVersion(ctx, RequestID{}, l.bucket, "g", l.idAt("g", 1), DeleteOptions{BypassGovernance: true})
			return err
		}},
		{"a locked PUT into a bucket not Enabled", ErrPerm, func() error {
			if _, err := l.mkdir("/plain"); err != nil {
				return err
			}
			if _, err := l.create("/stage/p", true); err != nil {
				return err
			}
			p, _ := l.ino("/plain")
			return l.ns.Rename(ctx, RenameRequest{SrcParent: mustIno(l.tenv, "/stage"), SrcName: "p", DstParent: p, DstName: "p", Lock: gov})
		}},
		{"the versioned bucket moved out of the root", ErrPerm, func() error { return l.rename("/b", "/plain/b", 0) }},
	}
	for _, s := range steps {
		if err := wantErrno(s.do(), s.want); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}

	// Compliance: no bypass; extended only; a legal hold outlasts it.
	comp := &Retention{SetRetention: true, Mode: RetainCompliance, Until: l.until(time.Hour)}
	c, err := l.putLocked("c", comp)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.unlink("/b/c"); err != nil {
		t.Fatal(err)
	}
	del := func(bypass bool) error {
		_, err := l.ns.DeleteVersion(ctx, RequestID{}, l.bucket, "c", l.idAt("c", 1), DeleteOptions{BypassGovernance: bypass})
		return err
	}
	if err := wantErrno(del(true), ErrPerm); err != nil {
		t.Fatalf("compliance with the bypass: %v", err)
	}
	for _, r := range []Retention{{SetRetention: true, Mode: RetainGovernance, Until: l.until(3 * time.Hour), Bypass: true},
		{SetRetention: true, Mode: RetainCompliance, Until: l.until(time.Minute), Bypass: true}} {
		if _, err := l.ns.SetRetention(ctx, c, r); wantErrno(err, ErrPerm) != nil {
			t.Fatalf("weakening compliance %+v: %v", r, err)
		}
	}
	if _, err := l.ns.SetRetention(ctx, c, Retention{SetHold: true, LegalHold: true}); err != nil {
		t.Fatal(err)
	}
	*l.now = l.now.Add(2 * time.Hour) // retention over, the hold stays
	if err := wantErrno(del(false), ErrPerm); err != nil {
		t.Fatalf("under a legal hold: %v", err)
	}
	if _, err := l.ns.SetRetention(ctx, c, Retention{SetHold: true, LegalHold: false}); err != nil {
		t.Fatal(err)
	}
	if err := del(false); err != nil {
		t.Fatalf("after the hold and the retention: %v", err)
	}
	// A file open for writing cannot take retention.
	w, err := l.ns.Create(ctx, CreateRequest{Parent: l.bucket, Name: "w", Mode: 0o644, Write: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ns.SetRetention(ctx, w.Inode.ID, Retention{SetRetention: true, Mode: RetainGovernance, Until: l.until(time.Hour)}); wantErrno(err, ErrBusy) != nil {
		t.Fatalf("retention of a file open for writing: %v", err)
	}
	mustFsck(t, l.db)
}

func mustIno(e *tenv, path string) uint64 {
	e.t.Helper()
	ino, err := e.ino(path)
	if err != nil {
		e.t.Fatal(err)
	}
	return ino
}
