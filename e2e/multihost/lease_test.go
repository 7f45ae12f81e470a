package multihost

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// TestLeaseUnderLoad runs one `flyfs server` on its defaults (Pebble, one
// disk, the gateway and a FUSE mount) under mixed S3 and FUSE load for
// min(FLYFS_SOAK, 10m) and reports how often its mgmtd lost its own lease:
// zero expected. It counts the mgmtd's "no longer primary" log lines and
// its flyfs_mgmtd_lease_changes_total{event="lost"} metric.
func TestLeaseUnderLoad(t *testing.T) {
	d := min(soakDuration(t), 10*time.Minute)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: the load goes through a FUSE mount")
	}
	bin := Binary(t)
	dir := t.TempDir()
	mnt := filepath.Join(dir, "mnt")
	os.MkdirAll(mnt, 0o755)
	addrs := freeAddrs(t, 4)
	const ak, sk = "LEASELOAD", "lease-load-secret-key"
	logPath := filepath.Join(dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "server", "--data", filepath.Join(dir, "data"), "--mount", mnt,
		"--mgmtd-addr", addrs[0], "--metad-addr", addrs[1], "--s3-addr", addrs[2], "--metrics-addr", addrs[3],
		"--console-addr", "", "--access-key", ak, "--secret-key", sk, "--gc-grace", "30s")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		exec.Command("umount", "-l", mnt).Run()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("server log (tail):\n%s", tailOf(b, 6000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !mounted(mnt) || !listening(addrs[2]) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("flyfs server not up within a minute:\n%s", tailOf(b, 4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	mc, err := minio.New(addrs[2], &minio.Options{Creds: miniocreds.NewStaticV4(ak, sk, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := mc.MakeBucket(ctx, "lease", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(mnt, "fuse"), 0o755)

	var ops, failed atomic.Int64
	var lastErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loop := func(stream uint64, op func(i int, rng *mrand.Rand) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(stream, 0x1ea5e))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := op(i, rng); err != nil {
					failed.Add(1)
					lastErr.Store(err.Error())
				} else {
					ops.Add(1)
				}
			}
		}()
	}
	for g := 0; g < 3; g++ { // S3: PUT 1-8 MiB, read it back, drop older ones
		loop(uint64(g), func(i int, rng *mrand.Rand) error {
			octx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			key := fmt.Sprintf("g%d/%06d", g, i)
			data := content(rng, 1<<20+rng.IntN(7<<20))
			if _, err := mc.PutObject(octx, "lease", key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
				return err
			}
			o, err := mc.GetObject(octx, "lease", key, minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			b, err := io.ReadAll(o)
			o.Close()
			if err != nil {
				return err
			}
			if sha256.Sum256(b) != sha256.Sum256(data) {
				t.Errorf("s3 %s read back other bytes", key)
			}
			if i >= 8 {
				return mc.RemoveObject(octx, "lease", fmt.Sprintf("g%d/%06d", g, i-8), minio.RemoveObjectOptions{})
			}
			return nil
		})
	}
	for g := 0; g < 2; g++ { // FUSE: write+fsync 1-4 MiB, read back, drop older ones
		loop(10+uint64(g), func(i int, rng *mrand.Rand) error {
			p := filepath.Join(mnt, "fuse", fmt.Sprintf("f%d-%06d", g, i))
			data := content(rng, 1<<20+rng.IntN(3<<20))
			if err := writeSynced(p, data); err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !bytes.Equal(b, data) {
				t.Errorf("fuse %s read back other bytes", p)
			}
			if i >= 8 {
				return os.Remove(filepath.Join(mnt, "fuse", fmt.Sprintf("f%d-%06d", g, i-8)))
			}
			return nil
		})
	}
	loop(20, func(i int, rng *mrand.Rand) error { // metadata: small files, stat, readdir
		sub := filepath.Join(mnt, "meta", fmt.Sprint(i%50))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		p := filepath.Join(sub, fmt.Sprint(i))
		if err := os.WriteFile(p, []byte("small"), 0o644); err != nil {
			return err
		}
		if _, err := os.Stat(p); err != nil {
			return err
		}
		_, err := os.ReadDir(sub)
		return err
	})
	start := time.Now()
	time.Sleep(d)
	close(stop)
	wg.Wait()
	t.Logf("%v of load: %d operations, %d failed (last: %v)", time.Since(start).Round(time.Second), ops.Load(), failed.Load(), lastErr.Load())

	b, _ := os.ReadFile(logPath)
	logged := strings.Count(string(b), "no longer primary")
	noPrimary := strings.Count(string(b), "no primary is elected")
	lost, err := metricValue("http://"+addrs[3]+"/metrics", `flyfs_mgmtd_lease_changes_total{`, `event="lost"`)
	if err != nil {
		t.Errorf("metrics: %v", err)
	}
	t.Logf("lease changes under load: %d lost (metric), %d \"no longer primary\" lines, %d \"no primary is elected\" errors", lost, logged, noPrimary)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "no primary is elected") || strings.Contains(line, "no longer primary") {
			t.Logf("  %.300s", line)
		}
	}
	if lost != 0 || logged != 0 {
		t.Errorf("mgmtd lost its own lease under load: want 0 lease changes")
	}
	if failed.Load() > 0 {
		t.Errorf("%d operations failed under load on a healthy server (last: %v)", failed.Load(), lastErr.Load())
	}
}

// freeAddrs reserves n loopback ports (closed again for the server to take).
func freeAddrs(t *testing.T, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Addr().String())
		defer l.Close()
	}
	return out
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// metricValue sums the samples of a metric family whose line starts with
// prefix and contains label.
func metricValue(url, prefix, label string) (int64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum int64
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", line, err)
		}
		sum += int64(v)
		found = true
	}
	if !found {
		return 0, fmt.Errorf("no %s%s sample at %s", prefix, label, url)
	}
	return sum, sc.Err()
}
