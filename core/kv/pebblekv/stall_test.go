package pebblekv_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

// A WAL device that stops answering must fail commits at their deadlines,
// not hold them (and the FUSE or S3 request above them) until it answers.

// stallFS holds every write and sync of a WAL file while armed, until gate
// is closed: a disk that has stopped answering.
type stallFS struct {
	vfs.FS
	armed *atomic.Bool
	gate  chan struct{}
}

func (s stallFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := s.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return stallFile{f, s}, nil
}

type stallFile struct {
	vfs.File
	s stallFS
}

func (f stallFile) hold() {
	if f.s.armed.Load() {
		<-f.s.gate
	}
}

func (f stallFile) Write(p []byte) (int, error) { f.hold(); return f.File.Write(p) }
func (f stallFile) Sync() error                 { f.hold(); return f.File.Sync() }
func (f stallFile) SyncData() error             { f.hold(); return f.File.SyncData() }

// openStalling opens a store on a stallFS. stall makes its WAL stop
// answering; release makes it answer again, for good (it is called at the
// end of the test too).
func openStalling(t *testing.T, opts pebblekv.Options) (db *kv.DB, stall, release func()) {
	t.Helper()
	fs := stallFS{vfs.NewMem(), &atomic.Bool{}, make(chan struct{})}
	opts.FS = fs
	db, err := pebblekv.Open("db", opts)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { fs.armed.Store(false); close(fs.gate) }) }
	t.Cleanup(func() { release(); db.Close() })
	return db, func() { fs.armed.Store(true) }, release
}

func TestCommitsEndAtDeadlineWhileWALStalls(t *testing.T) {
	db, stall, release := openStalling(t, pebblekv.Options{})
	stall()

	// Three writers one after another, each with its own deadline: the
	// first waits on the stalled sync, the later ones behind it.
	const deadline = 200 * time.Millisecond
	for i, key := range []string{"a", "b", "c"} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		done := make(chan error, 1)
		go func() {
			done <- db.Run(ctx, func(tx kv.Txn) error { tx.Set([]byte(key), []byte("v")); return nil })
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("commit %d succeeded on a WAL that does not answer", i)
			}
			if kv.CodeOf(err) != kv.CodeMaybeCommitted && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("commit %d: %v, want maybe committed or the deadline", i, err)
			}
		case <-time.After(deadline + 5*time.Second):
			t.Fatalf("commit %d still waits 5 s after its deadline", i)
		}
		cancel()
	}

	// Once the disk answers, the store works again and every given-up
	// commit is either whole or absent.
	release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.Run(ctx, func(tx kv.Txn) error { tx.Set([]byte("d"), []byte("v")); return nil }); err != nil {
		t.Fatalf("commit after the disk answers: %v", err)
	}
	err := db.RunRead(ctx, func(tx kv.ReadTxn) error {
		for _, k := range []string{"a", "b", "c", "d"} {
			v, found, err := tx.Get(ctx, []byte(k))
			if err != nil {
				return err
			}
			if found && string(v) != "v" {
				t.Errorf("%s = %q", k, v)
			}
			if k == "d" && !found {
				t.Errorf("d is missing after its commit succeeded")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSyncEndsAtDeadlineWhileWALStalls(t *testing.T) {
	db, stall, _ := openStalling(t, pebblekv.Options{SyncWindow: time.Hour})
	// A relaxed commit leaves its WAL record to a later sync.
	ctx := durability.Relaxed(context.Background())
	if err := db.Run(ctx, func(tx kv.Txn) error { tx.Set([]byte("a"), []byte("v")); return nil }); err != nil {
		t.Fatal(err)
	}
	stall()
	sctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- db.Sync(sctx) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("sync on a WAL that does not answer: %v, want the deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sync still waits 5 s after its deadline")
	}
}
