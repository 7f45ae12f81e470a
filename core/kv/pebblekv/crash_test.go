package pebblekv_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/flyfs/flyfs/core/durability"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

const keysPerTxn = 5

// TestCrashChild is the child process of TestCrashRecovery: it commits
// transactions from several goroutines forever and prints "ack <id>" after each
// commit returns; half the goroutines commit relaxed (acknowledged before the
// WAL fsync), which a process crash must not lose either. It does nothing
// unless started by the parent.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("FLYFS_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestCrashRecovery")
	}
	round := os.Getenv("FLYFS_CRASH_ROUND")
	db, err := pebblekv.Open(dir, pebblekv.Options{SyncWindow: 100 * time.Millisecond})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ctx := context.Background()
			if w%2 == 1 {
				ctx = durability.Relaxed(ctx)
			}
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-%d-%06d", round, w, i)
				err := db.Run(ctx, func(tx kv.Txn) error {
					for j := 0; j < keysPerTxn; j++ {
						tx.Set([]byte(fmt.Sprintf("crash/%s/%d", id, j)), []byte(id+strings.Repeat("x", 200)))
					}
					// Every transaction also moves a shared counter, so commits contend.
					v, _, err := tx.Get(context.Background(), []byte("count"))
					if err != nil {
						return err
					}
					var n int
					fmt.Sscan(string(v), &n)
					tx.Set([]byte("count"), []byte(fmt.Sprint(n+1)))
					return nil
				})
				if err != nil {
					fmt.Println("commit:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %s\n", id)
				out.Flush()
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
}

// TestCrashRecovery kills a committing child with SIGKILL at random moments,
// several times over one directory, and checks after each kill that every
// acknowledged transaction is whole on disk and no transaction is partial.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	acked := map[string]bool{}
	for round := 0; round < 6; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v=false")
		cmd.Env = append(os.Environ(), "FLYFS_CRASH_DIR="+dir, fmt.Sprint("FLYFS_CRASH_ROUND=", round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Let it get going (its first acknowledgement: a loaded machine
		// may take a while to start it), then kill it at a random moment
		// mid-stream.
		var killAt <-chan time.Time
		stuck := time.After(time.Minute)
		n := 0
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				if id, ok := strings.CutPrefix(l, "ack "); ok {
					acked[id] = true
					if n++; n == 1 {
						killAt = time.After(time.Duration(rng.IntN(350)) * time.Millisecond)
						stuck = nil
					}
				} else {
					t.Fatalf("child said %q", l)
				}
			case <-killAt:
				cmd.Process.Signal(syscall.SIGKILL)
				killAt = nil
			case <-stuck:
				cmd.Process.Signal(syscall.SIGKILL)
				t.Fatalf("round %d: the child acknowledged nothing within a minute", round)
			}
		}
		cmd.Wait()
		if n == 0 {
			t.Fatalf("round %d: the child acknowledged nothing before the kill", round)
		}
		checkCrashState(t, dir, acked)
		t.Logf("round %d: %d commits acknowledged before SIGKILL; all present, none partial", round, n)
	}
}

func checkCrashState(t *testing.T, dir string, acked map[string]bool) {
	t.Helper()
	db, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer db.Close()
	counts := map[string]int{}
	var total int
	err = db.RunRead(context.Background(), func(tx kv.ReadTxn) error {
		counts, total = map[string]int{}, 0
		res, err := tx.GetRange(context.Background(), []byte("crash/"), []byte("crash0"), kv.RangeOptions{})
		if err != nil {
			return err
		}
		for _, x := range res.KVs {
			parts := strings.Split(string(x.Key), "/")
			if !strings.HasPrefix(string(x.Value), parts[1]) {
				return fmt.Errorf("key %s holds %.20q", x.Key, x.Value)
			}
			counts[parts[1]]++
		}
		v, _, err := tx.Get(context.Background(), []byte("count"))
		fmt.Sscan(string(v), &total)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range acked {
		if counts[id] != keysPerTxn {
			t.Fatalf("acknowledged transaction %s has %d of %d keys after the crash", id, counts[id], keysPerTxn)
		}
	}
	for id, n := range counts {
		if n != keysPerTxn {
			t.Fatalf("transaction %s is partial: %d of %d keys", id, n, keysPerTxn)
		}
	}
	if total != len(counts) {
		t.Fatalf("counter says %d commits, the data holds %d", total, len(counts))
	}
}

// TestReopenKeepsDataAndVersions checks that a clean close and reopen keeps the
// data and that commit versions (so versionstamps) keep growing.
func TestReopenKeepsDataAndVersions(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx := db.Begin()
	tx.Set([]byte("k"), []byte("v"))
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	v1 := tx.CommittedVersion()
	db.Close()
	db, err = pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx = db.Begin()
	got, found, err := tx.Get(ctx, []byte("k"))
	if err != nil || !found || string(got) != "v" {
		t.Fatalf("after reopen k = %q,%v,%v", got, found, err)
	}
	tx.Set([]byte("k2"), nil)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tx.CommittedVersion() <= v1 {
		t.Fatalf("version went from %d back to %d across a reopen", v1, tx.CommittedVersion())
	}
}

// TestCloseWithOpenTransaction: closing the engine under a running
// transaction makes it fail cleanly, never panic.
func TestCloseWithOpenTransaction(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tx := db.Begin()
	if _, _, err := tx.Get(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tx.Get(ctx, []byte("b")); err == nil {
		t.Fatal("read after close succeeded")
	}
	tx.Set([]byte("a"), nil)
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit after close succeeded")
	}
}

// TestSecondOpenNamesTheLock: a second process (here: a second open) of the
// same directory gets an error that says the directory is in use.
func TestSecondOpenNamesTheLock(t *testing.T) {
	dir := t.TempDir()
	db, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = pebblekv.Open(dir, pebblekv.Options{})
	if err == nil || !strings.Contains(err.Error(), "is in use by another") {
		t.Fatalf("second open: %v", err)
	}
}
