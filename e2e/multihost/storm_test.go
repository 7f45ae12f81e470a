package multihost

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/client"
)

// renameStorm moves files between directories from several goroutines. Each
// goroutine owns its files and knows where each is; a rename that fails is
// resolved afterwards by looking at both names (it happened or it did not,
// never both, never neither).
type renameStorm struct {
	t             testing.TB
	fs            *client.FS
	dirs          int
	mu            sync.Mutex
	where         map[int]string   // file -> path
	sums          map[int][32]byte // file -> content
	moves, failed int
	stop          chan struct{}
	wg            sync.WaitGroup
}

const stormRoot = "/storm"

func startRenameStorm(t testing.TB, fs *client.FS, seed uint64, files, dirs, workers int) *renameStorm {
	t.Helper()
	ctx := context.Background()
	st := &renameStorm{t: t, fs: fs, dirs: dirs, where: map[int]string{}, sums: map[int][32]byte{}, stop: make(chan struct{})}
	for d := 0; d < dirs; d++ {
		if err := fs.MkdirAll(ctx, fmt.Sprintf("%s/d%d", stormRoot, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x5707))
	for i := 0; i < files; i++ {
		p := fmt.Sprintf("%s/d%d/f%03d-0", stormRoot, i%dirs, i)
		data := content(rng, 1+rng.IntN(64<<10))
		f, err := fs.Create(ctx, p, 0o644)
		if err == nil {
			_, err = f.WriteAt(data, 0)
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatalf("storm file %s: %v", p, err)
		}
		st.where[i], st.sums[i] = p, sha256.Sum256(data)
	}
	for g := 0; g < workers; g++ {
		st.wg.Add(1)
		go st.worker(g, workers, rand.New(rand.NewPCG(seed, 0x5708+uint64(g))))
	}
	return st
}

func (st *renameStorm) worker(g, workers int, rng *rand.Rand) {
	defer st.wg.Done()
	ctx := context.Background()
	var mine []int
	for i := range st.where {
		if i%workers == g {
			mine = append(mine, i)
		}
	}
	sort.Ints(mine)
	for gen := 1; ; gen++ {
		select {
		case <-st.stop:
			return
		default:
		}
		i := mine[rng.IntN(len(mine))]
		st.mu.Lock()
		from := st.where[i]
		st.mu.Unlock()
		to := fmt.Sprintf("%s/d%d/f%03d-%d", stormRoot, rng.IntN(st.dirs), i, gen)
		err := st.fs.Rename(ctx, from, to)
		if err != nil {
			// Resolve: the file is at exactly one of the two names.
			at, rerr := st.resolve(ctx, from, to)
			st.mu.Lock()
			st.failed++
			if rerr != nil {
				st.mu.Unlock()
				st.t.Errorf("rename %s -> %s failed (%v) and then: %v", from, to, err, rerr)
				return
			}
			st.where[i] = at
			st.mu.Unlock()
			continue
		}
		st.mu.Lock()
		st.where[i] = to
		st.moves++
		st.mu.Unlock()
	}
}

// resolve finds which of from and to names the file, retrying while metad
// is unreachable.
func (st *renameStorm) resolve(ctx context.Context, from, to string) (string, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, errTo := st.fs.Stat(ctx, to)
		_, errFrom := st.fs.Stat(ctx, from)
		toThere, fromThere := errTo == nil, errFrom == nil
		toGone, fromGone := client.Errno(errTo) == 2, client.Errno(errFrom) == 2 // ENOENT
		switch {
		case toThere && fromGone:
			return to, nil
		case fromThere && toGone:
			return from, nil
		case toThere && fromThere:
			return "", fmt.Errorf("both %s and %s exist", from, to)
		case toGone && fromGone:
			return "", fmt.Errorf("neither %s nor %s exists", from, to)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("cannot tell where it is: %v / %v", errFrom, errTo)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// finish stops the storm and checks the namespace: the storm directories
// hold exactly the files at their known names, each with its content.
func (st *renameStorm) finish(t testing.TB) {
	t.Helper()
	close(st.stop)
	st.wg.Wait()
	ctx := context.Background()
	want := map[string]int{}
	for i, p := range st.where {
		want[p] = i
	}
	found := 0
	for d := 0; d < st.dirs; d++ {
		dir := fmt.Sprintf("%s/d%d", stormRoot, d)
		ents, err := st.fs.ReadDir(ctx, dir)
		if err != nil {
			t.Errorf("readdir %s: %v", dir, err)
			continue
		}
		for _, e := range ents {
			p := dir + "/" + e.Name
			i, ok := want[p]
			if !ok {
				t.Errorf("rename storm: unexpected entry %s (a rename applied twice, or one the client was told failed)", p)
				continue
			}
			found++
			data, err := readAll(ctx, st.fs, p)
			if err != nil || sha256.Sum256(data) != st.sums[i] {
				t.Errorf("rename storm: %s: content differs (%v)", p, err)
			}
		}
	}
	if found != len(want) {
		t.Errorf("rename storm: %d of %d files found where they should be", found, len(want))
	}
	t.Logf("rename storm: %d renames acknowledged, %d failed and resolved; %d files all in place", st.moves, st.failed, found)
}

// (d) kill -9 each metad in turn in the middle of a rename storm: clients
// fail over to the other and retry with the same request ids, so no rename
// is lost or applied twice.
func TestKillMetadDuringRenameStorm(t *testing.T) {
	runScenario(t, true, Config{}, WorkloadConfig{}, func(s *Scenario) {
		fs := s.C.Dial(20 * time.Second)
		st := startRenameStorm(t, fs, s.Seed, 60, 4, 4)
		for _, m := range s.Rng.Perm(len(s.C.Metad)) {
			s.Pause(500*time.Millisecond, 1500*time.Millisecond)
			s.T.Logf("kill -9 metad%d mid-storm", m+1)
			s.C.Metad[m].Kill()
			s.Pause(time.Second, 3*time.Second)
			s.C.Metad[m].Start()
		}
		s.Pause(time.Second, 2*time.Second)
		st.finish(t)
	})
}
