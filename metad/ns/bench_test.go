package ns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/durability"
	"github.com/flyfs/flyfs/core/kv"
	"github.com/flyfs/flyfs/core/kv/pebblekv"
)

const benchWorkers = 16

func benchNS(b *testing.B, noSync bool) (*Namespace, *kv.DB) {
	b.Helper()
	db, err := pebblekv.Open(b.TempDir(), pebblekv.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	n, err := New(db, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return n, db
}

// parallel runs b.N calls of fn split over benchWorkers goroutines.
func parallel(b *testing.B, fn func(worker, i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := fn(w, i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
}

// BenchmarkCreate: 16 concurrent creators in one directory vs each in its own
// directory, on Pebble (fsync'd commits, and without fsync). The two should be
// close: creates do not write the parent inode.
func BenchmarkCreate(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, oneDir := range []bool{true, false} {
			name := fmt.Sprintf("sync=%v/dirs=16", sync)
			if oneDir {
				name = fmt.Sprintf("sync=%v/dirs=1", sync)
			}
			b.Run(name, func(b *testing.B) {
				n, _ := benchNS(b, !sync)
				dirs := make([]uint64, benchWorkers)
				for i := range dirs {
					d, err := n.Mkdir(ctx, MkdirRequest{Parent: RootID, Name: fmt.Sprintf("d%d", i), Mode: 0o755})
					if err != nil {
						b.Fatal(err)
					}
					dirs[i] = d.ID
				}
				r0, o0 := n.Retries()
				parallel(b, func(w, i int) error {
					dir := dirs[0]
					if !oneDir {
						dir = dirs[w]
					}
					_, err := n.Create(ctx, CreateRequest{Parent: dir, Name: fmt.Sprintf("f%08d", i), Mode: 0o644, Exclusive: true})
					return err
				})
				r1, o1 := n.Retries()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
				b.ReportMetric(float64(r1-r0)/float64(max(o1-o0, 1)), "retries/op")
			})
		}
	}
}

// BenchmarkStat: 16 concurrent Stat calls on 1000 files, on 100
// directories (their times and link counts are kept off the inode: one more
// range read), and path lookups of depth 3.
func BenchmarkStat(b *testing.B) {
	n, _ := benchNS(b, true)
	d, err := n.MkdirAll(ctx, MkdirAllRequest{Path: "/x/y", Mode: 0o755})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]uint64, 1000)
	for i := range ids {
		r, err := n.Create(ctx, CreateRequest{Parent: d.ID, Name: fmt.Sprintf("f%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = r.Inode.ID
	}
	dirs := make([]uint64, 100)
	for i := range dirs {
		in, err := n.MkdirAll(ctx, MkdirAllRequest{Path: fmt.Sprintf("/dirs/d%d/sub", i), Mode: 0o755})
		if err != nil {
			b.Fatal(err)
		}
		dirs[i] = in.Parent
	}
	b.Run("dir", func(b *testing.B) {
		parallel(b, func(_, i int) error {
			_, err := n.Stat(ctx, dirs[rand.IntN(len(dirs))])
			return err
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "stats/s")
	})
	// The directory the 1000 files were created in: each create wrote its
	// time key again, and those versions sit in the memtable.
	b.Run("busy-dir", func(b *testing.B) {
		parallel(b, func(_, i int) error {
			_, err := n.Stat(ctx, d.ID)
			return err
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "stats/s")
	})
	b.Run("inode", func(b *testing.B) {
		parallel(b, func(_, i int) error {
			_, err := n.Stat(ctx, ids[rand.IntN(len(ids))])
			return err
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "stats/s")
	})
	b.Run("path", func(b *testing.B) {
		parallel(b, func(_, i int) error {
			_, err := n.Resolve(ctx, fmt.Sprintf("/x/y/f%d", rand.IntN(len(ids))), true)
			return err
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resolves/s")
	})
}

// BenchmarkSerialFileOps: the metadata calls of one mount process making
// small files one at a time (relaxed, in-process commits on Pebble): a
// lookup of a free name, create with a write session, close with the data
// inline, rename, unlink. Each op's cost is its own sub-benchmark.
func BenchmarkSerialFileOps(b *testing.B) {
	rctx := durability.InProcess(durability.Relaxed(context.Background()))
	setup := func(b *testing.B) (*Namespace, uint64) {
		db, err := pebblekv.Open(b.TempDir(), pebblekv.Options{SyncWindow: 5 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		n, err := New(db, Options{InlineMax: 4096})
		if err != nil {
			b.Fatal(err)
		}
		d, err := n.Mkdir(rctx, MkdirRequest{Parent: RootID, Name: "d", Mode: 0o755})
		if err != nil {
			b.Fatal(err)
		}
		return n, d.ID
	}
	data := make([]byte, 4096)
	create := func(n *Namespace, dir uint64, name string) error {
		r, err := n.Create(rctx, CreateRequest{Parent: dir, Name: name, Mode: 0o644, Truncate: true, Write: true, Client: "c1"})
		if err != nil {
			return err
		}
		_, err = n.Close(rctx, *r.Session, &LengthHint{Length: 4096, Wrote: true, Inline: data})
		return err
	}
	b.Run("lookup-miss", func(b *testing.B) {
		n, dir := setup(b)
		for i := range 20000 { // a store with tables, not only a memtable
			if err := create(n, dir, fmt.Sprintf("g%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		for i := 0; b.Loop(); i++ {
			if _, err := n.Lookup(rctx, dir, fmt.Sprintf("f%d", i)); !errors.Is(err, ErrNotExist) {
				b.Fatal(err)
			}
		}
	})
	b.Run("create-close", func(b *testing.B) {
		n, dir := setup(b)
		for i := 0; b.Loop(); i++ {
			if err := create(n, dir, fmt.Sprintf("f%d", i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, op := range []string{"rename", "unlink"} {
		b.Run(op, func(b *testing.B) {
			n, dir := setup(b)
			for i := range b.N {
				if err := create(n, dir, fmt.Sprintf("f%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				var err error
				if op == "rename" {
					_, err = n.RenameChange(rctx, RenameRequest{SrcParent: dir, SrcName: fmt.Sprintf("f%d", i), DstParent: dir, DstName: fmt.Sprintf("g%d", i)})
				} else {
					_, err = n.UnlinkChange(rctx, RemoveRequest{Parent: dir, Name: fmt.Sprintf("f%d", i)})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
