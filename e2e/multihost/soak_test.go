package multihost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/core/client"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// soakDuration is FLYFS_SOAK (e.g. 20m); unset skips the soak.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("FLYFS_SOAK")
	if v == "" {
		t.Skip("the soak runs with FLYFS_SOAK=<duration> (20m before a resolve)")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("FLYFS_SOAK=%q: %v", v, err)
	}
	return d
}

// TestSoak drives mixed S3 (PUT, multipart PUT, GET, LIST, DELETE) and
// FUSE (write, read, rename) load plus client writes on the multi-process
// cluster for FLYFS_SOAK, while a random storaged or metad is killed -9 or
// frozen with SIGSTOP every 20 to 40 s. It reports acknowledged and lost
// operations (lost must be 0), fsck, replica convergence, p50/p99 latency
// per operation, mgmtd lease changes (must be 0: mgmtd is never touched),
// and each process's RSS at the start and end of the load: a process that
// ran through the whole soak may not grow beyond 1.5x + 64 MiB.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	if testing.Short() {
		t.Skip("starts a multi-host cluster")
	}
	seed := scenarioSeed(t)
	t.Logf("seed %d, %v of load", seed, d)
	// The product's heartbeat timeout (6 s, a 1.5 s lease), not the fault
	// scenarios' short one: the soak measures the cluster as deployed, and
	// on a loaded machine etcd stalls past a 0.5 s lease.
	c := Start(t, Config{Mount: true, Gateway: true, GCGrace: 30 * time.Second, T: 6 * time.Second})
	w := StartWorkload(t, c, seed, WorkloadConfig{ClientWriters: 1, FUSEWriters: 1, Registers: -1, MaxFile: 3 << 20})
	m := startSoakMix(t, c, w, seed)

	time.Sleep(min(d/10, time.Minute)) // warm: caches, pools and connections at their working size
	rssStart := c.rss()
	starts := c.startCounts()
	faults := runSoakFaults(t, c, mrand.New(mrand.NewPCG(seed, 0x50a4)), d-min(d/10, time.Minute))
	rssEnd := c.rss()
	m.stop()
	w.Stop()
	t.Logf("faults injected: %s", strings.Join(faults, ", "))
	t.Logf("workload: %s", w.Summary())
	m.report(t)
	for _, h := range append(w.Hung(), m.hungOps()...) {
		t.Errorf("a client operation hung past %v: %s", opTimeout, h)
	}
	if n := c.leaseLosses(); n != 0 {
		t.Errorf("mgmtd lost its lease %d times under the soak's load (no mgmtd was touched)", n)
	} else {
		t.Logf("mgmtd lease changes during the soak: 0")
	}
	c.checkRSS(t, rssStart, rssEnd, starts)

	c.Net.HealAll()
	c.WaitHealthy(30 * c.cfg.T)
	lost := m.verify(t)
	w.Verify(t)
	if lost == 0 && !t.Failed() {
		t.Logf("lost operations: 0")
	}
	c.Fsck()
	c.CheckConverged(t, 60*time.Second)
}

// runSoakFaults kills or freezes a random storaged or metad every 20 to 40
// s until d has passed, waiting for the cluster to heal after each.
func runSoakFaults(t *testing.T, c *Cluster, rng *mrand.Rand, d time.Duration) []string {
	var done []string
	end := time.Now().Add(d)
	T := c.cfg.T
	for time.Now().Add(40 * time.Second).Before(end) {
		time.Sleep(20*time.Second + time.Duration(rng.Int64N(int64(20*time.Second))))
		var p *Proc
		storage := rng.IntN(3) > 0
		if storage {
			p = c.Storaged[rng.IntN(len(c.Storaged))]
		} else {
			p = c.Metad[rng.IntN(len(c.Metad))]
		}
		down := time.Second + time.Duration(rng.Int64N(int64(5*time.Second)))
		if rng.IntN(2) == 0 {
			done = append(done, fmt.Sprintf("kill -9 %s for %v", p.Name, down.Round(time.Millisecond)))
			p.Kill()
			time.Sleep(down)
			p.Start()
		} else {
			done = append(done, fmt.Sprintf("SIGSTOP %s for %v", p.Name, down.Round(time.Millisecond)))
			p.Stop()
			time.Sleep(down)
			p.Cont()
		}
		if storage {
			c.WaitHealthy(60 * T)
		} else {
			c.waitMetad(60 * time.Second)
		}
	}
	time.Sleep(time.Until(end))
	return done
}

