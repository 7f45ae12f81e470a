package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
)

// TestCacheAcrossMountProcesses runs `flyfs mount --cache-dir` as a child
// process beside a plain mount: `flyfs warmup` fills its cache and `flyfs
// admin cache stats` shows it; reads are served from it; a rewrite through
// the other mount is read on the next open; the mount is killed (SIGKILL),
// a block file is corrupted and another cut short as a crash would leave
// it, and the remount reuses the rest without serving either; a second
// mount cannot share the directory.
func TestCacheAcrossMountProcesses(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if testing.Short() {
		t.Skip("builds the flyfs binary; skipped in -short")
	}
	if os.Getuid() != 0 {
		t.Skip("mounts directly, which needs root")
	}
	srv := startServerProc(t)
	cacheDir := filepath.Join(srv.work, "cache")
	short := []string{"--attr-timeout", "500ms", "--entry-timeout", "500ms", "--op-timeout", "10s"}
	cacheArgs := append([]string{"--cache-dir", cacheDir, "--cache-size", "64MiB"}, short...)
	plain, _ := startMountProc(t, srv, "plain", short...)
	cached, proc := startMountProc(t, srv, "cached", cacheArgs...)

	want := map[string][]byte{"a": pattern(5<<20+3, 1), "b": pattern(1<<20, 2), "c": []byte("small")}
	if err := os.Mkdir(filepath.Join(plain, "ds"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range want {
		if err := os.WriteFile(filepath.Join(plain, "ds", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for _, b := range want {
		total += int64(len(b))
	}
	flyfs := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(srv.bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("flyfs %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	stats := func() client.CacheStats {
		t.Helper()
		var s client.CacheStats
		if err := json.Unmarshal([]byte(flyfs("admin", "cache", "stats", "--json", cached)), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	readAll := func(what string) {
		t.Helper()
		for name, b := range want {
			got, err := os.ReadFile(filepath.Join(cached, "ds", name))
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%s: ds/%s: %d bytes, %v", what, name, len(got), err)
			}
		}
	}

	var out string
	waitFor(t, 5*time.Second, "the files on the caching mount", func() bool {
		out, _ = func() (string, error) {
			b, err := exec.Command(srv.bin, "warmup", filepath.Join(cached, "ds")).CombinedOutput()
			return string(b), err
		}()
		return strings.HasPrefix(out, "warmed 3 files")
	})
	t.Logf("warmup: %s", strings.TrimSpace(out))
	if s := stats(); s.Disk.Used < total || s.Memory.Capacity != 0 {
		t.Fatalf("after the warmup: %+v", s)
	}
	if again := flyfs("warmup", filepath.Join(cached, "ds")); !strings.Contains(again, "0 B fetched") {
		t.Fatalf("a second warmup fetched again: %s", again)
	}
	if table := flyfs("admin", "cache", "stats", cached); !strings.Contains(table, "disk") || !strings.Contains(table, "64 MiB") {
		t.Fatalf("admin cache stats:\n%s", table)
	}
	before := stats().Disk
	readAll("after the warmup")
	if s := stats().Disk; s.Misses != before.Misses || s.Hits <= before.Hits {
		t.Fatalf("reads after the warmup were not served from the cache: %+v, then %+v", before, s)
	}

	// A rewrite through the other mount, closed, is read on the next open.
	want["b"] = pattern(1<<20, 3)
	if err := os.WriteFile(filepath.Join(plain, "ds", "b"), want["b"], 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the rewrite on the caching mount", func() bool {
		got, err := os.ReadFile(filepath.Join(cached, "ds", "b"))
		return err == nil && bytes.Equal(got, want["b"])
	})

	// The crash, and what it can leave: one block file corrupted, one cut
	// short inside a block.
	proc.stop(syscall.SIGKILL)
	exec.Command("umount", "-l", cached).Run()
	st, err := os.Stat(filepath.Join(plain, "ds", "a"))
	if err != nil {
		t.Fatal(err)
	}
	ino := st.Sys().(*syscall.Stat_t).Ino
	region := func(i int) string { // the file of region i of ds/a (4 MiB each)
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(cacheDir, "flyfs-cache", "*", fmt.Sprintf("%d-*-%d", ino, i)))
		if len(m) != 1 {
			t.Fatalf("region %d of inode %d: %v", i, ino, m)
		}
		return m[0]
	}
	f, err := os.OpenFile(region(0), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xfe}, 4096+100) // the first block's data
	f.Close()
	if err := os.Truncate(region(1), 4096+32<<10); err != nil { // half its first block
		t.Fatal(err)
	}

	cached, proc = startMountProc(t, srv, "cached", cacheArgs...)
	readAll("after the remount")
	s := stats()
	if s.Disk.Hits == 0 || s.Disk.Corrupt < 2 {
		t.Fatalf("after the remount the cache was not reused, or the damage not seen: %+v", s)
	}
	t.Logf("after the remount: %+v", s.Disk)

	// A second mount cannot use the directory while this one does.
	cmd := exec.Command(srv.bin, append([]string{"mount", "--mgmtd", srv.mgmtd, "--token-file", srv.tokenFile, "--cache-dir", cacheDir, "--cache-size", "64MiB"}, t.TempDir())...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "in use") {
		t.Fatalf("a second mount over the cache directory: %v\n%s", err, out)
	}
	proc.stop(syscall.SIGTERM)
}

// pattern is n bytes that differ with seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}
