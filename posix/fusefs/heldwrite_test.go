package fusefs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestHeldWritesRunInTheRequest: a write that only fills the bytes a new
// small file holds for its inline close is made within the WRITE request
// (handed to a goroutine, it would cost a wakeup that the close right after
// it waits for). Writes that go to storage go behind.
func TestHeldWritesRunInTheRequest(t *testing.T) {
	_, m := mountCluster(t, Options{})
	small := bytes.Repeat([]byte("s"), 4096)
	p := filepath.Join(m.Dir(), "small")
	if err := os.WriteFile(p, small, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := m.fsys.behind.Load(); n != 0 {
		t.Errorf("a 4 KiB file's write went behind (%d writes queued): it only fills the held bytes", n)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read back %d bytes, %v; want the 4 KiB written", len(got), err)
	}

	large := bytes.Repeat([]byte("L"), 1<<20)
	q := filepath.Join(m.Dir(), "large")
	if err := os.WriteFile(q, large, 0o644); err != nil {
		t.Fatal(err)
	}
	if m.fsys.behind.Load() == 0 {
		t.Error("a 1 MiB file's writes did not go behind")
	}
	if got, err := os.ReadFile(q); err != nil || !bytes.Equal(got, large) {
		t.Fatalf("read back %d bytes, %v; want the 1 MiB written", len(got), err)
	}
}
