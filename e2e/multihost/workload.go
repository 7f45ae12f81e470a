package multihost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/flyfs/flyfs/core/client"
)

// Written is a file whose write was acknowledged: its size and SHA-256.
type Written struct {
	Size int
	Sum  [32]byte
	Via  string // client, fuse, s3
}

// Workload writes files through every front end the cluster runs, and
// reads and writes registers for a linearizability check, until Stop. Each
// acknowledged file goes into Acked with its checksum; a write that failed
// is only counted (its file may or may not exist, in any state).
type Workload struct {
	c    *Cluster
	t    testing.TB
	seed uint64
	stop chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	acked    map[string]Written // path in the namespace -> content
	failures map[string]int     // per front end
	lastErr  map[string]string
	history  []porcupine.Operation
	regVal   atomic.Uint64
	hung     []string // operations that outlived opTimeout
}

// opTimeout bounds one workload operation. The clients retry for 20 s; an
// operation still running long after that is stuck, not retrying, and is
// reported as hung (a gap) rather than left to hang the test.
const opTimeout = 60 * time.Second

func (w *Workload) opContext(what string) (context.Context, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	start := time.Now()
	return ctx, func() {
		if ctx.Err() == context.DeadlineExceeded {
			w.mu.Lock()
			w.hung = append(w.hung, fmt.Sprintf("%s (started %s)", what, start.Format("15:04:05.000")))
			w.mu.Unlock()
		}
		cancel()
	}
}

// Hung lists the operations that did not end within opTimeout.
func (w *Workload) Hung() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.hung...)
}

// WorkloadConfig says how many writers of each kind run.
type WorkloadConfig struct {
	ClientWriters int           // files through core/client (default 2)
	FUSEWriters   int           // files through the mount, when it runs
	S3Writers     int           // `aws s3 cp` uploads, when the gateway runs
	Registers     int           // registers (default 3; negative: none, and no register clients)
	RegClients    int           // register clients, each its own connection (default 3)
	MaxFile       int           // largest file in bytes (default 2.5 MiB: up to 3 chunks)
	RetryFor      time.Duration // client retry bound (default 20 s)
}

const regDir = "/registers"

// StartWorkload creates the directories and registers and starts the writers.
func StartWorkload(t testing.TB, c *Cluster, seed uint64, cfg WorkloadConfig) *Workload {
	t.Helper()
	if cfg.ClientWriters == 0 {
		cfg.ClientWriters = 2
	}
	switch {
	case cfg.Registers < 0:
		cfg.Registers, cfg.RegClients = 0, 0
	case cfg.Registers == 0:
		cfg.Registers = 3
	}
	if cfg.RegClients == 0 && cfg.Registers > 0 {
		cfg.RegClients = 3
	}
	if cfg.MaxFile == 0 {
		cfg.MaxFile = 5 << 19
	}
	if cfg.RetryFor == 0 {
		cfg.RetryFor = 20 * time.Second
	}
	w := &Workload{c: c, t: t, seed: seed, stop: make(chan struct{}), acked: map[string]Written{},
		failures: map[string]int{}, lastErr: map[string]string{}}
	ctx := context.Background()
	setup := c.Dial(cfg.RetryFor)
	for _, d := range []string{"/load", regDir} {
		if err := setup.MkdirAll(ctx, d, 0o755); err != nil {
			t.Fatalf("mkdir %s: %v", d, err)
		}
	}
	for k := 0; k < cfg.Registers; k++ {
		if err := writeRegister(ctx, setup, k, 0, true); err != nil {
			t.Fatalf("create register %d: %v", k, err)
		}
	}
	for g := 0; g < cfg.ClientWriters; g++ {
		fs := c.Dial(cfg.RetryFor)
		w.loop(func(i int, rng *rand.Rand) { w.clientWrite(fs, g, i, rng, cfg.MaxFile) }, seed, uint64(g))
	}
	if c.MountDir != "" {
		if err := os.MkdirAll(filepath.Join(c.MountDir, "load-fuse"), 0o755); err != nil {
			t.Fatalf("mkdir through the mount: %v", err)
		}
		for g := 0; g < cfg.FUSEWriters; g++ {
			w.loop(func(i int, rng *rand.Rand) { w.fuseWrite(g, i, rng, cfg.MaxFile) }, seed, 100+uint64(g))
		}
	}
	if c.GatewayURL != "" && cfg.S3Writers > 0 {
		if _, err := exec.LookPath("/usr/bin/aws"); err != nil {
			t.Logf("no /usr/bin/aws (Debian awscli): no S3 uploads in the workload")
		} else {
			if out, err := c.AWS(60*time.Second, "s3", "mb", "s3://load-s3"); err != nil {
				t.Fatalf("aws s3 mb: %v\n%s", err, out)
			}
			for g := 0; g < cfg.S3Writers; g++ {
				w.loop(func(i int, rng *rand.Rand) { w.s3Write(g, i, rng) }, seed, 200+uint64(g))
			}
		}
	}
	for g := 0; g < cfg.RegClients; g++ {
		fs := c.Dial(cfg.RetryFor)
		w.loop(func(i int, rng *rand.Rand) { w.registerOp(fs, g, rng, cfg.Registers) }, seed, 300+uint64(g))
	}
	return w
}

