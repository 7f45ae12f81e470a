// Package chain measures chunk storage in one run: a single chunk
// engine as the baseline, then a chain of three storaged on loopback (writes
// through CRAQ, reads spread over the replicas), and 4 KiB random reads batched
// 32 per RPC against one per RPC. `flyfs bench storage` prints it.
package chain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/bench"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
	"github.com/flyfs/flyfs/storaged"
	"github.com/flyfs/flyfs/storaged/engine"
)

// Config shapes a run.
type Config struct {
	Dir         string        // scratch directory; a temporary one when empty
	Duration    time.Duration // per measurement; default 3 s
	Concurrency int           // callers; default 8
	NoSync      bool          // skip fsyncs everywhere (same setting on both sides)
}

// Report holds the figures, in MB/s or operations/s.
type Report struct {
	EngineWriteMBps, EngineReadMBps float64
	ChainWriteMBps, ChainReadMBps   float64
	Unbatched4KiB, Batched4KiB      float64 // reads/s
}

const chunkSize = 1 << 20

// Run measures and prints.
func Run(ctx context.Context, cfg Config, w io.Writer) (Report, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "flyfs-bench-storage-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var rep Report
	data := make([]byte, chunkSize)
	for i := range data {
		data[i] = byte(i * 7)
	}

	// Baseline: one engine, the same chunks, the same sync setting.
	eng, err := engine.Open(filepath.Join(dir, "single"), engine.Options{Sync: !cfg.NoSync})
	if err != nil {
		return rep, err
	}
	var next atomic.Uint64
	n, el, err := drive(ctx, cfg, func(r *rand.Rand) error {
		i := next.Add(1)
		_, err := eng.Apply(engine.Key{Chain: 1, Chunk: layout.MakeChunkID(1, i)},
			engine.Update{Data: data, ChunkSize: chunkSize, UpdateVer: 1, CommitVer: 1, ChainVer: 1})
		return err
	})
	if err != nil {
		eng.Close()
		return rep, err
	}
	rep.EngineWriteMBps = mbps(n, chunkSize, el)
	written := next.Load()
	n, el, err = drive(ctx, cfg, func(r *rand.Rand) error {
		h, err := eng.Get(engine.Key{Chain: 1, Chunk: layout.MakeChunkID(1, 1+r.Uint64N(written))})
		if err != nil {
			return err
		}
		defer h.Release()
		buf := make([]byte, chunkSize)
		_, err = h.ReadAt(buf, 0)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	})
	eng.Close()
	if err != nil {
		return rep, err
	}
	rep.EngineReadMBps = mbps(n, chunkSize, el)

	// A chain of three storaged on loopback.
	cl, stop, err := startChain(filepath.Join(dir, "chain"), cfg.NoSync)
	if err != nil {
		return rep, err
	}
	defer stop()
	next.Store(0)
	n, el, err = drive(ctx, cfg, func(r *rand.Rand) error {
		_, err := cl.Write(ctx, 1, layout.MakeChunkID(2, next.Add(1)), 0, data, chunkSize)
		return err
	})
	if err != nil {
		return rep, err
	}
	rep.ChainWriteMBps = mbps(n, chunkSize, el)
	written = next.Load()
	n, el, err = drive(ctx, cfg, func(r *rand.Rand) error {
		b, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(2, 1+r.Uint64N(written)), Length: chunkSize}, false)
		if err == nil && len(b) != chunkSize {
			err = fmt.Errorf("read %d bytes", len(b))
		}
		rpc.ReleasePayload(b)
		return err
	})
	if err != nil {
		return rep, err
	}
	rep.ChainReadMBps = mbps(n, chunkSize, el)

	random := func(r *rand.Rand) client.ReadIO {
		return client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(2, 1+r.Uint64N(written)), Offset: uint32(r.IntN(chunkSize/4096)) * 4096, Length: 4096}
	}
	n, el, err = drive(ctx, cfg, func(r *rand.Rand) error {
		_, err := cl.Read(ctx, random(r), false)
		return err
	})
	if err != nil {
		return rep, err
	}
	rep.Unbatched4KiB = float64(n) / el.Seconds()
	n, el, err = drive(ctx, cfg, func(r *rand.Rand) error {
		ios := make([]client.ReadIO, 32)
		for i := range ios {
			ios[i] = random(r)
		}
		for _, res := range cl.BatchRead(ctx, ios, false) {
			if res.Err != nil {
				return res.Err
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Batched4KiB = float64(n*32) / el.Seconds()

	sync := "fsync on"
	if cfg.NoSync {
		sync = "fsync off"
	}
	fmt.Fprintf(w, "flyfs bench storage: 1 MiB chunks, %d callers, %s, %v per row\n", cfg.Concurrency, sync, cfg.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tthis\tbaseline\tratio\ttarget\t")
	fmt.Fprintf(tw, "chain of 3 writes MB/s (vs one engine)\t%.0f\t%.0f\t%.2f\t>= 0.28\t\n", rep.ChainWriteMBps, rep.EngineWriteMBps, rep.ChainWriteMBps/rep.EngineWriteMBps)
	fmt.Fprintf(tw, "chain of 3 reads MB/s, spread (vs one engine)\t%.0f\t%.0f\t%.2f\t>= 1.00\t\n", rep.ChainReadMBps, rep.EngineReadMBps, rep.ChainReadMBps/rep.EngineReadMBps)
	fmt.Fprintf(tw, "4 KiB random reads/s, 32 per RPC (vs 1 per RPC)\t%.0f\t%.0f\t%.2f\t\t\n", rep.Batched4KiB, rep.Unbatched4KiB, rep.Batched4KiB/rep.Unbatched4KiB)
	tw.Flush()
	return rep, nil
}

func mbps(n int64, size int, el time.Duration) float64 {
	return float64(n) * float64(size) / 1e6 / el.Seconds()
}

// drive runs op from cfg.Concurrency goroutines for cfg.Duration, each with
// its own random source.
func drive(ctx context.Context, cfg Config, op func(*rand.Rand) error) (int64, time.Duration, error) {
	rngs := make([]*rand.Rand, cfg.Concurrency)
	for g := range rngs {
		rngs[g] = rand.New(rand.NewPCG(uint64(g), 99))
	}
	return bench.Drive(ctx, cfg.Duration, cfg.Concurrency, func(ctx context.Context, g int, _ int64) error { return op(rngs[g]) })
}

// startChain runs three storaged, each holding a replica of chain 1.
func startChain(dir string, noSync bool) (*client.ChunkIO, func(), error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	info := &routing.Info{Version: 1, Nodes: map[routing.NodeID]routing.Node{}, Chains: map[routing.ChainID]*routing.Chain{}}
	chain := &routing.Chain{ID: 1, Version: 1}
	var listeners []net.Listener
	for i := 1; i <= 3; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		listeners = append(listeners, l)
		info.Nodes[routing.NodeID(i)] = routing.Node{ID: routing.NodeID(i), Addr: l.Addr().String()}
		chain.Targets = append(chain.Targets, routing.Target{ID: routing.TargetID(i), Node: routing.NodeID(i), Public: routing.Serving, Local: routing.UpToDate})
	}
	info.Chains[1] = chain
	src := routing.NewStatic(info)
	var servers []*storaged.Server
	stop := func() {
		for _, s := range servers {
			s.Close()
		}
	}
	for i, l := range listeners {
		s, err := storaged.New(storaged.Config{Node: routing.NodeID(i + 1), Disks: []string{filepath.Join(dir, fmt.Sprint(i+1))},
			Targets: []storaged.TargetConfig{{ID: routing.TargetID(i + 1), Chain: 1}}, Routing: src,
			RPC: rpc.Options{Logger: quiet}, NoSync: noSync, Logger: quiet})
		if err != nil {
			stop()
			return nil, nil, err
		}
		servers = append(servers, s)
		go s.Serve(l)
	}
	rc := rpc.NewClient(rpc.Options{Logger: quiet})
	return client.NewChunkIO(src, rc, 30*time.Second), func() { rc.Close(); stop() }, nil
}
