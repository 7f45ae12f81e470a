package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// Writers update their own keys (appends in place, COW overwrites, replaces,
// truncates) while readers Get/ReadAt every key. Each (key, UpdateVer) has
// exactly one content, recorded by its writer before the Apply: a reader
// must see exactly the content of the version its handle reports.
func TestConcurrentReadersWriters(t *testing.T) {
	e := openT(t, t.TempDir(), testOptions())
	const (
		writers       = 4
		keysPerWriter = 4
		readers       = 4
		cs            = 256 << 10
	)
	ops := 150
	if testing.Short() {
		ops = 40
	}
	type vkey struct {
		k   Key
		ver uint32
	}
	var contents sync.Map // vkey -> []byte
	var keys []Key
	for w := range writers {
		for i := range keysPerWriter {
			keys = append(keys, tkey(uint32(w), uint64(i), 0))
		}
	}
	var done atomic.Bool
	var reads, mismatches atomic.Int64
	errc := make(chan error, writers+readers)
	var wg, rwg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			models := make([]model, keysPerWriter)
			for i := range ops {
				j := r.IntN(keysPerWriter)
				k := keys[w*keysPerWriter+j]
				u := randomUpdate(r, &models[j], cs, uint32(i+1))
				if u == nil {
					u = &Update{Replace: true, Data: pattern(r.Uint64(), r.IntN(cs)), ChunkSize: cs, UpdateVer: uint32(i + 1), CommitVer: uint32(i + 1)}
				}
				next := models[j]
				next.apply(*u)
				contents.Store(vkey{k, u.UpdateVer}, next.data)
				if _, err := e.Apply(k, *u); err != nil {
					errc <- err
					return
				}
				models[j] = next
			}
		}()
	}
	for rd := range readers {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 7))
			for !done.Load() {
				k := keys[r.IntN(len(keys))]
				h, err := e.Get(k)
				if err != nil {
					continue // not created yet
				}
				m := h.Meta()
				var got []byte
				if r.IntN(2) == 0 {
					got, err = readHandle(h)
				} else if m.Len > 0 { // a random range
					off := r.IntN(int(m.Len))
					got = make([]byte, min(int(m.Len)-off, r.IntN(100<<10)+1))
					_, err = h.ReadAt(got, int64(off))
					if err == nil {
						want, _ := contents.Load(vkey{k, m.UpdateVer})
						if !bytes.Equal(got, want.([]byte)[off:off+len(got)]) {
							mismatches.Add(1)
						}
						got = nil
					}
				}
				h.Release()
				if err != nil {
					errc <- fmt.Errorf("read %v v%d: %w", k, m.UpdateVer, err)
					return
				}
				if got != nil {
					want, _ := contents.Load(vkey{k, m.UpdateVer})
					if !bytes.Equal(got, want.([]byte)) || ContentChecksum(got) != m.Checksum {
						mismatches.Add(1)
					}
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rwg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if n := mismatches.Load(); n > 0 {
		t.Fatalf("%d reads saw content not matching their version", n)
	}
	if reads.Load() == 0 {
		t.Fatal("no reads happened")
	}
	rep, err := e.Verify(t.Context())
	if err != nil || !rep.OK() {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
	t.Logf("%d reads", reads.Load())
}