// loop runs op until Stop, with its own random source drawn from the seed.
func (w *Workload) loop(op func(i int, rng *rand.Rand), seed, stream uint64) {
	loopUntil(w.stop, &w.wg, seed, stream, op)
}

// loopUntil runs op in a goroutine of wg until stop closes, with the
// random source (seed, stream).
func loopUntil(stop <-chan struct{}, wg *sync.WaitGroup, seed, stream uint64, op func(i int, rng *rand.Rand)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, stream))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			op(i, rng)
		}
	}()
}

// Stop ends the workload and waits for the writers' last operations.
func (w *Workload) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
}

// content is size bytes drawn from rng, cheap enough for megabytes.
func content(rng *rand.Rand, size int) []byte {
	b := make([]byte, size)
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], rng.Uint64())
	binary.LittleEndian.PutUint64(seed[8:], rng.Uint64())
	rand.NewChaCha8(seed).Read(b)
	return b
}

func (w *Workload) ack(path string, data []byte, via string) {
	w.mu.Lock()
	w.acked[path] = Written{Size: len(data), Sum: sha256.Sum256(data), Via: via}
	w.mu.Unlock()
}

func (w *Workload) fail(via string, err error) {
	w.mu.Lock()
	w.failures[via]++
	w.lastErr[via] = err.Error()
	w.mu.Unlock()
}

// clientWrite creates one file through core/client: acknowledged once Close
// (which settles the length with metad) returns.
func (w *Workload) clientWrite(fs *client.FS, g, i int, rng *rand.Rand, maxSize int) {
	p := fmt.Sprintf("/load/c%d-%05d", g, i)
	data := content(rng, 1+rng.IntN(maxSize))
	ctx, done := w.opContext("client write " + p)
	defer done()
	f, err := fs.Create(ctx, p, 0o644)
	if err != nil {
		w.fail("client", err)
		return
	}
	if _, err := f.WriteAtContext(ctx, data, 0); err != nil {
		f.CloseContext(ctx)
		w.fail("client", err)
		return
	}
	if err := f.CloseContext(ctx); err != nil {
		w.fail("client", err)
		return
	}
	w.ack(p, data, "client")
}

// fuseWrite writes one file through the FUSE mount: acknowledged once
// write, fsync and close all succeeded.
func (w *Workload) fuseWrite(g, i int, rng *rand.Rand, maxSize int) {
	rel := fmt.Sprintf("load-fuse/f%d-%05d", g, i)
	data := content(rng, 1+rng.IntN(maxSize))
	if err := writeSynced(filepath.Join(w.c.MountDir, rel), data); err != nil {
		w.fail("fuse", err)
		time.Sleep(100 * time.Millisecond)
		return
	}
	w.ack("/"+rel, data, "fuse")
}

