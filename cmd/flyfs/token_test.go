package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every role refuses to run without a cluster token, and says how to give
// one; --insecure-no-token is the explicit way out.
func TestRolesRefuseToRunWithoutAToken(t *testing.T) {
	t.Chdir(t.TempDir()) // no flyfs-data/token here
	for _, args := range [][]string{
		{"mgmtd", "--id", "m1", "--listen", "127.0.0.1:0", "--kv", "mem"},
		{"metad", "--listen", "127.0.0.1:0", "--kv", "mem"},
		{"storaged", "--node", "1", "--listen", "127.0.0.1:0", "--data", "d", "--mgmtd", "127.0.0.1:1"},
		{"gateway", "--mgmtd", "127.0.0.1:1"},
		{"console", "--mgmtd", "127.0.0.1:1"},
		{"mount", "--mgmtd", "127.0.0.1:1", "mnt"},
		{"admin", "--mgmtd", "127.0.0.1:1", "chains"},
		{"bench", "mdtest", "--mgmtd", "127.0.0.1:1"},
	} {
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "no cluster token") || !strings.Contains(err.Error(), "--token") {
			t.Errorf("flyfs %s without a token: %v", strings.Join(args, " "), err)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("a refused role left files behind: %v", entries)
	}
	if _, err := run(t, "admin", "--mgmtd", "127.0.0.1:1", "--token", "x", "--insecure-no-token", "chains"); err == nil || !strings.Contains(err.Error(), "one or the other") {
		t.Errorf("a token and --insecure-no-token together: %v", err)
	}
	if _, err := run(t, "admin", "--mgmtd", "127.0.0.1:1", "--token-file", "nosuch", "chains"); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("a missing token file: %v", err)
	}
}

// A token file next to the default data directory is found without flags.
func TestDefaultTokenFileIsFound(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("flyfs-data", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("flyfs-data", "token"), []byte("from-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := tokenOptions{}
	got, err := o.resolve("test", nil)
	if err != nil || got != "from-the-file" {
		t.Fatalf("resolve: %q %v", got, err)
	}
}
