package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The crash test re-executes the test binary as a child that hammers an
// engine (Sync on, small chunks inline) from several goroutines, half its
// updates and commits relaxed (a process crash must keep those too), and
// prints, per update,
//
//	S <key> <op> <ver> <cver> <off> <n> <seed>   before the call
//	A <key> <op> <ver> <cver> <off> <n> <seed>   after it returned
//
// The parent SIGKILLs it at a random moment, reopens the engine and checks
// every key against a model built from the A lines: the key must show the
// model state, or the model plus its one in-flight (S without A) update.
// Repeated on one directory, each round starting from the verified state.

const (
	crashChildEnv = "FLYFS_ENGINE_CRASH_CHILD"
	crashKeys     = 240
	crashWorkers  = 4
	crashCS       = 256 << 10
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	os.Exit(m.Run())
}

func crashKey(i int) Key { return tkey(uint32(1+i%3), uint64(i/8), uint64(i%8)) }

func crashOptions() Options {
	return Options{Sync: true, GroupBlocks: 16, MaxGroupBytes: 64 << 20, ReserveBytes: -1, EncryptionKey: suiteKey(), InlineMax: 16 << 10}
}

type crashOp struct {
	key       int
	op        byte // W write, R replace, T truncate, D remove, C commit
	ver, cver uint32
	off, n    int
	seed      uint64
}

func (o crashOp) String() string {
	return fmt.Sprintf("%d %c %d %d %d %d %d", o.key, o.op, o.ver, o.cver, o.off, o.n, o.seed)
}

func parseCrashOp(fields []string) (crashOp, error) {
	var o crashOp
	if len(fields) != 7 || len(fields[1]) != 1 {
		return o, fmt.Errorf("bad op %q", fields)
	}
	nums := make([]uint64, 0, 6)
	for i, f := range fields {
		if i == 1 {
			continue
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return o, err
		}
		nums = append(nums, v)
	}
	o = crashOp{key: int(nums[0]), op: fields[1][0], ver: uint32(nums[1]), cver: uint32(nums[2]),
		off: int(nums[3]), n: int(nums[4]), seed: nums[5]}
	if o.key >= crashKeys {
		return o, fmt.Errorf("bad key %d", o.key)
	}
	return o, nil
}

// update converts a data op into the engine update (shared by child and model).
func (o crashOp) update(round uint32) Update {
	u := Update{ChunkSize: crashCS, ChainVer: round, UpdateVer: o.ver, CommitVer: o.cver, Relaxed: o.relaxed()}
	switch o.op {
	case 'W':
		u.Offset, u.Data = uint32(o.off), pattern(o.seed, o.n)
	case 'R':
		u.Replace, u.Data = true, pattern(o.seed, o.n)
	case 'T':
		u.Truncate, u.Length = true, uint32(o.n)
	}
	return u
}

// relaxed: half the updates and commits are relaxed.
func (o crashOp) relaxed() bool { return o.seed%2 == 1 }

func (o crashOp) applyTo(m *model, round uint32) {
	switch o.op {
	case 'D':
		m.remove()
	case 'C':
		m.commit(o.cver, round)
	default:
		m.apply(o.update(round))
	}
}