// writeSynced creates (or truncates) the file at p with data, fsyncs and
// closes it: an error from any of the three is returned.
func writeSynced(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// s3Write uploads one file with `aws s3 cp`: acknowledged when it exits 0.
// Sizes reach past the CLI's 8 MiB multipart threshold.
func (w *Workload) s3Write(g, i int, rng *rand.Rand) {
	size := 1 + rng.IntN(12<<20)
	data := content(rng, size)
	tmp, err := os.CreateTemp("", "ffm-s3-")
	if err != nil {
		w.fail("s3", err)
		return
	}
	defer os.Remove(tmp.Name())
	tmp.Write(data)
	tmp.Close()
	key := fmt.Sprintf("up/s%d-%05d", g, i)
	if out, err := w.c.AWS(90*time.Second, "s3", "cp", "--only-show-errors", tmp.Name(), "s3://load-s3/"+key); err != nil {
		w.fail("s3", fmt.Errorf("%v: %s", err, lastLine(out)))
		return
	}
	w.ack("/load-s3/"+key, data, "s3")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// forget drops a file whose state an operation left unknown (a failed
// rename or delete).
func (w *Workload) forget(path string) {
	w.mu.Lock()
	delete(w.acked, path)
	w.mu.Unlock()
}

// move records an acknowledged rename.
func (w *Workload) move(from, to string) {
	w.mu.Lock()
	if f, ok := w.acked[from]; ok {
		delete(w.acked, from)
		w.acked[to] = f
	}
	w.mu.Unlock()
}

// randomAcked picks an acknowledged file written through via.
func (w *Workload) randomAcked(rng *rand.Rand, via string) (string, Written, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var paths []string
	for p, f := range w.acked {
		if f.Via == via {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", Written{}, false
	}
	sort.Strings(paths)
	p := paths[rng.IntN(len(paths))]
	return p, w.acked[p], true
}

// Acked returns a copy of the acknowledged files.
func (w *Workload) Acked() map[string]Written {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]Written, len(w.acked))
	for k, v := range w.acked {
		out[k] = v
	}
	return out
}

// Summary describes what the workload did.
func (w *Workload) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	by := map[string]int{}
	var bytes int64
	for _, f := range w.acked {
		by[f.Via]++
		bytes += int64(f.Size)
	}
	var parts []string
	for _, via := range []string{"client", "fuse", "s3"} {
		if by[via] > 0 || w.failures[via] > 0 {
			s := fmt.Sprintf("%s: %d acked, %d failed", via, by[via], w.failures[via])
			if e := w.lastErr[via]; e != "" {
				s += fmt.Sprintf(" (last error: %.200s)", e)
			}
			parts = append(parts, s)
		}
	}
	return fmt.Sprintf("%d files acknowledged (%.1f MiB); %s; %d register operations",
		len(w.acked), float64(bytes)/(1<<20), strings.Join(parts, "; "), len(w.history))
}

// Verify reads every acknowledged file through a fresh client and compares
// its size and SHA-256 with what the workload wrote.
func (w *Workload) Verify(t testing.TB) {
	t.Helper()
	fs := w.c.Dial(30 * time.Second)
	ctx := context.Background()
	acked := w.Acked()
	paths := make([]string, 0, len(acked))
	for p := range acked {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	bad := 0
	for _, p := range paths {
		want := acked[p]
		got, err := readAll(ctx, fs, p)
		switch {
		case err != nil:
			t.Errorf("acknowledged file %s (%s, %d bytes): %v", p, want.Via, want.Size, err)
			bad++
		case len(got) != want.Size || sha256.Sum256(got) != want.Sum:
			t.Errorf("acknowledged file %s (%s): %d bytes, checksum %s; wrote %d bytes", p, want.Via, len(got),
				map[bool]string{true: "equal", false: "differs"}[sha256.Sum256(got) == want.Sum], want.Size)
			bad++
		}
		if bad >= 10 {
			t.Errorf("stopping after 10 bad files")
			return
		}
	}
	if bad == 0 {
		t.Logf("all %d acknowledged files read back with their checksums", len(paths))
	}
}

func readAll(ctx context.Context, fs *client.FS, p string) ([]byte, error) {
	f, err := fs.Open(ctx, p)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, f.Size())
	n, err := f.ReadAtContext(ctx, buf, 0)
	if err == io.EOF && n == len(buf) {
		err = nil
	}
	return buf[:n], err
}

// Registers: small files overwritten in place with growing values, read
// back from several clients; each operation recorded with its call and
// return times for porcupine.

type regInput struct {
	write bool
	value uint64
}

func regPath(k int) string { return fmt.Sprintf("%s/r%d", regDir, k) }

