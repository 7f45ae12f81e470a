// Package recovery measures recovery in one run: a chain of three
// storaged under a cluster manager is filled, its tail's disk is replaced, and
// the returning target is rebuilt while a foreground read load runs. It prints
// the rebuild rate next to the chain's plain write rate, and the read rate
// during recovery next to the one before the failure. `flyfs bench recovery`.
package recovery

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/flyfs/flyfs/cluster"
	"github.com/flyfs/flyfs/core/client"
	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/core/rpc"
)

// Config shapes a run.
type Config struct {
	Bytes      int64         // data on the chain, so on the rebuilt target; default 2 GiB
	Dir        string        // scratch directory; a temporary one when empty
	NoSync     bool          // skip fsyncs everywhere
	ReadWindow time.Duration // how long to measure reads before the failure; default 3 s
	ResyncRate int64         // recovery throttle, bytes/s; default 1 GiB/s
}

// Report holds the figures in MB/s.
type Report struct {
	WriteMBps, RecoveryMBps        float64
	ReadBeforeMBps, ReadDuringMBps float64
	RecoveryTime                   time.Duration
}

const chunkSize = 1 << 20

// Run measures and prints.
func Run(ctx context.Context, cfg Config, w io.Writer) (rep Report, err error) {
	if cfg.Bytes <= 0 {
		cfg.Bytes = 2 << 30
	}
	if cfg.ReadWindow <= 0 {
		cfg.ReadWindow = 3 * time.Second
	}
	if cfg.ResyncRate <= 0 {
		cfg.ResyncRate = 1 << 30
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "flyfs-bench-recovery-"); err != nil {
			return rep, err
		}
		defer os.RemoveAll(dir)
	}
	const T = 2 * time.Second
	c, err := cluster.Start(ctx, cluster.Config{Dir: dir, Nodes: 3, Chains: 1, Replicas: 3, HeartbeatTimeout: T,
		ScanInterval: T / 6, ForwardTimeout: 2 * T, NoSync: cfg.NoSync, ResyncBytesPerSec: cfg.ResyncRate})
	if err != nil {
		return rep, err
	}
	defer c.Close()
	cl, closeCl, err := c.ChunkClient(ctx, "client", 60*time.Second)
	if err != nil {
		return rep, err
	}
	defer closeCl()
	chunks := cfg.Bytes / chunkSize
	data := make([]byte, chunkSize)
	for i := range data {
		data[i] = byte(i * 13)
	}

	// 1. The chain's plain write rate, filling it.
	var next atomic.Int64
	start := time.Now()
	if err := parallel(8, func() error {
		for {
			i := next.Add(1)
			if i > chunks {
				return nil
			}
			if _, err := cl.Write(ctx, 1, layout.MakeChunkID(7, uint64(i)), 0, data, chunkSize); err != nil {
				return err
			}
		}
	}); err != nil {
		return rep, err
	}
	rep.WriteMBps = float64(chunks*chunkSize) / 1e6 / time.Since(start).Seconds()

	// 2. A foreground read load, measured before the failure and during recovery.
	var readBytes atomic.Int64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for g := 0; g < 4; g++ {
		readers.Add(1)
		go func(g int) {
			defer readers.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := cl.Read(ctx, client.ReadIO{Chain: 1, Chunk: layout.MakeChunkID(7, uint64(1+r.Int64N(chunks))), Length: chunkSize}, false)
				if err == nil {
					readBytes.Add(int64(len(b)))
					rpc.ReleasePayload(b)
				}
			}
		}(g)
	}
	defer func() { close(stop); readers.Wait() }()
	readBytes.Store(0)
	time.Sleep(cfg.ReadWindow)
	rep.ReadBeforeMBps = float64(readBytes.Load()) / 1e6 / cfg.ReadWindow.Seconds()

	// 3. The tail's disk is replaced: kill it, wipe it, bring it back empty.
	c.StopNode(2)
	if err := wait(ctx, c, 20*T, "the tail published offline", func(in *routing.Info) bool {
		ch := in.Chains[1]
		return ch != nil && ch.Targets[len(ch.Targets)-1].Node == 3 && ch.Targets[len(ch.Targets)-1].Public == routing.Offline
	}); err != nil {
		return rep, err
	}
	if err := c.WipeNode(2); err != nil {
		return rep, err
	}
	if err := c.StartNode(2); err != nil {
		return rep, err
	}
	if err := wait(ctx, c, 20*T, "the new target syncing", func(in *routing.Info) bool {
		for _, t := range in.Chains[1].Targets {
			if t.Node == 3 && t.Public == routing.Syncing {
				return true
			}
		}
		return false
	}); err != nil {
		return rep, err
	}
	readBytes.Store(0)
	start = time.Now()
	if err := wait(ctx, c, time.Hour, "the rebuilt target serving", func(in *routing.Info) bool {
		for _, t := range in.Chains[1].Targets {
			if t.Public != routing.Serving {
				return false
			}
		}
		return true
	}); err != nil {
		return rep, err
	}
	rep.RecoveryTime = time.Since(start)
	rep.ReadDuringMBps = float64(readBytes.Load()) / 1e6 / rep.RecoveryTime.Seconds()
	rep.RecoveryMBps = float64(chunks*chunkSize) / 1e6 / rep.RecoveryTime.Seconds()

	sync := "fsync on"
	if cfg.NoSync {
		sync = "fsync off"
	}
	fmt.Fprintf(w, "flyfs bench recovery: chain of 3, %d MiB rebuilt on an empty target, %s, recovery throttle %d MiB/s\n",
		cfg.Bytes>>20, sync, cfg.ResyncRate>>20)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measurement\tthis\tbaseline\tratio\ttarget\t")
	fmt.Fprintf(tw, "rebuild MB/s (vs the chain's write MB/s)\t%.0f\t%.0f\t%.2f\t>= 0.50\t\n", rep.RecoveryMBps, rep.WriteMBps, rep.RecoveryMBps/rep.WriteMBps)
	fmt.Fprintf(tw, "foreground reads MB/s during recovery (vs before)\t%.0f\t%.0f\t%.2f\t>= 0.50\t\n", rep.ReadDuringMBps, rep.ReadBeforeMBps, rep.ReadDuringMBps/rep.ReadBeforeMBps)
	tw.Flush()
	fmt.Fprintf(w, "recovery took %v\n", rep.RecoveryTime.Round(time.Millisecond))
	return rep, nil
}

func parallel(n int, fn func() error) error {
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() { errs <- fn() }()
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// wait polls routing until cond holds, for at most d.
func wait(ctx context.Context, c *cluster.Cluster, d time.Duration, what string, cond func(*routing.Info) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return c.WaitRouting(ctx, what, cond)
}
