package conformance

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFsx is an fsx-style exerciser: random writes, truncates, reads,
// reopens and syncs of one file through the mount, every read checked
// against an in-memory model. A failure prints the seed and the last ops;
// FLYFS_FSX_SEED replays a run, FLYFS_FSX_OPS sets its length.
func TestFsx(t *testing.T) {
	d := dir(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLYFS_FSX_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FLYFS_FSX_SEED: %v", err)
		}
		seed = v
	}
	ops := 3000
	if s := os.Getenv("FLYFS_FSX_OPS"); s != "" {
		ops, _ = strconv.Atoi(s)
	}
	t.Logf("fsx seed %d, %d ops (replay: FLYFS_FSX_SEED=%d)", seed, ops, seed)
	x := &fsx{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), path: filepath.Join(d, "fsx"), seed: seed}
	x.run(ops)
}

const (
	fsxMaxSize = 3 << 20   // offsets stay below this (chunks are 64 KiB)
	fsxMaxIO   = 256 << 10 // the largest single read or write
)

type fsx struct {
	t      *testing.T
	rng    *rand.Rand
	path   string
	seed   uint64
	model  []byte
	w      *os.File // read-write descriptor
	r      *os.File // a read-only descriptor opened early, kept across writes
	log    []string
	opN    int
	buf    []byte
	rdbuf  []byte
	closed bool
}

func (x *fsx) logf(format string, args ...any) {
	x.log = append(x.log, fmt.Sprintf("%5d ", x.opN)+fmt.Sprintf(format, args...))
	if len(x.log) > 25 {
		x.log = x.log[1:]
	}
}

func (x *fsx) fail(format string, args ...any) {
	x.t.Helper()
	x.t.Fatalf("fsx seed %d op %d: %s\nlast ops:\n%s", x.seed, x.opN, fmt.Sprintf(format, args...), strings.Join(x.log, "\n"))
}

func (x *fsx) open(trunc bool) {
	flags := os.O_RDWR | os.O_CREATE
	if trunc {
		flags |= os.O_TRUNC
		x.model = x.model[:0]
	}
	w, err := os.OpenFile(x.path, flags, 0o644)
	if err != nil {
		x.fail("open: %v", err)
	}
	x.w = w
}

func (x *fsx) run(ops int) {
	x.buf = make([]byte, fsxMaxIO)
	x.rdbuf = make([]byte, fsxMaxIO)
	x.open(true)
	r, err := os.Open(x.path)
	if err != nil {
		x.fail("open reader: %v", err)
	}
	x.r = r
	defer func() { x.w.Close(); x.r.Close() }()
	for x.opN = 0; x.opN < ops; x.opN++ {
		switch p := x.rng.IntN(100); {
		case p < 35:
			x.write()
		case p < 55:
			x.read(x.w, "rw fd")
		case p < 70:
			x.read(x.r, "early ro fd")
		case p < 78:
			x.truncate()
		case p < 82:
			x.appendWrite()
		case p < 86:
			if err := x.w.Sync(); err != nil {
				x.fail("fsync: %v", err)
			}
			x.logf("fsync")
		case p < 90:
			x.checkSize()
		case p < 95:
			x.reopen()
		default:
			x.readAllFresh()
		}
	}
	x.w.Close()
	x.readAllFresh()
}

// data fills n bytes with a pattern naming the op, so a misplaced block
// shows where it came from.
func (x *fsx) data(n int) []byte {
	b := x.buf[:n]
	tag := byte(x.opN%251 + 1)
	for i := range b {
		b[i] = tag ^ byte(i*7)
	}
	return b
}

func (x *fsx) write() {
	off := x.rng.IntN(fsxMaxSize)
	n := 1 + x.rng.IntN(fsxMaxIO)
	if x.rng.IntN(4) == 0 { // sometimes page- or chunk-aligned
		off &^= 4095
	}
	b := x.data(n)
	x.logf("write %d+%d (size %d)", off, n, len(x.model))
	if _, err := x.w.WriteAt(b, int64(off)); err != nil {
		x.fail("write %d+%d: %v", off, n, err)
	}
	if end := off + n; end > len(x.model) {
		x.model = append(x.model, make([]byte, end-len(x.model))...)
	}
	copy(x.model[off:], b)
}

func (x *fsx) appendWrite() {
	a, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		x.fail("open O_APPEND: %v", err)
	}
	n := 1 + x.rng.IntN(20000)
	b := x.data(n)
	x.logf("append %d at %d", n, len(x.model))
	if _, err := a.Write(b); err != nil {
		x.fail("append: %v", err)
	}
	if err := a.Close(); err != nil {
		x.fail("close after append: %v", err)
	}
	x.model = append(x.model, b...)
}

func (x *fsx) truncate() {
	size := x.rng.IntN(fsxMaxSize)
	if x.rng.IntN(3) == 0 {
		size = x.rng.IntN(len(x.model) + 1) // shrink more often than grow
	}
	x.logf("truncate %d (size %d)", size, len(x.model))
	var err error
	if x.rng.IntN(2) == 0 {
		err = x.w.Truncate(int64(size))
	} else {
		err = os.Truncate(x.path, int64(size))
	}
	if err != nil {
		x.fail("truncate %d: %v", size, err)
	}
	if size > len(x.model) {
		x.model = append(x.model, make([]byte, size-len(x.model))...)
	} else {
		x.model = x.model[:size]
	}
}

func (x *fsx) read(f *os.File, what string) {
	off := x.rng.IntN(len(x.model) + fsxMaxIO/4 + 1)
	n := 1 + x.rng.IntN(fsxMaxIO)
	x.logf("read %s %d+%d (size %d)", what, off, n, len(x.model))
	got, err := f.ReadAt(x.rdbuf[:n], int64(off))
	if err != nil && err != io.EOF {
		x.fail("read %s %d+%d: %v", what, off, n, err)
	}
	var want []byte
	if off < len(x.model) {
		want = x.model[off:min(off+n, len(x.model))]
	}
	if got != len(want) {
		x.fail("read %s %d+%d: got %d bytes, model has %d (size %d)", what, off, n, got, len(want), len(x.model))
	}
	if i := firstDiff(x.rdbuf[:got], want); i >= 0 {
		x.fail("read %s %d+%d: byte at file offset %d is %#x, model says %#x", what, off, n, off+i, x.rdbuf[i], want[i])
	}
}

func (x *fsx) checkSize() {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(x.w.Fd()), &st); err != nil {
		x.fail("fstat: %v", err)
	}
	x.logf("fstat size %d", st.Size)
	if st.Size != int64(len(x.model)) {
		x.fail("fstat size %d, model %d", st.Size, len(x.model))
	}
}

func (x *fsx) reopen() {
	trunc := x.rng.IntN(8) == 0
	x.logf("close and reopen (trunc %v)", trunc)
	if err := x.w.Close(); err != nil {
		x.fail("close: %v", err)
	}
	x.open(trunc)
}

// readAllFresh opens the file anew and compares all of it.
func (x *fsx) readAllFresh() {
	x.logf("read all through a new descriptor")
	got, err := os.ReadFile(x.path)
	if err != nil {
		x.fail("read all: %v", err)
	}
	if len(got) != len(x.model) {
		x.fail("read all: %d bytes, model %d", len(got), len(x.model))
	}
	if i := firstDiff(got, x.model); i >= 0 {
		x.fail("read all: byte %d is %#x, model says %#x", i, got[i], x.model[i])
	}
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
