package multihost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flyfs/flyfs/core/api/storageapi"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/e2e/harness"
)

// nodeStats asks storage node i for its disk stats.
func (c *Cluster) nodeStats(i int) (*storageapi.StatsResp, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return storageapi.Client{RPC: c.rc}.Stats(ctx, c.StoragedAddr(i))
}

// (e) fill one storage node's disk (a 240 MiB tmpfs; the chunk engine keeps
// 64 MiB of it in reserve for its metadata store) to ENOSPC under the
// workload plus a filler writing 4 MiB files. A full disk costs writes, not
// reads: its targets keep serving while writes through them fail with
// ENOSPC; then the filler's files are removed and collected at once, and
// writes through every chain work again, with no restart.
func TestFillDiskToENOSPC(t *testing.T) {
	const full = 3 // storaged4
	runScenario(t, false, Config{TmpfsStoraged: map[int]string{full: "240m"}}, WorkloadConfig{MaxFile: 1 << 20}, func(s *Scenario) {
		ctx := context.Background()
		fs := s.C.Dial(10 * time.Second)
		if err := fs.MkdirAll(ctx, "/filler", 0o755); err != nil {
			t.Fatal(err)
		}
		var filled, failed int
		isFull := false
		data := bytes.Repeat([]byte("fill"), 1<<20)
		for i := 0; i < 200 && !isFull; i++ {
			f, err := fs.Create(ctx, fmt.Sprintf("/filler/f%03d", i), 0o644)
			if err == nil {
				_, err = f.WriteAt(data, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				failed++
				if failed == 1 {
					t.Logf("first filler write failure after %d files: %v", filled, err)
				}
				if !errors.Is(err, client.ErrNoSpace) {
					t.Errorf("a filler write failed with %v, want client.ErrNoSpace", err)
				}
			} else {
				filled++
			}
			if st, err := s.C.nodeStats(full); err == nil {
				for _, d := range st.Disks {
					if d.Full {
						isFull = true
						t.Logf("storaged%d's disk full after %d filler files: %s", full+1, filled, d.FullReason)
					}
				}
			}
		}
		if !isFull {
			t.Errorf("storaged%d's 240 MiB disk never reported itself full (%d filler files written, %d failed)", full+1, filled, failed)
		}
		s.Pause(time.Second, 3*time.Second) // the workload runs on against a full disk
		if in := s.C.Routing(); !NodeIs(in, full, routing.Serving) {
			t.Errorf("storaged%d's disk is full and its targets were taken out: reads through them stop", full+1)
		}
		if err := fs.RemoveAll(ctx, "/filler"); err != nil {
			t.Errorf("remove the filler: %v", err)
		}
		if _, err := fs.Meta().Collect(ctx, true); err != nil {
			t.Errorf("collect the filler now: %v", err)
		}
		// Writes through every chain work again: files striped over all of
		// them, each written whole.
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			f, err := fs.Create(ctx, fmt.Sprintf("/after-%d", i), 0o644)
			if err == nil {
				_, err = f.WriteAt(data, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("writes still fail 30 s after space returned: %v", err)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
}

// (f) flip bytes in one replica's chunk data file on disk, under a running
// storaged. Reads must detect it (CRC), the client must still get the right
// bytes from another replica, and the bad replica must be repaired or at
// least reported. What is missing today is reported with Scenario.Gap.
func TestFlipBytesInChunkFile(t *testing.T) {
	runScenario(t, true, Config{}, WorkloadConfig{}, func(s *Scenario) {
		ctx := context.Background()
		fs := s.C.Dial(10 * time.Second)
		data := content(s.Rng, 3<<20)
		f, err := fs.Create(ctx, "/flip", 0o644)
		if err == nil {
			_, err = f.WriteAt(data, 0)
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		in, _ := fs.Stat(ctx, "/flip")
		info := s.C.Routing()
		l := in.Layout
		list, _ := info.Table(l.TableID, l.TableVersion)
		cid, err := l.Chain(layout.ChainTable{ID: l.TableID, Version: l.TableVersion, Chains: list}, 0)
		if err != nil {
			t.Fatal(err)
		}
		chain, _ := info.Chain(cid)
		tg := chain.Targets[s.Rng.IntN(len(chain.Targets))]
		v := int(tg.Node) - 1
		file, off := harness.FindChunkBlock(t, filepath.Join(s.C.Dir, fmt.Sprintf("disk%d", v+1)), data[:64])
		h, err := os.OpenFile(file, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		flip := []byte{0}
		pos := off + 1000 + s.Rng.Int64N(60000) // inside the first 64 KiB segment
		h.ReadAt(flip, pos)
		flip[0] ^= 0xff
		h.WriteAt(flip, pos)
		h.Close()
		t.Logf("flipped a byte of chunk 0 of /flip (chain %d) on storaged%d: %s at %d", cid, v+1, filepath.Base(file), pos)

		// Detection: the bad replica itself must refuse the read.
		chunk := l.ChunkID(in.ID, 0)
		api := storageapi.Client{RPC: s.C.rc}
		resp, got, err := api.BatchRead(ctx, s.C.StoragedAddr(v), &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{
			Key: storageapi.Key{Chain: uint32(cid), ChainVer: chain.Version, Chunk: chunk}, Length: 1 << 20}}})
		switch {
		case err != nil:
			t.Errorf("read from the bad replica: %v", err)
		case resp.Results[0].Err() == nil:
			t.Errorf("CORRUPTION NOT DETECTED: storaged%d served the flipped chunk (%d bytes, equal to the original: %v)", v+1, len(got), bytes.Equal(got, data[:1<<20]))
		default:
			t.Logf("detected: storaged%d refuses the chunk: %v", v+1, resp.Results[0].Err())
		}
		// Reported: the node counts checksum errors in its stats.
		if st, err := s.C.nodeStats(v); err != nil {
			t.Errorf("stats of storaged%d: %v", v+1, err)
		} else {
			var n uint64
			for _, d := range st.Disks {
				n += d.ChecksumErrors
			}
			if n == 0 {
				s.Gap("storaged%d's stats count no checksum error", v+1)
			} else {
				t.Logf("reported: storaged%d's stats count %d checksum errors", v+1, n)
			}
		}
		// Served from another replica: the client's reads spread over the
		// replicas, so some go to the bad one; every read must still succeed.
		bad := 0
		var lastErr error
		for i := 0; i < 4*len(chain.Targets); i++ {
			got, err := readAll(ctx, fs, "/flip")
			if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
				bad++
				lastErr = err
			}
		}
		if bad > 0 {
			s.Gap("client reads of a file with one corrupt replica failed %d of %d times (last: %v): a DataLoss answer is not retried on another replica (core/client retryable())", bad, 4*len(chain.Targets), lastErr)
		} else {
			t.Logf("every client read of /flip returned the right bytes")
		}
		// Repaired: give the cluster a while, then ask the bad replica again.
		time.Sleep(5 * s.C.cfg.T)
		resp, _, err = api.BatchRead(ctx, s.C.StoragedAddr(v), &storageapi.BatchReadReq{IOs: []storageapi.ReadIO{{
			Key: storageapi.Key{Chain: uint32(cid), ChainVer: s.C.Routing().Chains[cid].Version, Chunk: chunk}, Length: 1 << 20}}})
		if err == nil {
			err = resp.Results[0].Err()
		}
		if err != nil {
			s.Gap("the corrupt replica on storaged%d is not repaired after %v (still: %v); its target stays serving: %v",
				v+1, 5*s.C.cfg.T, err, NodeIs(s.C.Routing(), v, routing.Serving))
			// Repair it by hand so the common checks judge the rest: an
			// overwrite of the whole chunk replaces it on every replica.
			w, err := fs.OpenFile(ctx, "/flip", os.O_WRONLY, 0)
			if err == nil {
				_, err = w.WriteAt(data[:1<<20], 0)
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				s.Gap("rewriting the corrupt chunk through the client failed too: %v", err)
			}
		}
	})
}

// (g) a storage node's disk fails its reads with EIO, then another's fails
// its writes, under the workload (an injection hook in the chunk engine's
// data-file I/O). Each bad replica stops serving and is taken out of its
// chains; reads of a file on a bad replica's chain are served by the
// others, every time; writes go on. Then the disks heal, the two nodes are
// restarted (a replaced or checked disk), and recovery brings their
// replicas back: the common checks find every replica identical.
func TestDiskIOErrors(t *testing.T) {
	runScenario(t, false, Config{}, WorkloadConfig{MaxFile: 1 << 20}, func(s *Scenario) {
		ctx := context.Background()
		T := s.C.cfg.T
		fs := s.C.Dial(10 * time.Second)
		data := content(s.Rng, 4<<20) // four chunks, on four chains
		f, err := fs.Create(ctx, "/eio", 0o644)
		if err == nil {
			_, err = f.WriteAt(data, 0)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		victims := s.Victims(2)
		readBack := func(when string) {
			for i := 0; i < 12; i++ {
				got, err := readAll(ctx, fs, "/eio")
				if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
					s.Gap("%s: a read of /eio returned %d bytes, %v: a bad disk's replica answered for the chain", when, len(got), err)
					return
				}
			}
		}

		r := victims[0]
		s.T.Logf("storaged%d's disk fails its reads with EIO", r+1)
		s.C.InjectDiskFaults(r, "read EIO\n")
		readBack("storaged" + fmt.Sprint(r+1) + " failing reads")
		s.C.WaitFor(10*T, fmt.Sprintf("storaged%d's targets out", r+1), func(in *routing.Info) bool { return NodeIs(in, r, routing.Offline) })
		readBack("storaged" + fmt.Sprint(r+1) + " out")

		w := victims[1]
		s.T.Logf("storaged%d's disk fails its writes with EIO", w+1)
		s.C.InjectDiskFaults(w, "write EIO\nsync EIO\n")
		s.C.WaitFor(10*T, fmt.Sprintf("storaged%d's targets out after the workload's writes met its disk", w+1), func(in *routing.Info) bool { return NodeIs(in, w, routing.Offline) })
		s.Pause(time.Second, 3*time.Second) // the workload runs on without them
		readBack("two bad disks out")

		for _, v := range victims {
			s.C.InjectDiskFaults(v, "")
			s.C.Storaged[v].Kill()
			s.C.Storaged[v].Start()
		}
		s.C.WaitHealthy(30 * T)
		readBack("after recovery")
	})
}