// soakMix is the soak's S3 and FUSE operations beside the workload's
// writers: every operation timed, every acknowledged object kept with its
// checksum, every read compared with what was acknowledged.
type soakMix struct {
	t      *testing.T
	c      *Cluster
	w      *Workload
	mc     *minio.Client
	stopCh chan struct{}
	wg     sync.WaitGroup

	// clean is held (shared) by the operations that read, rename or delete
	// acknowledged files, and alone by the cleaner that bounds the data
	// kept, so that it removes no file under them.
	clean sync.RWMutex

	mu      sync.Mutex
	lat     map[string]*bench.Histogram
	okOps   map[string]int
	failOps map[string]int
	lastErr map[string]string
	objects map[string][32]byte // S3 key -> SHA-256 of what was acknowledged
	bad     []string            // reads that returned other bytes than acknowledged
	hung    []string
}

const soakBucket = "soak-s3"

func startSoakMix(t *testing.T, c *Cluster, w *Workload, seed uint64) *soakMix {
	mc, err := minio.New(strings.TrimPrefix(c.GatewayURL, "http://"), &minio.Options{
		Creds: miniocreds.NewStaticV4(c.AccessKey, c.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := mc.MakeBucket(ctx, soakBucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket: %v", err)
	}
	m := &soakMix{t: t, c: c, w: w, mc: mc, stopCh: make(chan struct{}), lat: map[string]*bench.Histogram{},
		okOps: map[string]int{}, failOps: map[string]int{}, lastErr: map[string]string{}, objects: map[string][32]byte{}}
	for g := 0; g < 2; g++ {
		m.loop(seed, 400+uint64(g), func(i int, rng *mrand.Rand) { m.s3Op(g, i, rng) })
	}
	m.loop(seed, 500, func(i int, rng *mrand.Rand) { m.fuseOp(i, rng) })
	fs := c.Dial(20 * time.Second)
	m.loop(seed, 600, func(i int, rng *mrand.Rand) { m.bound(fs, rng) })
	return m
}

// Data the soak keeps acknowledged: past soakKeepHigh the cleaner removes
// random acknowledged files (through the client, or S3 for objects) down to
// soakKeepLow, so twenty minutes of writes fit the machine's disk.
const (
	soakKeepHigh = 1536 << 20
	soakKeepLow  = 1 << 30
)

func (m *soakMix) bound(fs *client.FS, rng *mrand.Rand) {
	select {
	case <-m.stopCh:
		return
	case <-time.After(2 * time.Second):
	}
	acked := m.w.Acked()
	var total int64
	paths := make([]string, 0, len(acked))
	for p, f := range acked {
		total += int64(f.Size)
		paths = append(paths, p)
	}
	if total < soakKeepHigh {
		return
	}
	sort.Strings(paths)
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	m.clean.Lock()
	defer m.clean.Unlock()
	for _, p := range paths {
		if total < soakKeepLow {
			break
		}
		var err error
		if key, ok := strings.CutPrefix(p, "/"+soakBucket+"/"); ok {
			err = m.timed("s3 delete", func(ctx context.Context) error {
				return m.mc.RemoveObject(ctx, soakBucket, key, minio.RemoveObjectOptions{})
			})
			m.mu.Lock()
			delete(m.objects, key)
			m.mu.Unlock()
		} else {
			err = m.timed("client remove", func(ctx context.Context) error { return fs.Remove(ctx, p) })
		}
		m.w.forget(p) // removed, or in an unknown state after a failure
		if err == nil {
			total -= int64(acked[p].Size)
		}
	}
}

func (m *soakMix) loop(seed, stream uint64, op func(int, *mrand.Rand)) {
	loopUntil(m.stopCh, &m.wg, seed, stream, op)
}

func (m *soakMix) stop() {
	close(m.stopCh)
	m.wg.Wait()
}

// timed runs op under the operation timeout and records its outcome.
func (m *soakMix) timed(kind string, op func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	start := time.Now()
	err := op(ctx)
	el := time.Since(start)
	m.mu.Lock()
	defer m.mu.Unlock()
	if ctx.Err() == context.DeadlineExceeded {
		m.hung = append(m.hung, fmt.Sprintf("%s (started %s)", kind, start.Format("15:04:05.000")))
	}
	if err != nil {
		m.failOps[kind]++
		m.lastErr[kind] = err.Error()
		return err
	}
	h := m.lat[kind]
	if h == nil {
		h = &bench.Histogram{}
		m.lat[kind] = h
	}
	h.Record(el)
	m.okOps[kind]++
	return nil
}

func (m *soakMix) corrupt(format string, args ...any) {
	m.mu.Lock()
	m.bad = append(m.bad, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}

// randomObject picks an acknowledged key, or "".
func (m *soakMix) randomObject(rng *mrand.Rand) (string, [32]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.objects) == 0 {
		return "", [32]byte{}
	}
	keys := make([]string, 0, len(m.objects))
	for k := range m.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	k := keys[rng.IntN(len(keys))]
	return k, m.objects[k]
}

func (m *soakMix) s3Op(g, i int, rng *mrand.Rand) {
	m.clean.RLock()
	defer m.clean.RUnlock()
	switch r := rng.IntN(10); {
	case r < 3: // PUT
		key := fmt.Sprintf("p%d/%06d", g, i)
		data := content(rng, 1+rng.IntN(1<<20))
		m.put("s3 put", key, data, minio.PutObjectOptions{DisableMultipart: true})
	case r < 4: // multipart PUT: 12 to 20 MiB in 5 MiB parts
		key := fmt.Sprintf("m%d/%06d", g, i)
		data := content(rng, 12<<20+rng.IntN(8<<20))
		m.put("s3 multipart", key, data, minio.PutObjectOptions{PartSize: 5 << 20})
	case r < 7: // GET
		key, sum := m.randomObject(rng)
		if key == "" {
			return
		}
		m.timed("s3 get", func(ctx context.Context) error {
			o, err := m.mc.GetObject(ctx, soakBucket, key, minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			defer o.Close()
			b, err := io.ReadAll(o)
			if err != nil {
				return err
			}
			m.mu.Lock()
			cur, still := m.objects[key]
			m.mu.Unlock()
			if still && cur == sum && sha256.Sum256(b) != sum {
				m.corrupt("s3 get %s: %d bytes that are not the acknowledged object", key, len(b))
			}
			return nil
		})
	case r < 8: // LIST: every object acknowledged before the listing began is in it
		m.mu.Lock()
		want := map[string]bool{}
		for k := range m.objects {
			if strings.HasPrefix(k, fmt.Sprintf("p%d/", g)) {
				want[k] = true
			}
		}
		m.mu.Unlock()
		m.timed("s3 list", func(ctx context.Context) error {
			for o := range m.mc.ListObjects(ctx, soakBucket, minio.ListObjectsOptions{Prefix: fmt.Sprintf("p%d/", g), Recursive: true}) {
				if o.Err != nil {
					return o.Err
				}
				delete(want, o.Key)
			}
			// Only this goroutine deletes under its prefix, so a key still
			// wanted is one the listing dropped.
			for k := range want {
				m.mu.Lock()
				_, still := m.objects[k]
				m.mu.Unlock()
				if still {
					m.corrupt("s3 list p%d/: acknowledged object %s missing", g, k)
				}
			}
			return nil
		})
	default: // DELETE one of this goroutine's objects
		key, _ := m.randomObject(rng)
		if key == "" || !strings.HasPrefix(key[1:], fmt.Sprint(g)+"/") {
			return
		}
		m.timed("s3 delete", func(ctx context.Context) error {
			return m.mc.RemoveObject(ctx, soakBucket, key, minio.RemoveObjectOptions{})
		})
		m.mu.Lock()
		delete(m.objects, key) // gone, or of unknown state after a failure
		m.mu.Unlock()
		m.w.forget("/" + soakBucket + "/" + key)
	}
}

func (m *soakMix) put(kind, key string, data []byte, opts minio.PutObjectOptions) {
	m.mu.Lock()
	delete(m.objects, key)
	m.mu.Unlock()
	err := m.timed(kind, func(ctx context.Context) error {
		_, err := m.mc.PutObject(ctx, soakBucket, key, bytes.NewReader(data), int64(len(data)), opts)
		return err
	})
	if err != nil {
		return
	}
	m.mu.Lock()
	m.objects[key] = sha256.Sum256(data)
	m.mu.Unlock()
	m.w.ack("/"+soakBucket+"/"+key, data, "s3")
}

// fuseOp reads a file the workload wrote through the mount, or renames one.
func (m *soakMix) fuseOp(i int, rng *mrand.Rand) {
	m.clean.RLock()
	defer m.clean.RUnlock()
	p, want, ok := m.w.randomAcked(rng, "fuse")
	if !ok {
		time.Sleep(100 * time.Millisecond)
		return
	}
	if rng.IntN(4) > 0 {
		m.timed("fuse read", func(context.Context) error {
			b, err := os.ReadFile(filepath.Join(m.c.MountDir, p))
			if err != nil {
				return err
			}
			if len(b) != want.Size || sha256.Sum256(b) != want.Sum {
				if cur, still := m.w.Acked()[p]; still && cur == want {
					m.corrupt("fuse read %s: %d bytes that are not the acknowledged file", p, len(b))
				}
			}
			return nil
		})
		return
	}
	to := fmt.Sprintf("/load-fuse/renamed-%06d", i)
	err := m.timed("fuse rename", func(context.Context) error {
		return os.Rename(filepath.Join(m.c.MountDir, p), filepath.Join(m.c.MountDir, to))
	})
	if err == nil {
		m.w.move(p, to)
	} else {
		m.w.forget(p) // at either name now
	}
}

func (m *soakMix) hungOps() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.hung...)
}

// report logs each operation's count, failures and latency.
func (m *soakMix) report(t *testing.T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kinds := make([]string, 0, len(m.okOps)+len(m.failOps))
	for k := range m.okOps {
		kinds = append(kinds, k)
	}
	for k := range m.failOps {
		if m.okOps[k] == 0 {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		line := fmt.Sprintf("%-13s %6d acknowledged %4d failed", k, m.okOps[k], m.failOps[k])
		if h := m.lat[k]; h != nil {
			line += fmt.Sprintf("  p50 %-8v p99 %-8v max %v", h.Quantile(0.5).Round(time.Millisecond),
				h.Quantile(0.99).Round(time.Millisecond), h.Max().Round(time.Millisecond))
		}
		if e := m.lastErr[k]; e != "" {
			line += fmt.Sprintf("  (last error: %.160s)", e)
		}
		t.Log(line)
	}
}

// verify reads every acknowledged object back through the gateway and
// reports the lost ones (with the corrupt reads seen during the load).
func (m *soakMix) verify(t *testing.T) int {
	m.mu.Lock()
	objects := make(map[string][32]byte, len(m.objects))
	for k, v := range m.objects {
		objects[k] = v
	}
	bad := append([]string(nil), m.bad...)
	m.mu.Unlock()
	for _, b := range bad {
		t.Errorf("during the soak: %s", b)
	}
	lost := len(bad)
	for k, sum := range objects {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		o, err := m.mc.GetObject(ctx, soakBucket, k, minio.GetObjectOptions{})
		var b []byte
		if err == nil {
			b, err = io.ReadAll(o)
			o.Close()
		}
		cancel()
		if err != nil || sha256.Sum256(b) != sum {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged object %s: %d bytes, %v", k, len(b), err)
			}
		}
	}
	t.Logf("%d acknowledged S3 objects read back through the gateway, %d lost", len(objects), lost)
	return lost
}

// rss reads every running process's resident set size, by name.
func (c *Cluster) rss() map[string]int64 {
	out := map[string]int64{}
	procs := append(append(append(append([]*Proc{}, c.Etcd...), c.Mgmtd...), c.Metad...), c.Storaged...)
	procs = append(procs, c.MountP, c.GatewayP)
	for _, p := range procs {
		if p == nil || !p.Running() {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				out[p.Name] = kb << 10
			}
		}
	}
	return out
}

// startCounts is how many times each process has been started.
func (c *Cluster) startCounts() map[string]int {
	out := map[string]int{}
	for _, p := range append(append([]*Proc{}, c.Metad...), c.Storaged...) {
		out[p.Name] = p.Starts()
	}
	return out
}

// checkRSS reports each process's RSS and fails one that ran through the
// whole load and grew beyond 1.5x + 64 MiB.
func (c *Cluster) checkRSS(t *testing.T, start, end map[string]int64, starts map[string]int) {
	names := make([]string, 0, len(end))
	for n := range end {
		names = append(names, n)
	}
	sort.Strings(names)
	restarted := map[string]bool{}
	for _, p := range append(append([]*Proc{}, c.Metad...), c.Storaged...) {
		restarted[p.Name] = p.Starts() != starts[p.Name]
	}
	for _, n := range names {
		s, e := start[n], end[n]
		note := ""
		switch {
		case restarted[n]:
			note = " (restarted during the soak: not judged)"
		case s > 0 && e > s*3/2+64<<20:
			t.Errorf("%s: RSS grew from %d MiB to %d MiB over the soak (bound: 1.5x + 64 MiB)", n, s>>20, e>>20)
		}
		t.Logf("RSS %-10s start %5d MiB  end %5d MiB%s", n, s>>20, e>>20, note)
	}
}

// leaseLosses counts mgmtd's "no longer primary" reports in its logs.
func (c *Cluster) leaseLosses() int {
	n := 0
	for _, p := range c.Mgmtd {
		b, _ := os.ReadFile(p.Log)
		n += strings.Count(string(b), "no longer primary")
	}
	return n
}
