package engine

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
)

// TestStagedContentSyncsAtSync: a staged update returns without syncing
// its data file (it succeeds while every sync fails), reads back at once,
// and the next Sync syncs the file: it meets the injected fault, fails
// with ErrIO and turns the engine read-only. A relaxed update that is not
// staged syncs its content before its record and fails at once. A staged
// flag without Relaxed is not staged.
func TestStagedContentSyncsAtSync(t *testing.T) {
	for _, tc := range []struct {
		name           string
		u              Update
		applyFails     bool // meets the fault in Apply
		syncMeetsFault bool // Sync has staged content to sync
	}{
		{"staged", Update{Relaxed: true, Staged: true}, false, true},
		{"staged-direct", Update{Relaxed: true, Staged: true, Direct: true}, false, true},
		{"relaxed", Update{Relaxed: true}, true, false},
		{"staged-not-relaxed", Update{Staged: true}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := &Faults{}
			opts := testOptions()
			opts.Sync, opts.Faults = true, faults
			e := openT(t, t.TempDir(), opts)
			k := tkey(1, 1, 0)
			data := pattern(3, 512<<10)
			u := tc.u
			u.Data, u.ChunkSize, u.UpdateVer, u.CommitVer = data, 1<<20, 1, 1

			faults.Fail(OpSync, syscall.EIO)
			_, err := e.Apply(k, u)
			if tc.applyFails {
				if !errors.Is(err, ErrIO) {
					t.Fatalf("Apply with every sync failing: %v, want ErrIO", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("staged Apply synced its content: %v", err)
			}
			got, err := readHandleErr(e, k)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back before Sync: %v (%d bytes, equal %v)", err, len(got), bytes.Equal(got, data))
			}
			if !e.stagedPending() {
				t.Fatal("no data file pending after a staged write")
			}
			err = e.Sync()
			if !errors.Is(err, ErrIO) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("Sync with staged content and failing syncs: %v, want ErrIO wrapping EIO", err)
			}
			if st := e.Stats(); !st.ReadOnly {
				t.Fatal("a failed sync of staged content left the engine taking writes")
			}
			faults.Heal()
			if err := e.Sync(); err != nil {
				t.Fatalf("Sync once healed: %v", err)
			}
			if e.stagedPending() {
				t.Fatal("a data file still pending after a Sync that succeeded")
			}
		})
	}
}