func writeRegister(ctx context.Context, fs *client.FS, k int, v uint64, create bool) error {
	var f *client.File
	var err error
	if create {
		f, err = fs.Create(ctx, regPath(k), 0o644)
	} else {
		f, err = fs.OpenFile(ctx, regPath(k), os.O_WRONLY, 0)
	}
	if err != nil {
		return err
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	if _, err := f.WriteAtContext(ctx, b[:], 0); err != nil {
		f.CloseContext(ctx)
		return err
	}
	return f.CloseContext(ctx)
}

func (w *Workload) registerOp(fs *client.FS, g int, rng *rand.Rand, regs int) {
	k := rng.IntN(regs)
	ctx, done := w.opContext(fmt.Sprintf("register %d operation", k))
	defer done()
	call := time.Now().UnixNano()
	if rng.IntN(2) == 0 {
		v := w.regVal.Add(1)
		err := writeRegister(ctx, fs, k, v, false)
		ret := time.Now().UnixNano()
		if err != nil {
			// It may have taken effect at any point after the call.
			ret = math.MaxInt64
		}
		w.record(porcupine.Operation{ClientId: g, Input: regInput{write: true, value: v}, Call: call, Return: ret, Metadata: k})
		if err != nil {
			time.Sleep(50 * time.Millisecond)
		}
		return
	}
	got, err := readAll(ctx, fs, regPath(k))
	ret := time.Now().UnixNano()
	if err != nil || len(got) != 8 {
		// A failed read observed nothing; leave it out of the history.
		time.Sleep(50 * time.Millisecond)
		return
	}
	w.record(porcupine.Operation{ClientId: g, Input: regInput{}, Output: binary.BigEndian.Uint64(got), Call: call, Return: ret, Metadata: k})
}

func (w *Workload) record(op porcupine.Operation) {
	w.mu.Lock()
	w.history = append(w.history, op)
	w.mu.Unlock()
}

var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range h {
			by[op.Metadata.(int)] = append(by[op.Metadata.(int)], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(uint64) == state.(uint64), state
	},
	Equal: func(a, b any) bool { return a.(uint64) == b.(uint64) },
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		if in.write {
			return fmt.Sprintf("write(%d)", in.value)
		}
		return fmt.Sprintf("read() -> %d", output)
	},
}

// CheckLinearizable checks the register history with porcupine; a failure
// leaves an HTML visualisation in the test's temp dir.
func (w *Workload) CheckLinearizable(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	h := pruneUnseenPending(w.history)
	dropped := len(w.history) - len(h)
	w.mu.Unlock()
	if dropped > 0 {
		t.Logf("register history: %d failed writes whose values no read returned left out (each may take effect at any time after its call, so it can be placed last)", dropped)
	}
	reads := 0
	for _, op := range h {
		if !op.Input.(regInput).write {
			reads++
		}
	}
	if reads == 0 {
		t.Errorf("register workload: no read succeeded, nothing to check")
		return
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, h, 60*time.Second)
	switch res {
	case porcupine.Ok:
		t.Logf("register history of %d operations (%d reads) is linearizable", len(h), reads)
	case porcupine.Unknown:
		t.Errorf("porcupine timed out on %d operations", len(h))
	default:
		path := filepath.Join(w.c.Dir, "registers.html")
		var buf bytes.Buffer
		porcupine.Visualize(registerModel, info, &buf)
		os.WriteFile(path, buf.Bytes(), 0o644)
		t.Errorf("register history of %d operations is NOT linearizable (visualisation: %s)", len(h), path)
	}
}

// pruneUnseenPending drops the writes of unknown outcome (a failed write may
// still take effect at any time after its call) whose value no read
// returned. Values are unique, so such a write can always be linearized
// after every other operation: the history is linearizable with it iff
// without it. A disk that refuses writes for a while leaves hundreds of
// them, which porcupine cannot search in time.
func pruneUnseenPending(h []porcupine.Operation) []porcupine.Operation {
	seen := map[uint64]bool{}
	for _, op := range h {
		if !op.Input.(regInput).write {
			seen[op.Output.(uint64)] = true
		}
	}
	out := make([]porcupine.Operation, 0, len(h))
	for _, op := range h {
		if in := op.Input.(regInput); in.write && op.Return == math.MaxInt64 && !seen[in.value] {
			continue
		}
		out = append(out, op)
	}
	return out
}
