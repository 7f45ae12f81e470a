package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of the given size (e.g. "8m") under a temp dir
// and unmounts it at cleanup. It skips the test when mounting is impossible.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("ENOSPC test needs to mount a small tmpfs (run as root): mount: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return mnt
}

// Fill a real 8 MiB filesystem through the engine until it reports
// ErrNoSpace: either through the metadata reserve (the default path) or
// through fallocate itself failing with ENOSPC.
func TestNoSpace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reserve int64
	}{
		{"reserve", 2 << 20},
		{"fallocate", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := mountTmpfs(t, "8m")
			opts := Options{Sync: true, GroupBlocks: 4, ReserveBytes: tc.reserve, MetaMemTableSize: 256 << 10}
			e, err := Open(mnt, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close() // before the unmount cleanup
			const cs = 1 << 20
			committed := map[Key][]byte{}
			var full error
			for i := 0; full == nil; i++ {
				if i > 200 {
					t.Fatal("never ran out of space on an 8 MiB filesystem")
				}
				k := tkey(1, uint64(i), 0)
				data := pattern(uint64(i), 150<<10*(1+i%3)) // 256 KiB and 512 KiB classes
				if _, err := e.Apply(k, Update{Replace: true, Data: data, ChunkSize: cs, UpdateVer: 1, CommitVer: 1}); err != nil {
					full = err
					break
				}
				committed[k] = data
			}
			if !errors.Is(full, ErrNoSpace) || errors.Is(full, ErrReadOnly) {
				t.Fatalf("first failure = %v, want ErrNoSpace (only)", full)
			}
			if len(committed) == 0 {
				t.Fatal("nothing fit")
			}
			st := e.Stats()
			if !st.Full || st.ReadOnly || !strings.Contains(st.FullReason, "no space") {
				t.Fatalf("stats after ENOSPC: full=%v read-only=%v reason=%q", st.Full, st.ReadOnly, st.FullReason)
			}
			// Every write fails fast with ErrNoSpace meanwhile, even one
			// needing no new block.
			var some Key
			for k := range committed {
				some = k
				break
			}
			_, err = e.Apply(some, Update{Offset: uint32(len(committed[some])), Data: []byte{1}, ChunkSize: cs, UpdateVer: 2, CommitVer: 2})
			if !errors.Is(err, ErrNoSpace) || errors.Is(err, ErrReadOnly) {
				t.Fatalf("write after ENOSPC = %v, want ErrNoSpace", err)
			}
			// Everything committed still reads back; commits of pending
			// versions still go through.
			for k, data := range committed {
				if got, _ := readChunk(t, e, k); !bytes.Equal(got, data) {
					t.Fatalf("%v lost after ENOSPC", k)
				}
			}
			if _, err := e.Commit(some, 1, 2, false); err != nil {
				t.Fatalf("commit while full: %v", err)
			}
			if rep, err := e.Verify(t.Context()); err != nil || !rep.OK() {
				t.Fatalf("Verify: %v %+v", err, rep)
			}
			// Space returns without a restart: removing chunks frees their
			// blocks, and the next write finds one and ends the full state.
			var freed []Key
			for k := range committed {
				if k != some && len(freed) < 2 {
					freed = append(freed, k)
				}
			}
			for _, k := range freed {
				if err := e.Remove(k); err != nil {
					t.Fatalf("remove while full: %v", err)
				}
				delete(committed, k)
			}
			mustApply(t, e, freed[0], Update{Replace: true, Data: pattern(7, 100<<10), ChunkSize: cs, UpdateVer: 1, CommitVer: 1})
			if st := e.Stats(); st.Full {
				t.Fatalf("still full after a write found room: %q", st.FullReason)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// After a restart the data is intact.
			e = openT(t, mnt, opts)
			for k, data := range committed {
				if got, _ := readChunk(t, e, k); !bytes.Equal(got, data) {
					t.Fatalf("%v lost after reopen", k)
				}
			}
			t.Logf("%d chunks fit; error: %v", len(committed), full)
		})
	}
}
