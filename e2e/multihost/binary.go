package multihost

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// Binary builds cmd/flyfs once per test binary and returns its path; set
// FLYFS_BIN to use a binary built already. RemoveBinary deletes it.
func Binary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("FLYFS_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "flyfs-multihost-bin-"); buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "flyfs"), "github.com/flyfs/flyfs/cmd/flyfs").CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "flyfs")
}

// RemoveBinary removes what Binary built (call from TestMain).
func RemoveBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build flyfs: " + e.err.Error() + "\n" + e.out }

func dialTCP(addr string, d time.Duration) (net.Conn, error) { return net.DialTimeout("tcp", addr, d) }
