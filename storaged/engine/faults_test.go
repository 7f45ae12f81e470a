package engine

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"
)

// A disk that fails one kind of I/O: the operation that meets the fault
// fails with ErrIO (the errno kept), the engine turns read-only with the
// reason, what was committed stays readable once the fault heals, and a
// restart on the healed disk takes writes again.
func TestInjectedIOErrors(t *testing.T) {
	for _, tc := range []struct {
		op     IOOp
		reason string // in ReadOnlyReason
		// meet performs the I/O that meets the fault; it must fail.
		meet func(e *Engine, k Key) error
	}{
		{OpRead, "read error", func(e *Engine, k Key) error {
			h, err := e.Get(k)
			if err != nil {
				return err
			}
			defer h.Release()
			_, err = readHandle(h)
			return err
		}},
		{OpWrite, "write error", func(e *Engine, k Key) error {
			_, err := e.Apply(k, Update{Offset: 10, Data: []byte("over"), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
			return err
		}},
		{OpSync, "write error", func(e *Engine, k Key) error {
			_, err := e.Apply(k, Update{Replace: true, Data: []byte("new"), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
			return err
		}},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			dir := t.TempDir()
			faults := &Faults{}
			opts := testOptions()
			opts.Sync, opts.Faults = true, faults
			e, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			k := tkey(1, 1, 0)
			data := pattern(1, 200<<10)
			mustApply(t, e, k, Update{Replace: true, Data: data, ChunkSize: 1 << 20, UpdateVer: 1, CommitVer: 1})

			faults.Fail(tc.op, syscall.EIO)
			err = tc.meet(e, k)
			if !errors.Is(err, ErrIO) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("%v with an injected EIO: %v, want ErrIO wrapping EIO", tc.op, err)
			}
			st := e.Stats()
			if !st.ReadOnly || !strings.Contains(st.ReadOnlyReason, tc.reason) {
				t.Fatalf("after a %v error: read-only %v (%q), want read-only for %q", tc.op, st.ReadOnly, st.ReadOnlyReason, tc.reason)
			}
			faults.Heal()
			if _, err := e.Apply(k, Update{Offset: 0, Data: []byte("x"), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2}); !errors.Is(err, ErrReadOnly) {
				t.Fatalf("a write after the disk failed: %v, want ErrReadOnly until a restart", err)
			}
			if got, m := readChunk(t, e, k); !bytes.Equal(got, data) || m.CommitVer != 1 {
				t.Fatalf("the committed chunk after the fault: %d bytes at v%d", len(got), m.CommitVer)
			}
			e.Close()

			e = openT(t, dir, opts)
			if e.Stats().ReadOnly {
				t.Fatal("read-only again after a restart on the healed disk")
			}
			mustApply(t, e, k, Update{Offset: 0, Data: []byte("again"), ChunkSize: 1 << 20, UpdateVer: 2, CommitVer: 2})
			want := append([]byte("again"), data[5:]...)
			if got, _ := readChunk(t, e, k); !bytes.Equal(got, want) {
				t.Fatal("the write after the restart did not land")
			}
		})
	}
}

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		text string
		want map[IOOp]syscall.Errno
		err  string
	}{
		{"", map[IOOp]syscall.Errno{}, ""},
		{"# healed\n\n", map[IOOp]syscall.Errno{}, ""},
		{"read EIO\n", map[IOOp]syscall.Errno{OpRead: syscall.EIO}, ""},
		{"write eio # dying\nsync ENOSPC", map[IOOp]syscall.Errno{OpWrite: syscall.EIO, OpSync: syscall.ENOSPC}, ""},
		{"read", nil, "want"},
		{"trim EIO", nil, "unknown op"},
		{"read EBADF", nil, "unknown errno"},
	} {
		got, err := ParseFaults(tc.text)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseFaults(%q) = %v, %v; want an error with %q", tc.text, got, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("ParseFaults(%q) = %v, %v; want %v", tc.text, got, err, tc.want)
			continue
		}
		for op, e := range tc.want {
			if got[op] != e {
				t.Errorf("ParseFaults(%q)[%v] = %v, want %v", tc.text, op, got[op], e)
			}
		}
	}
}
