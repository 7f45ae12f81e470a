package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// flyfsBinary builds cmd/flyfs once per test run and returns its path.
func flyfsBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flyfs-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "flyfs")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/flyfs/flyfs/cmd/flyfs").CombinedOutput()
		if err != nil {
			buildErr = &buildError{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build flyfs: " + e.err.Error() + "\n" + e.out }
