package multihost

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}

// TestClusterUp starts the whole cluster, writes through a client and the
// mount, and reads back through the other.
func TestClusterUp(t *testing.T) {
	c := Start(t, Config{Mount: true, Gateway: true})
	fs := c.Dial(10 * time.Second)
	ctx := context.Background()
	f, err := fs.Create(ctx, "/hello", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.MountDir + "/hello")
	if err != nil || string(b) != "hello" {
		t.Fatalf("read through the mount: %q %v", b, err)
	}
	c.Fsck()
}
