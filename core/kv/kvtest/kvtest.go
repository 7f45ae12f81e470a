// Package kvtest is the conformance suite every KV engine passes. An engine's
// test calls Run with a function that opens an empty DB with the given options.
package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/kv"
)

// Opener opens an empty DB with opts; the engine test closes it at cleanup.
type Opener func(t *testing.T, opts kv.Options) *kv.DB

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"GetSetClear", testGetSetClear},
		{"RangeOrderBoundsLimitReverse", testRange},
		{"ReadYourWritesModel", testReadYourWrites},
		{"SnapshotIsolation", testSnapshotIsolation},
		{"ReadConflict", testReadConflict},
		{"SnapshotReadsAddNoConflict", testSnapshotNoConflict},
		{"WriteSkewPrevented", testWriteSkew},
		{"PhantomInsertAbortsReader", testPhantom},
		{"ExplicitReadConflicts", testExplicitConflicts},
		{"BlindWritesDoNotConflict", testBlindWrites},
		{"ConcurrentIncrementsRetry", testConcurrentIncrements},
		{"BankTransfersSerializable", testBank},
		{"IdempotentUnderFaultInjection", testFaultInjection},
		{"LargeValuesAndBounds", testLargeValues},
		{"TenThousandKeyTransaction", testTenThousandKeys},
		{"TransactionSizeBound", testSizeBound},
		{"TransactionTimeBound", testTimeBound},
		{"RunGivesUp", testRunGivesUp},
		{"NonRetryableErrorReturnsAtOnce", testNonRetryable},
		{"Versionstamps", testVersionstamps},
		{"VersionsGrow", testVersionsGrow},
		{"UseAfterCommit", testUseAfterCommit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

var ctx = context.Background()

func b(s string) []byte { return []byte(s) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, db *kv.DB, kvs ...string) {
	t.Helper()
	must(t, db.Run(ctx, func(tx kv.Txn) error {
		for i := 0; i+1 < len(kvs); i += 2 {
			tx.Set(b(kvs[i]), b(kvs[i+1]))
		}
		return nil
	}))
}

func get(t *testing.T, db *kv.DB, key string) (string, bool) {
	t.Helper()
	var v []byte
	var found bool
	must(t, db.RunRead(ctx, func(tx kv.ReadTxn) (err error) {
		v, found, err = tx.Get(ctx, b(key))
		return err
	}))
	return string(v), found
}

func keys(kvs []kv.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, x := range kvs {
		out[i] = string(x.Key)
	}
	return out
}

func scan(t *testing.T, db *kv.DB, begin, end []byte, opts kv.RangeOptions) kv.RangeResult {
	t.Helper()
	var res kv.RangeResult
	must(t, db.RunRead(ctx, func(tx kv.ReadTxn) (err error) {
		res, err = tx.GetRange(ctx, begin, end, opts)
		return err
	}))
	return res
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

func testGetSetClear(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	put(t, db, "a", "1", "empty", "")
	if v, ok := get(t, db, "a"); !ok || v != "1" {
		t.Fatalf("a = %q,%v", v, ok)
	}
	if v, ok := get(t, db, "empty"); !ok || v != "" {
		t.Fatalf("empty value must be found: %q,%v", v, ok)
	}
	if _, ok := get(t, db, "missing"); ok {
		t.Fatal("missing key found")
	}
	must(t, db.Run(ctx, func(tx kv.Txn) error { tx.Clear(b("a")); return nil }))
	if _, ok := get(t, db, "a"); ok {
		t.Fatal("cleared key still found")
	}
	put(t, db, "a", "2")
	if v, _ := get(t, db, "a"); v != "2" {
		t.Fatalf("a = %q after re-set", v)
	}
}

func testRange(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	names := []string{"k05", "k01", "k09", "k03", "k07", "k02", "k08", "k04", "k06", "j", "l", "k\xff"}
	for _, n := range names {
		put(t, db, n, "v"+n)
	}
	cases := []struct {
		name       string
		begin, end []byte
		opts       kv.RangeOptions
		want       []string
		more       bool
	}{
		{"all in order", b("k"), b("l"), kv.RangeOptions{}, []string{"k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09", "k\xff"}, false},
		{"begin inclusive end exclusive", b("k03"), b("k06"), kv.RangeOptions{}, []string{"k03", "k04", "k05"}, false},
		{"nil end", b("k09"), nil, kv.RangeOptions{}, []string{"k09", "k\xff", "l"}, false},
		{"limit", b("k"), b("l"), kv.RangeOptions{Limit: 3}, []string{"k01", "k02", "k03"}, true},
		{"limit exact", b("k03"), b("k06"), kv.RangeOptions{Limit: 3}, []string{"k03", "k04", "k05"}, false},
		{"reverse", b("k03"), b("k06"), kv.RangeOptions{Reverse: true}, []string{"k05", "k04", "k03"}, false},
		{"reverse limit", b("k"), b("l"), kv.RangeOptions{Reverse: true, Limit: 2}, []string{"k\xff", "k09"}, true},
		{"reverse nil end", b("k09"), nil, kv.RangeOptions{Reverse: true}, []string{"l", "k\xff", "k09"}, false},
		{"empty range", b("k05"), b("k05"), kv.RangeOptions{}, nil, false},
		{"inverted range", b("k06"), b("k03"), kv.RangeOptions{}, nil, false},
		{"prefix", kv.PrefixRange(b("k0")).Begin, kv.PrefixRange(b("k0")).End, kv.RangeOptions{Limit: 100}, []string{"k01", "k02", "k03", "k04", "k05", "k06", "k07", "k08", "k09"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := scan(t, db, c.begin, c.end, c.opts)
			got := keys(res.KVs)
			if fmt.Sprint(got) != fmt.Sprint(c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Fatalf("keys = %q, want %q", got, c.want)
			}
			if res.More != c.more {
				t.Fatalf("more = %v, want %v", res.More, c.more)
			}
			for _, x := range res.KVs {
				if string(x.Value) != "v"+string(x.Key) {
					t.Fatalf("value of %q = %q", x.Key, x.Value)
				}
			}
		})
	}
	// Paging with a limit walks every key once.
	var all []string
	begin := b("k")
	for {
		res := scan(t, db, begin, b("l"), kv.RangeOptions{Limit: 4})
		all = append(all, keys(res.KVs)...)
		if !res.More {
			break
		}
		begin = kv.KeyAfter(res.KVs[len(res.KVs)-1].Key)
	}
	if len(all) != 10 {
		t.Fatalf("paging found %d keys: %q", len(all), all)
	}
}

// testReadYourWrites applies random sets, clears and clear ranges inside one
// transaction over committed data and compares every read with a model map.
func testReadYourWrites(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[string]string{}
	key := func() string { return fmt.Sprintf("m%02d", rng.IntN(40)) }
	for i := 0; i < 25; i++ {
		k := key()
		model[k] = fmt.Sprint("base", i)
		put(t, db, k, model[k])
	}
	for round := 0; round < 6; round++ {
		tx := db.Begin()
		for op := 0; op < 60; op++ {
			switch rng.IntN(5) {
			case 0, 1:
				k, v := key(), fmt.Sprint("r", round, "o", op)
				tx.Set(b(k), b(v))
				model[k] = v
			case 2:
				k := key()
				tx.Clear(b(k))
				delete(model, k)
			case 3:
				lo, hi := key(), key()
				if lo > hi {
					lo, hi = hi, lo
				}
				tx.ClearRange(b(lo), b(hi))
				for k := range model {
					if k >= lo && k < hi {
						delete(model, k)
					}
				}
			case 4:
				lo, hi := key(), key()
				if lo > hi {
					lo, hi = hi, lo
				}
				opts := kv.RangeOptions{Limit: rng.IntN(6), Reverse: rng.IntN(2) == 0}
				res, err := tx.GetRange(ctx, b(lo), b(hi), opts)
				must(t, err)
				want := modelRange(model, lo, hi, opts)
				if fmt.Sprint(keys(res.KVs)) != fmt.Sprint(want) {
					t.Fatalf("round %d op %d: range [%s,%s) %+v = %q, want %q", round, op, lo, hi, opts, keys(res.KVs), want)
				}
			}
			k := key()
			v, found, err := tx.Get(ctx, b(k))
			must(t, err)
			if mv, ok := model[k]; ok != found || mv != string(v) {
				t.Fatalf("round %d op %d: get %s = %q,%v want %q,%v", round, op, k, v, found, mv, ok)
			}
		}
		must(t, tx.Commit(ctx))
		res := scan(t, db, b("m"), b("n"), kv.RangeOptions{})
		want := modelRange(model, "m", "n", kv.RangeOptions{})
		if fmt.Sprint(keys(res.KVs)) != fmt.Sprint(want) {
			t.Fatalf("after commit %d: %q, want %q", round, keys(res.KVs), want)
		}
		for _, x := range res.KVs {
			if model[string(x.Key)] != string(x.Value) {
				t.Fatalf("after commit %d: %s = %q, want %q", round, x.Key, x.Value, model[string(x.Key)])
			}
		}
	}
}

func modelRange(model map[string]string, lo, hi string, opts kv.RangeOptions) []string {
	var out []string
	for k := range model {
		if k >= lo && k < hi {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if opts.Reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out
}

func testSnapshotIsolation(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	put(t, db, "x", "old", "y", "old")
	reader := db.BeginRead()
	defer reader.Cancel()
	v, _, err := reader.Get(ctx, b("x"))
	must(t, err)
	put(t, db, "x", "new", "y", "new", "z", "new")
	v2, _, err := reader.Get(ctx, b("y"))
	must(t, err)
	if string(v) != "old" || string(v2) != "old" {
		t.Fatalf("reader saw %q,%q; want the old version of both", v, v2)
	}
	res, err := reader.GetRange(ctx, b("x"), b("zz"), kv.RangeOptions{})
	must(t, err)
	if len(res.KVs) != 2 {
		t.Fatalf("reader saw a later insert: %q", keys(res.KVs))
	}
}

func testReadConflict(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	put(t, db, "k", "0")
	t1 := db.Begin()
	_, _, err := t1.Get(ctx, b("k"))
	must(t, err)
	put(t, db, "k", "1")
	t1.Set(b("other"), b("x"))
	wantErr(t, t1.Commit(ctx), kv.ErrConflict)
	if _, ok := get(t, db, "other"); ok {
		t.Fatal("a conflicting transaction's write became visible")
	}
	// A read of a missing key conflicts with its creation.
	t2 := db.Begin()
	_, _, err = t2.Get(ctx, b("absent"))
	must(t, err)
	put(t, db, "absent", "now")
	t2.Set(b("other"), b("x"))
	wantErr(t, t2.Commit(ctx), kv.ErrConflict)
	// And with its deletion.
	t3 := db.Begin()
	_, _, err = t3.Get(ctx, b("k"))
	must(t, err)
	must(t, db.Run(ctx, func(tx kv.Txn) error { tx.Clear(b("k")); return nil }))
	t3.Set(b("other"), b("x"))
	wantErr(t, t3.Commit(ctx), kv.ErrConflict)
}

func testSnapshotNoConflict(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	put(t, db, "k", "0", "r0", "a")
	t1 := db.Begin()
	_, _, err := t1.SnapshotGet(ctx, b("k"))
	must(t, err)
	_, err = t1.SnapshotGetRange(ctx, b("r"), b("s"), kv.RangeOptions{})
	must(t, err)
	put(t, db, "k", "1", "r1", "b")
	t1.Set(b("other"), b("x"))
	must(t, t1.Commit(ctx))
}

func testWriteSkew(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	put(t, db, "oncall/alice", "1", "oncall/bob", "1")
	// Each doctor goes off call if the other is on call; both may not.
	leave := func(me, other string) kv.Txn {
		tx := db.Begin()
		v, _, err := tx.Get(ctx, b("oncall/"+other))
		must(t, err)
		if string(v) == "1" {
			tx.Set(b("oncall/"+me), b("0"))
		}
		return tx
	}
	ta, tb := leave("alice", "bob"), leave("bob", "alice")
	errA, errB := ta.Commit(ctx), tb.Commit(ctx)
	if (errA == nil) == (errB == nil) {
		t.Fatalf("exactly one must commit: alice %v, bob %v", errA, errB)
	}
	wantErr(t, errors.Join(errA, errB), kv.ErrConflict)
}

func testPhantom(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	put(t, db, "dir/a", "1", "dir/c", "1", "dir/e", "1")
	reader := func(limit int) kv.Txn {
		tx := db.Begin()
		_, err := tx.GetRange(ctx, b("dir/"), b("dir0"), kv.RangeOptions{Limit: limit})
		must(t, err)
		tx.Set(b("count"), b("3"))
		return tx
	}
	tx := reader(0)
	put(t, db, "dir/b", "1")
	wantErr(t, tx.Commit(ctx), kv.ErrConflict)

	tx = reader(0)
	put(t, db, "dis/x", "1") // outside the range
	must(t, tx.Commit(ctx))

	tx = reader(0)
	must(t, db.Run(ctx, func(t kv.Txn) error { t.Clear(b("dir/c")); return nil }))
	wantErr(t, tx.Commit(ctx), kv.ErrConflict)

	// A limited read depends only on what it returned: [dir/, after "dir/b"].
	tx = reader(2) // returns dir/a, dir/b
	put(t, db, "dir/z", "1")
	must(t, tx.Commit(ctx))
	tx = reader(2)
	put(t, db, "dir/aa", "1")
	wantErr(t, tx.Commit(ctx), kv.ErrConflict)
}

func testExplicitConflicts(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	tx := db.Begin()
	_, _, err := tx.SnapshotGet(ctx, b("unrelated")) // fixes the read version
	must(t, err)
	tx.AddReadConflict(b("parent"))
	put(t, db, "parent", "changed again")
	tx.Set(b("child"), b("x"))
	wantErr(t, tx.Commit(ctx), kv.ErrConflict)

	tx = db.Begin()
	_, _, err = tx.SnapshotGet(ctx, b("unrelated"))
	must(t, err)
	tx.AddReadConflictRange(b("p/"), b("p0"))
	put(t, db, "p/new", "1")
	tx.Set(b("child"), b("x"))
	wantErr(t, tx.Commit(ctx), kv.ErrConflict)

	tx = db.Begin()
	_, _, err = tx.SnapshotGet(ctx, b("unrelated"))
	must(t, err)
	tx.AddReadConflictRange(b("p/"), b("p0"))
	put(t, db, "q/new", "1")
	tx.Set(b("child"), b("x"))
	must(t, tx.Commit(ctx))
}

func testBlindWrites(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	t1, t2 := db.Begin(), db.Begin()
	t1.Set(b("k"), b("1"))
	t2.Set(b("k"), b("2"))
	must(t, t1.Commit(ctx))
	must(t, t2.Commit(ctx))
	if v, _ := get(t, db, "k"); v != "2" {
		t.Fatalf("k = %q, want the last writer's 2", v)
	}
}

func increment(tx kv.Txn, key []byte) error {
	v, _, err := tx.Get(ctx, key)
	if err != nil {
		return err
	}
	n := 0
	if len(v) > 0 {
		fmt.Sscan(string(v), &n)
	}
	tx.Set(key, []byte(fmt.Sprint(n+1)))
	return nil
}

func testConcurrentIncrements(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	const workers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := db.Run(ctx, func(tx kv.Txn) error { return increment(tx, b("counter")) }); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v, _ := get(t, db, "counter"); v != fmt.Sprint(workers*each) {
		t.Fatalf("counter = %s, want %d: a lost update", v, workers*each)
	}
}

// testBank moves money between accounts from many goroutines; every read-only
// audit, at any moment, must see the same total.
func testBank(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	const accounts, start = 10, 100
	must(t, db.Run(ctx, func(tx kv.Txn) error {
		for i := 0; i < accounts; i++ {
			tx.Set([]byte(fmt.Sprintf("acct/%d", i)), []byte(fmt.Sprint(start)))
		}
		return nil
	}))
	audit := func() int {
		total := 0
		must(t, db.RunRead(ctx, func(tx kv.ReadTxn) error {
			total = 0
			res, err := tx.GetRange(ctx, b("acct/"), b("acct0"), kv.RangeOptions{})
			for _, x := range res.KVs {
				var n int
				fmt.Sscan(string(x.Value), &n)
				total += n
			}
			return err
		}))
		return total
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	bad := make(chan int, 100)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if s := audit(); s != accounts*start {
				bad <- s
			}
		}
	}()
	var movers sync.WaitGroup
	for w := 0; w < 6; w++ {
		movers.Add(1)
		go func(seed uint64) {
			defer movers.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < 30; i++ {
				from, to := rng.IntN(accounts), rng.IntN(accounts)
				err := db.Run(ctx, func(tx kv.Txn) error {
					fk, tk := []byte(fmt.Sprintf("acct/%d", from)), []byte(fmt.Sprintf("acct/%d", to))
					fv, _, err := tx.Get(ctx, fk)
					if err != nil {
						return err
					}
					tv, _, err := tx.Get(ctx, tk)
					if err != nil {
						return err
					}
					var f, tt int
					fmt.Sscan(string(fv), &f)
					fmt.Sscan(string(tv), &tt)
					if from == to || f == 0 {
						return nil
					}
					tx.Set(fk, []byte(fmt.Sprint(f-1)))
					tx.Set(tk, []byte(fmt.Sprint(tt+1)))
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(uint64(w))
	}
	movers.Wait()
	close(stop)
	wg.Wait()
	close(bad)
	for s := range bad {
		t.Fatalf("an audit saw total %d, want %d", s, accounts*start)
	}
	if s := audit(); s != accounts*start {
		t.Fatalf("final total %d, want %d", s, accounts*start)
	}
}

// testFaultInjection runs idempotent operations under injected read faults and
// commit faults, including commits that apply and then report maybe-committed:
// each operation must take effect exactly once.
func testFaultInjection(t *testing.T, open Opener) {
	db := open(t, kv.Options{Faults: &kv.Faults{ReadRate: 0.05, CommitRate: 0.3, Seed: 42}})
	const ops = 60
	for i := 0; i < ops; i++ {
		marker := []byte(fmt.Sprintf("done/%03d", i))
		err := db.Run(ctx, func(tx kv.Txn) error {
			_, done, err := tx.Get(ctx, marker) // the request id: did an earlier attempt apply?
			if err != nil || done {
				return err
			}
			tx.Set(marker, nil)
			return increment(tx, b("applied"))
		})
		must(t, err)
	}
	fc := db.FaultCounts()
	if fc.MaybeCommitted == 0 || fc.Reads == 0 || fc.Conflicts == 0 {
		t.Fatalf("faults were not all injected: %+v", fc)
	}
	var v []byte
	must(t, db.RunRead(ctx, func(tx kv.ReadTxn) (err error) { v, _, err = tx.Get(ctx, b("applied")); return err }))
	if string(v) != fmt.Sprint(ops) {
		t.Fatalf("applied = %s, want exactly %d (faults: %+v)", v, ops, fc)
	}
	t.Logf("faults injected: %+v", fc)
}

func testLargeValues(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	big := bytes.Repeat([]byte("0123456789abcdef"), 90_000/16)
	must(t, db.Run(ctx, func(tx kv.Txn) error { tx.Set(b("big"), big); return nil }))
	var got []byte
	must(t, db.RunRead(ctx, func(tx kv.ReadTxn) (err error) { got, _, err = tx.Get(ctx, b("big")); return err }))
	if !bytes.Equal(got, big) {
		t.Fatalf("large value came back with %d bytes, want %d", len(got), len(big))
	}
	opts := db.Options()
	err := db.Run(ctx, func(tx kv.Txn) error { tx.Set(b("huge"), make([]byte, opts.MaxValueBytes+1)); return nil })
	wantErr(t, err, kv.ErrValueTooLarge)
	err = db.Run(ctx, func(tx kv.Txn) error { tx.Set(make([]byte, opts.MaxKeyBytes+1), nil); return nil })
	wantErr(t, err, kv.ErrKeyTooLarge)
	if _, ok := get(t, db, "huge"); ok {
		t.Fatal("a refused transaction wrote")
	}
}

func testTenThousandKeys(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	const n = 10_000
	must(t, db.Run(ctx, func(tx kv.Txn) error {
		for i := 0; i < n; i++ {
			tx.Set([]byte(fmt.Sprintf("many/%05d", i)), bytes.Repeat([]byte{byte(i)}, 64))
		}
		return nil
	}))
	res := scan(t, db, b("many/"), b("many0"), kv.RangeOptions{})
	if len(res.KVs) != n {
		t.Fatalf("read back %d keys, want %d", len(res.KVs), n)
	}
	for i, x := range res.KVs {
		if string(x.Key) != fmt.Sprintf("many/%05d", i) || len(x.Value) != 64 || x.Value[0] != byte(i) {
			t.Fatalf("entry %d = %q", i, x.Key)
		}
	}
	// One transaction reads all of them and rewrites every one.
	must(t, db.Run(ctx, func(tx kv.Txn) error {
		res, err := tx.GetRange(ctx, b("many/"), b("many0"), kv.RangeOptions{})
		if err != nil {
			return err
		}
		for _, x := range res.KVs {
			tx.Set(x.Key, []byte("v2"))
		}
		return nil
	}))
	if v, _ := get(t, db, "many/09999"); v != "v2" {
		t.Fatalf("many/09999 = %q after the rewrite", v)
	}
	must(t, db.Run(ctx, func(tx kv.Txn) error { tx.ClearRange(b("many/"), b("many0")); return nil }))
	if res := scan(t, db, b("many/"), b("many0"), kv.RangeOptions{Limit: 1}); len(res.KVs) != 0 {
		t.Fatalf("clear range left %q", keys(res.KVs))
	}
}

func testSizeBound(t *testing.T, open Opener) {
	db := open(t, kv.Options{MaxTxnBytes: 1 << 20})
	err := db.Run(ctx, func(tx kv.Txn) error {
		for i := 0; i < 20; i++ {
			tx.Set([]byte(fmt.Sprintf("fat/%d", i)), make([]byte, 64<<10))
		}
		return nil
	})
	wantErr(t, err, kv.ErrTxnTooLarge)
	if res := scan(t, db, b("fat/"), b("fat0"), kv.RangeOptions{}); len(res.KVs) != 0 {
		t.Fatal("a too-large transaction wrote")
	}
}

func testTimeBound(t *testing.T, open Opener) {
	db := open(t, kv.Options{MaxTxnDuration: 50 * time.Millisecond, MaxAttempts: 2})
	tx := db.Begin()
	_, _, err := tx.Get(ctx, b("k"))
	must(t, err)
	time.Sleep(80 * time.Millisecond)
	tx.Set(b("k"), b("late"))
	wantErr(t, tx.Commit(ctx), kv.ErrTxnTooLong)
	if _, ok := get(t, db, "k"); ok {
		t.Fatal("a transaction past its time bound wrote")
	}
}

func testRunGivesUp(t *testing.T, open Opener) {
	db := open(t, kv.Options{MaxAttempts: 3, MaxBackoff: time.Millisecond})
	attempts := 0
	err := db.Run(ctx, func(tx kv.Txn) error {
		attempts++
		return kv.Errorf(kv.CodeConflict, "always")
	})
	wantErr(t, err, kv.ErrTooManyTries)
	wantErr(t, err, kv.ErrConflict)
	if attempts != 3 {
		t.Fatalf("ran %d attempts, want 3", attempts)
	}
}

func testNonRetryable(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	mine := errors.New("not found in my own logic")
	attempts := 0
	err := db.Run(ctx, func(tx kv.Txn) error { attempts++; return mine })
	if !errors.Is(err, mine) || attempts != 1 {
		t.Fatalf("err %v after %d attempts; want mine after 1", err, attempts)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = db.Run(cctx, func(tx kv.Txn) error { return kv.Errorf(kv.CodeConflict, "retry me") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
}

func testVersionstamps(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	var stamps [][]byte
	for i := 0; i < 3; i++ {
		tx := db.Begin()
		key := append(b("log/"), make([]byte, kv.StampLen)...)
		tx.SetVersionstampedKey(key, 4, []byte(fmt.Sprint("entry", i)))
		tx.SetVersionstampedValue(b(fmt.Sprint("latest", i)), append(b("at:"), make([]byte, kv.StampLen)...), 3)
		must(t, tx.Commit(ctx))
		if len(tx.Versionstamp()) != kv.StampLen {
			t.Fatalf("commit %d has stamp %x", i, tx.Versionstamp())
		}
		stamps = append(stamps, tx.Versionstamp())
	}
	res := scan(t, db, b("log/"), b("log0"), kv.RangeOptions{})
	if len(res.KVs) != 3 {
		t.Fatalf("stamped keys: %q", keys(res.KVs))
	}
	for i, x := range res.KVs {
		if !bytes.Equal(x.Key[4:], stamps[i]) || string(x.Value) != fmt.Sprint("entry", i) {
			t.Fatalf("stamped key %d = %x %q, want stamp %x", i, x.Key, x.Value, stamps[i])
		}
		if i > 0 && bytes.Compare(stamps[i-1], stamps[i]) >= 0 {
			t.Fatalf("stamps do not grow: %x then %x", stamps[i-1], stamps[i])
		}
		v, _ := get(t, db, fmt.Sprint("latest", i))
		if v != "at:"+string(stamps[i]) {
			t.Fatalf("stamped value %d = %x", i, v)
		}
	}
	err := db.Run(ctx, func(tx kv.Txn) error { tx.SetVersionstampedKey(b("short"), 2, nil); return nil })
	wantErr(t, err, kv.ErrInvalid)
}

func testVersionsGrow(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	var last int64
	for i := 0; i < 3; i++ {
		tx := db.Begin()
		tx.Set(b("v"), []byte(fmt.Sprint(i)))
		must(t, tx.Commit(ctx))
		v := tx.CommittedVersion()
		if v <= last {
			t.Fatalf("commit version %d after %d", v, last)
		}
		last = v
		r := db.BeginRead()
		rv, err := r.ReadVersion(ctx)
		r.Cancel()
		must(t, err)
		if rv < v {
			t.Fatalf("a later transaction reads at %d, before the commit at %d", rv, v)
		}
	}
	tx := db.Begin()
	tx.Get(ctx, b("v"))
	must(t, tx.Commit(ctx))
	if tx.CommittedVersion() != -1 {
		t.Fatalf("a commit with no writes has version %d, want -1", tx.CommittedVersion())
	}
}

func testUseAfterCommit(t *testing.T, open Opener) {
	db := open(t, kv.Options{})
	tx := db.Begin()
	tx.Set(b("k"), b("v"))
	must(t, tx.Commit(ctx))
	_, _, err := tx.Get(ctx, b("k"))
	wantErr(t, err, kv.ErrTxnDone)
	wantErr(t, tx.Commit(ctx), kv.ErrTxnDone)
}