func crashChild() {
	dir := os.Getenv(crashChildEnv)
	round64, _ := strconv.ParseUint(os.Getenv(crashChildEnv+"_ROUND"), 10, 32)
	round := uint32(round64)
	e, err := Open(dir, crashOptions())
	if err != nil {
		fmt.Printf("E open: %v\n", err)
		os.Exit(2)
	}
	var outMu sync.Mutex
	say := func(s string) {
		outMu.Lock()
		os.Stdout.WriteString(s) // one write per line: lines never interleave
		outMu.Unlock()
	}
	say("ready\n")
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			type st struct {
				ver, length uint32 // ver: last version used for this key
				upd         uint32 // the chunk's UpdateVer
				exists      bool
			}
			var mine []int
			state := map[int]*st{}
			for i := w; i < crashKeys; i += crashWorkers {
				mine = append(mine, i)
				s := &st{ver: round * 1_000_000}
				if m, err := e.GetMeta(crashKey(i)); err == nil {
					s.ver, s.upd, s.length, s.exists = max(s.ver, m.UpdateVer), m.UpdateVer, m.Len, true
				}
				state[i] = s
			}
			for {
				i := mine[r.IntN(len(mine))]
				s := state[i]
				o := crashOp{key: i, ver: s.ver + 1, seed: r.Uint64()}
				o.cver = o.ver
				if r.IntN(3) == 0 {
					o.cver = o.ver - 1
				}
				size := r.IntN(crashCS/2) + 1
				if r.IntN(3) == 0 {
					size = r.IntN(3000) + 1
				}
				switch p := r.IntN(100); {
				case p < 30: // append
					o.op, o.off = 'W', int(s.length)
					o.n = min(size, crashCS-o.off)
				case p < 50: // overwrite or write anywhere
					o.op, o.off = 'W', r.IntN(crashCS)
					if s.length > 0 && r.IntN(2) == 0 {
						o.off = r.IntN(int(s.length))
					}
					o.n = min(size, crashCS-o.off)
				case p < 70:
					o.op, o.n = 'R', r.IntN(crashCS+1)
				case p < 82:
					o.op, o.n = 'T', r.IntN(crashCS+1)
				case p < 90 && s.exists:
					o.op, o.ver, o.cver = 'C', s.upd, s.upd
				case p < 95:
					o.op, o.ver, o.cver = 'D', s.ver, s.ver
				default:
					continue
				}
				say("S " + o.String() + "\n")
				switch o.op {
				case 'D':
					err = e.Remove(crashKey(i))
					s.exists, s.length = false, 0
				case 'C':
					_, err = e.Commit(crashKey(i), o.cver, round, o.relaxed())
				default:
					var m Meta
					m, err = e.Apply(crashKey(i), o.update(round))
					s.ver, s.upd, s.length, s.exists = o.ver, o.ver, m.Len, true
				}
				if err != nil {
					say(fmt.Sprintf("E %v: %v\n", o, err))
					os.Exit(3)
				}
				say("A " + o.String() + "\n")
			}
		})
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	rounds := 8
	if testing.Short() {
		rounds = 5
	}
	models := make([]model, crashKeys)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	totalAcked := 0
	for round := 1; round <= rounds; round++ {
		lines, stderr := runCrashChild(t, dir, round, time.Duration(100+r.IntN(1400))*time.Millisecond)
		inflight := map[int]crashOp{}
		acked := 0
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) == 0 || f[0] == "ready":
			case f[0] == "E":
				t.Fatalf("round %d: child failed: %s\n%s", round, l, stderr)
			case f[0] == "S" || f[0] == "A":
				o, err := parseCrashOp(f[1:])
				if err != nil {
					t.Fatalf("round %d: %v in %q", round, err, l)
				}
				if f[0] == "S" {
					inflight[o.key] = o
				} else {
					o.applyTo(&models[o.key], uint32(round))
					delete(inflight, o.key)
					acked++
				}
			default:
				t.Fatalf("round %d: unexpected child output %q", round, l)
			}
		}
		totalAcked += acked

		e, err := Open(dir, crashOptions())
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		landed := 0
		for i := range crashKeys {
			k := crashKey(i)
			why := models[i].check(e, k)
			if why == "" {
				continue
			}
			o, ok := inflight[i]
			if !ok {
				e.Close()
				t.Fatalf("round %d: key %d (%v) acked state lost: %s", round, i, k, why)
			}
			next := models[i]
			o.applyTo(&next, uint32(round))
			if why2 := next.check(e, k); why2 != "" {
				e.Close()
				t.Fatalf("round %d: key %d (%v) is neither its acked state (%s) nor with in-flight %v (%s)", round, i, k, why, o, why2)
			}
			models[i] = next
			landed++
		}
		rep, err := e.Verify(t.Context())
		if err != nil || !rep.OK() {
			e.Close()
			t.Fatalf("round %d: Verify: %v %+v", round, err, rep)
		}
		st := e.Stats()
		var blocks, want int64
		for _, c := range st.Classes {
			blocks += c.UsedBlocks
		}
		inline := 0
		for i, m := range models {
			switch {
			case m.meta.Len > 0 && e.current(crashKey(i)).inline:
				inline++
			case m.meta.Len > 0:
				want++
			}
		}
		if blocks != want || st.ChecksumErrors != 0 {
			e.Close()
			t.Fatalf("round %d: %d used blocks for %d non-empty chunks, %d checksum errors", round, blocks, want, st.ChecksumErrors)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d acked, %d in flight at kill, %d of them landed, %d chunks (%d inline)", round, acked, len(inflight), landed, st.Chunks, inline)
	}
	if totalAcked == 0 {
		t.Fatal("children acknowledged nothing")
	}
}

// runCrashChild runs one child on dir, kills it after d and returns its
// complete output lines (a torn last line is dropped) and its stderr.
func runCrashChild(t *testing.T, dir string, round int, d time.Duration) ([]string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", crashChildEnv, round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReaderSize(out, 1<<16)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				if err != io.EOF {
					t.Errorf("reading child output: %v", err)
				}
				return // a fragment without '\n' was torn by the kill
			}
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
	}()
	time.Sleep(d)
	cmd.Process.Kill()
	<-done
	cmd.Wait()
	return lines, stderr.String()
}
