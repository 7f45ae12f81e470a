package conformance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sqlite runs the sqlite3 shell on db with the statements of sql on its
// standard input (stopping at the first error) and returns what it printed;
// an error, or anything on its standard error, fails the test.
func sqlite(t *testing.T, bin, db, sql string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "-batch", "-bail", db)
	cmd.Stdin = strings.NewReader(sql)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no ~/.sqliterc
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("sqlite3 %s: %v\n%s%s", db, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestSQLite: the sqlite3 shell makes a database on the mount, fills a
// table in one transaction (rows spilling onto overflow pages, so the
// file grows by many pages), queries it, and after it closes, a new shell
// finds the same rows and PRAGMA integrity_check says ok; so after updates,
// deletes, a rolled-back transaction and a VACUUM that rewrites the file.
// Once with the rollback journal (SQLite's default) and once with the
// write-ahead log, whose index is a shared memory map of the -shm file.
func TestSQLite(t *testing.T) {
	d := dir(t)
	t.Cleanup(func() { os.RemoveAll(d) })
	bin := needProgram(t, "sqlite3", "sqlite3")
	const rows = 1000
	var sum int
	for i := 1; i <= rows; i++ {
		sum += i * 7
	}
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) {
			db := filepath.Join(d, mode+".db")
			var fill strings.Builder
			fmt.Fprintf(&fill, "PRAGMA journal_mode=%s;\n", mode)
			fill.WriteString("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, s TEXT NOT NULL);\n")
			fill.WriteString("CREATE INDEX t_n ON t (n);\n")
			fill.WriteString("BEGIN;\n")
			for i := 1; i <= rows; i++ {
				// Every 50th row is longer than a page: overflow pages.
				pad := 20
				if i%50 == 0 {
					pad = 6000
				}
				fmt.Fprintf(&fill, "INSERT INTO t (id, n, s) VALUES (%d, %d, '%s');\n", i, i*7, strings.Repeat(string(rune('a'+i%26)), pad))
			}
			fill.WriteString("COMMIT;\n")
			fill.WriteString("SELECT count(*), sum(n) FROM t;\n")
			want := fmt.Sprintf("%d|%d\n", rows, sum)
			if got := sqlite(t, bin, db, fill.String()); got != mode+"\n"+want {
				t.Errorf("filling the table printed %q, want %q", got, mode+"\n"+want)
			}

			// The database reopened on the mount, and a copy of what the
			// cluster holds (read through the client, past the page
			// cache) on the local disk, are whole and hold the rows.
			check := func(what, wantRows string) {
				t.Helper()
				const query = "PRAGMA integrity_check;\nSELECT count(*), sum(n) FROM t;\nPRAGMA journal_mode;\n"
				want := "ok\n" + wantRows + mode + "\n"
				if got := sqlite(t, bin, db, query); got != want {
					t.Errorf("%s: the reopened database printed %q, want %q", what, got, want)
				}
				local := filepath.Join(t.TempDir(), "copy.db")
				if err := os.WriteFile(local, inCluster(t, db), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := sqlite(t, bin, local, query); got != want {
					t.Errorf("%s: the cluster's copy printed %q, want %q", what, got, want)
				}
			}
			check("after the first shell closed", want)

			// Changes in transactions, one of them rolled back, then a
			// VACUUM that writes the database anew and shrinks it.
			change := "BEGIN;\nUPDATE t SET n = n + 1 WHERE id <= 100;\nDELETE FROM t WHERE id > 900;\nCOMMIT;\n" +
				"BEGIN;\nDELETE FROM t;\nROLLBACK;\n" +
				"VACUUM;\n"
			sqlite(t, bin, db, change)
			sum2 := 0
			for i := 1; i <= 900; i++ {
				sum2 += i * 7
			}
			sum2 += 100
			check("after updates, deletes, a rollback and a vacuum", fmt.Sprintf("%d|%d\n", 900, sum2))
			if got := sqlite(t, bin, db, "SELECT length(s) FROM t WHERE id = 850;\n"); got != "6000\n" {
				t.Errorf("row 850's text is %q long, want 6000", got)
			}
			// The shell closed the database cleanly: no journal is left
			// behind (WAL mode checkpoints and removes the log on the
			// last close).
			for _, suffix := range []string{"-journal", "-wal", "-shm"} {
				if _, err := os.Lstat(db + suffix); !os.IsNotExist(err) {
					t.Errorf("%s%s is still there after the last close: %v", filepath.Base(db), suffix, err)
				}
			}
		})
	}
}

// TestSQLiteConcurrentWriters: sqlite3 shells writing one database on the
// mount at once, each committing its rows one transaction at a time and
// counting its own after each, lose nothing and leave it whole. SQLite
// serialises them with fcntl record locks on the database (and, in WAL
// mode, on the -shm file, which it maps shared): on one mount the kernel
// keeps those locks, which is what this checks; locks that processes on two
// mounts see are not here.
func TestSQLiteConcurrentWriters(t *testing.T) {
	d := dir(t)
	t.Cleanup(func() { os.RemoveAll(d) })
	bin := needProgram(t, "sqlite3", "sqlite3")
	home := t.TempDir()
	const writers, each = 3, 60
	for _, mode := range []string{"delete", "wal"} {
		t.Run(mode, func(t *testing.T) {
			db := filepath.Join(d, mode+".db")
			sqlite(t, bin, db, fmt.Sprintf("PRAGMA journal_mode=%s;\nCREATE TABLE t (w INTEGER, i INTEGER, s TEXT);\n", mode))
			var wg sync.WaitGroup
			outs := make([]string, writers)
			errs := make([]error, writers)
			for w := range writers {
				var sql strings.Builder
				sql.WriteString(".timeout 120000\n") // wait for the others' locks
				for i := range each {
					fmt.Fprintf(&sql, "BEGIN IMMEDIATE;\nINSERT INTO t VALUES (%d, %d, '%s');\nCOMMIT;\nSELECT count(*) FROM t WHERE w = %d;\n",
						w, i, strings.Repeat("x", 500+i*67), w)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(bin, "-batch", "-bail", db)
					cmd.Stdin = strings.NewReader(sql.String())
					cmd.Env = append(os.Environ(), "HOME="+home)
					out, err := cmd.CombinedOutput()
					outs[w], errs[w] = string(out), err
				}()
			}
			wg.Wait()
			for w := range writers {
				var want strings.Builder
				for i := range each {
					fmt.Fprintf(&want, "%d\n", i+1)
				}
				if errs[w] != nil || outs[w] != want.String() {
					t.Errorf("writer %d: %v, printed:\n%s", w, errs[w], outs[w])
				}
			}
			want := fmt.Sprintf("ok\n%d|%d\n", writers*each, writers)
			if got := sqlite(t, bin, db, "PRAGMA integrity_check;\nSELECT count(*), count(DISTINCT w) FROM t;\n"); got != want {
				t.Errorf("after the writers: %q, want %q", got, want)
			}
		})
	}
}
