package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Locks are the cluster's: a lock taken through one mount holds against
// another mount of the same cluster (another client, as another host's
// would be), and goes at the holder's unlock, close or unmount.

func openBoth(t *testing.T) (f1, f2 *os.File, p string) {
	t.Helper()
	p = filepath.Join(dir(t), "locked")
	mustWrite(t, p, strings.Repeat("x", 1000))
	var err error
	if f1, err = os.OpenFile(p, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f1.Close() })
	if f2, err = os.OpenFile(onSecond(t, p), os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f2.Close() })
	return f1, f2, p
}

func fcntl(f *os.File, cmd int, typ int16, start, length int64) (*syscall.Flock_t, error) {
	lk := &syscall.Flock_t{Type: typ, Whence: 0, Start: start, Len: length}
	for {
		err := syscall.FcntlFlock(f.Fd(), cmd, lk)
		if err != syscall.EINTR {
			return lk, err
		}
	}
}

// TestFcntlLocksAcrossMounts: ranges, shared and exclusive, F_GETLK naming
// the holder, a blocking wait that ends at the unlock, and close releasing.
func TestFcntlLocksAcrossMounts(t *testing.T) {
	f1, f2, _ := openBoth(t)
	if _, err := fcntl(f1, syscall.F_SETLK, syscall.F_WRLCK, 0, 100); err != nil {
		t.Fatalf("write lock 0..99: %v", err)
	}
	_, err := fcntl(f2, syscall.F_SETLK, syscall.F_RDLCK, 50, 10)
	wantErrno(t, "a read lock inside another mount's write lock", err, syscall.EAGAIN)
	lk, err := fcntl(f2, syscall.F_GETLK, syscall.F_RDLCK, 50, 10)
	if err != nil || lk.Type != syscall.F_WRLCK || lk.Start != 0 || lk.Len != 100 {
		t.Fatalf("F_GETLK: %v %+v, want the write lock 0..99", err, lk)
	}
	if _, err := fcntl(f2, syscall.F_SETLK, syscall.F_WRLCK, 100, 100); err != nil {
		t.Fatalf("a lock beside it: %v", err)
	}
	if lk, err := fcntl(f2, syscall.F_GETLK, syscall.F_WRLCK, 200, 0); err != nil || lk.Type != syscall.F_UNLCK {
		t.Fatalf("F_GETLK of a free range: %v %+v", err, lk)
	}
	// A downgrade to shared lets the other mount read-lock.
	if _, err := fcntl(f1, syscall.F_SETLK, syscall.F_RDLCK, 0, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := fcntl(f2, syscall.F_SETLK, syscall.F_RDLCK, 0, 50); err != nil {
		t.Fatalf("a shared lock beside another shared one: %v", err)
	}
	_, err = fcntl(f1, syscall.F_SETLK, syscall.F_WRLCK, 0, 100)
	wantErrno(t, "an upgrade over another mount's shared lock", err, syscall.EAGAIN)
	if _, err := fcntl(f2, syscall.F_SETLK, syscall.F_UNLCK, 0, 0); err != nil {
		t.Fatal(err)
	}
	// A blocking wait ends when the holder unlocks.
	if _, err := fcntl(f1, syscall.F_SETLK, syscall.F_WRLCK, 0, 0); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := fcntl(f2, syscall.F_SETLKW, syscall.F_WRLCK, 10, 10)
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("F_SETLKW returned while the lock was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := fcntl(f1, syscall.F_SETLK, syscall.F_UNLCK, 0, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("F_SETLKW after the unlock: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("F_SETLKW still waits after the unlock")
	}
	// Closing a descriptor releases its process's locks on the file.
	_, err = fcntl(f1, syscall.F_SETLK, syscall.F_WRLCK, 10, 10)
	wantErrno(t, "a lock over the waiter's", err, syscall.EAGAIN)
	f2.Close()
	if _, err := fcntl(f1, syscall.F_SETLK, syscall.F_WRLCK, 10, 10); err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
}

// TestFlockAcrossMounts: flock(2) in this process and by the flock(1)
// program, through both mounts; the last close releases.
func TestFlockAcrossMounts(t *testing.T) {
	f1, f2, p := openBoth(t)
	if err := syscall.Flock(int(f1.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("LOCK_EX: %v", err)
	}
	wantErrno(t, "LOCK_SH from the other mount", syscall.Flock(int(f2.Fd()), syscall.LOCK_SH|syscall.LOCK_NB), syscall.EWOULDBLOCK)
	// fcntl locks are another table: they do not see flocks.
	if _, err := fcntl(f2, syscall.F_SETLK, syscall.F_WRLCK, 0, 0); err != nil {
		t.Fatalf("an fcntl lock beside a flock: %v", err)
	}
	if _, err := fcntl(f2, syscall.F_SETLK, syscall.F_UNLCK, 0, 0); err != nil {
		t.Fatal(err)
	}
	flockBin := needProgram(t, "flock", "util-linux")
	if out, err := exec.Command(flockBin, "-n", "-s", onSecond(t, p), "true").CombinedOutput(); err == nil {
		t.Fatalf("flock -n -s through the second mount took the lock: %s", out)
	}
	// The last close of the open file lets its flock go; the kernel sends
	// that release after close(2) returns, so the lock goes moments later.
	f1.Close()
	eventually(t, "flock -n -x after the holder closed", func() error {
		if out, err := exec.Command(flockBin, "-n", "-x", onSecond(t, p), "true").CombinedOutput(); err != nil {
			return fmt.Errorf("%v %s", err, out)
		}
		return nil
	})
	eventually(t, "LOCK_SH after flock(1) exited", func() error {
		return syscall.Flock(int(f2.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	})
	// flock(1) holding the lock in another process, waited for.
	start := time.Now()
	holder := exec.Command(flockBin, "-x", p, "sleep", "1")
	syscall.Flock(int(f2.Fd()), syscall.LOCK_UN)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if out, err := exec.Command(flockBin, "-x", onSecond(t, p), "true").CombinedOutput(); err != nil {
		t.Fatalf("a waiting flock(1): %v %s", err, out)
	}
	holder.Wait()
	if time.Since(start) < 900*time.Millisecond {
		t.Fatal("the waiting flock(1) did not wait for the holder")
	}
}

// TestSQLiteTwoMounts: sqlite3 writers on both mounts at once, as on two
// hosts: with the cluster's locks no write is lost and the database stays
// whole.
func TestSQLiteTwoMounts(t *testing.T) {
	sqlite := needProgram(t, "sqlite3", "sqlite3")
	db := filepath.Join(dir(t), "two.db")
	if out, err := exec.Command(sqlite, db, "PRAGMA journal_mode=DELETE; CREATE TABLE t (who TEXT, n INTEGER);").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	const per = 40
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for i, path := range []string{db, onSecond(t, db), db, onSecond(t, db)} {
		wg.Add(1)
		go func(i int, path string) {
			defer wg.Done()
			var sql strings.Builder
			sql.WriteString(".log stderr\n.timeout 60000\n")
			for n := range per {
				fmt.Fprintf(&sql, "BEGIN IMMEDIATE; INSERT INTO t VALUES ('w%d', %d); COMMIT;\n", i, n)
			}
			cmd := exec.Command(sqlite, path)
			cmd.Stdin = strings.NewReader(sql.String())
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Sprintf("writer %d: %v %s", i, err, out)
			}
		}(i, path)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, path := range []string{db, onSecond(t, db)} {
		out, err := exec.Command(sqlite, path, "PRAGMA integrity_check; SELECT count(*) FROM t; SELECT count(DISTINCT who||'/'||n) FROM t;").CombinedOutput()
		if err != nil {
			t.Fatalf("%v %s", err, out)
		}
		lines := strings.Fields(string(out))
		if len(lines) != 3 || lines[0] != "ok" || lines[1] != strconv.Itoa(4*per) || lines[2] != strconv.Itoa(4*per) {
			t.Fatalf("%s: integrity, rows, distinct rows: %q, want ok %d %d", path, lines, 4*per, 4*per)
		}
	}
}

// eventually retries check for up to 10 s (what the kernel sends after a
// call returns, such as the release of a closed file).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
