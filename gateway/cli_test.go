package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// End-to-end tests with the real Debian `aws` CLI and `rclone` against a
// live gateway. Sizes are adjustable:
//
//	FLYFS_S3_E2E_BIG    bytes of the large file copied up and down (default 64 MiB;
//	                    the full run uses 1073741824)
//	FLYFS_S3_E2E_FILES  small files synced up and back (default 1000)

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

func need(t *testing.T, bin string) string {
	t.Helper()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not installed (Debian package %s); skipping", bin, filepath.Base(bin))
	}
	return bin
}

func run(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	// A client that hangs fails its test with what it printed, instead of
	// holding the package until the suite's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after 5 minutes; killed\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeFile fills a file with size pseudo-random bytes, streaming.
func writeFile(t *testing.T, path string, size int64, seed byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	h := sha256.Sum256([]byte{seed})
	for i := range buf {
		buf[i] = h[i%32] ^ byte(i>>8)
	}
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		buf[0]++ // no two MiB alike
		if _, err := f.Write(buf[:n]); err != nil {
			t.Fatal(err)
		}
		left -= n
	}
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return fmt.Sprintf("%x", h.Sum(nil))
}

func makeTree(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%17), fmt.Sprintf("sub%d", i%3), fmt.Sprintf("file %04d+x.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprint(i), i%50+1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameTrees(t *testing.T, a, b string) {
	t.Helper()
	count := 0
	filepath.Walk(a, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		x, _ := os.ReadFile(p)
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs after the round trip: %v", rel, err)
		}
		count++
		return nil
	})
	if count == 0 {
		t.Error("empty tree")
	}
}

func TestAWSCLI(t *testing.T) {
	aws := need(t, "/usr/bin/aws")
	if testing.Short() {
		t.Skip("e2e with the aws CLI is not short")
	}
	l := startGW(t)
	tmp := t.TempDir()
	env := []string{"AWS_ACCESS_KEY_ID=" + rootAK, "AWS_SECRET_ACCESS_KEY=" + rootSK, "AWS_DEFAULT_REGION=us-east-1", "AWS_CA_BUNDLE=",
		"AWS_CONFIG_FILE=" + filepath.Join(tmp, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(tmp, "none"), "AWS_PAGER=", "HOME=" + tmp}
	s3 := func(args ...string) string {
		return run(t, env, aws, append([]string{"--endpoint-url", l.url, "s3"}, args...)...)
	}
	s3("mb", "s3://cli")
	big := envInt("FLYFS_S3_E2E_BIG", 64<<20)
	up := filepath.Join(tmp, "big.bin")
	writeFile(t, up, big, 1)
	s3("cp", up, "s3://cli/data/big.bin") // multipart above 8 MiB
	down := filepath.Join(tmp, "big.down")
	s3("cp", "s3://cli/data/big.bin", down)
	if fileSum(t, up) != fileSum(t, down) {
		t.Fatal("aws s3 cp round trip differs")
	}
	os.Remove(down)

	n := int(envInt("FLYFS_S3_E2E_FILES", 1000))
	src, back := filepath.Join(tmp, "tree"), filepath.Join(tmp, "back")
	makeTree(t, src, n)
	s3("sync", "--only-show-errors", src, "s3://cli/tree/")
	s3("sync", "--only-show-errors", "s3://cli/tree/", back)
	sameTrees(t, src, back)
	ls := s3("ls", "--recursive", "s3://cli/tree/")
	if got := strings.Count(ls, "\n"); got != n {
		t.Fatalf("ls --recursive: %d lines, want %d", got, n)
	}
	// A second sync has nothing to do.
	if out := s3("sync", src, "s3://cli/tree/"); strings.Contains(out, "upload:") {
		t.Fatalf("second sync uploaded again:\n%s", out)
	}
	// A copy between keys: the CLI sends UploadPartCopy parts of 8 MiB,
	// which share the source's chunks and complete into a file that reads
	// through its layer.
	s3("cp", "s3://cli/data/big.bin", "s3://cli/copy/big.bin")
	if in, err := l.fs.Meta().Resolve(t.Context(), "/cli/copy/big.bin", false); err != nil || len(in.Layers) == 0 {
		t.Fatalf("aws s3 cp between keys did not share chunks: %v %+v", err, in.Layers)
	}
	s3("cp", "s3://cli/copy/big.bin", down)
	if fileSum(t, up) != fileSum(t, down) {
		t.Fatal("aws s3 cp between keys differs")
	}
	os.Remove(down)
	s3("mv", "s3://cli/data/big.bin", "s3://cli/moved/big.bin")
	if ls := s3("ls", "--recursive", "s3://cli/"); strings.Contains(ls, "data/big.bin") || !strings.Contains(ls, "moved/big.bin") {
		t.Fatalf("after mv:\n%s", ls)
	}
	s3("rm", "--recursive", "--only-show-errors", "s3://cli/")
	if ls := s3("ls", "--recursive", "s3://cli/"); strings.TrimSpace(ls) != "" {
		t.Fatalf("after rm --recursive:\n%s", ls)
	}
	// Every implicit directory went with its objects.
	if ents, err := l.fs.ReadDir(t.Context(), "/cli"); err != nil || len(ents) != 0 {
		t.Fatalf("left in the bucket directory: %v %v", ents, err)
	}
	s3("rb", "s3://cli")
}

func TestRclone(t *testing.T) {
	rclone := need(t, "/usr/bin/rclone")
	if testing.Short() {
		t.Skip("e2e with rclone is not short")
	}
	l := startGW(t)
	tmp := t.TempDir()
	env := []string{"RCLONE_CONFIG=" + filepath.Join(tmp, "rclone.conf"), "RCLONE_CONFIG_FLY_TYPE=s3", "RCLONE_CONFIG_FLY_PROVIDER=Other",
		"RCLONE_CONFIG_FLY_ACCESS_KEY_ID=" + rootAK, "RCLONE_CONFIG_FLY_SECRET_ACCESS_KEY=" + rootSK, "RCLONE_CONFIG_FLY_ENDPOINT=" + l.url,
		"RCLONE_CONFIG_FLY_REGION=us-east-1", "HOME=" + tmp}
	os.WriteFile(filepath.Join(tmp, "rclone.conf"), nil, 0o600)
	rc := func(args ...string) string { return run(t, env, rclone, args...) }
	rc("mkdir", "fly:rcl")
	src, back := filepath.Join(tmp, "tree"), filepath.Join(tmp, "back")
	n := int(envInt("FLYFS_S3_E2E_FILES", 1000)) / 4
	makeTree(t, src, n)
	writeFile(t, filepath.Join(src, "large.bin"), 40<<20, 2) // multipart with rclone's chunking
	rc("copy", "--s3-upload-cutoff", "16M", "--s3-chunk-size", "8M", src, "fly:rcl/tree")
	rc("check", src, "fly:rcl/tree")
	rc("copy", "fly:rcl/tree", back)
	sameTrees(t, src, back)
	if got := strings.Count(rc("lsf", "-R", "--files-only", "fly:rcl/tree"), "\n"); got != n+1 {
		t.Fatalf("lsf: %d files, want %d:\n%s", got, n+1, rc("lsf", "-R", "--files-only", "fly:rcl/tree"))
	}
	rc("moveto", "fly:rcl/tree/large.bin", "fly:rcl/elsewhere/large.bin")
	rc("purge", "fly:rcl/tree")
	if out := rc("lsf", "-R", "--files-only", "fly:rcl"); strings.TrimSpace(out) != "elsewhere/large.bin" {
		t.Fatalf("after purge:\n%s", out)
	}
}
