package metad

import (
	"log/slog"
	"math/rand/v2"
	"sync/atomic"

	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/core/routing"
	"github.com/flyfs/flyfs/metad/ns"
)

// layoutPicker completes a new file's layout: the newest version of its chain
// table (which the file then pins), `stripe` consecutive chains starting
// round-robin among the windows that hold no chain on a full disk (see
// roomWindow), and a random shuffle seed.
type layoutPicker struct {
	routing   routing.Source
	chunkSize uint32
	stripe    uint32
	next      atomic.Uint64
	log       *slog.Logger
}

func newLayoutPicker(src routing.Source, chunkSize, stripe uint32, log *slog.Logger) *layoutPicker {
	if chunkSize == 0 {
		chunkSize = 1 << 20
	}
	if stripe == 0 {
		stripe = 16
	}
	p := &layoutPicker{routing: src, chunkSize: chunkSize, stripe: stripe, log: log}
	p.next.Store(rand.Uint64()) // metads start at different places of the table
	return p
}

// pick is ns.Options.NewFileLayout: it cannot fail, so a layout it cannot
// complete stays as inherited (and the file cannot take data until it has one).
func (p *layoutPicker) pick(inherited ns.Layout, ino uint64) ns.Layout {
	id := inherited.TableID
	if id == 0 {
		id = routing.DefaultTable
	}
	info := p.routing.Current()
	chains, ver, ok := info.LatestTable(id)
	if !ok || len(chains) == 0 {
		p.log.Warn("no chain table to lay a new file out over", "table", id, "inode", ino)
		return inherited
	}
	chunk, stripe := inherited.ChunkSize, inherited.Stripe
	if chunk == 0 {
		chunk = p.chunkSize
	}
	if stripe == 0 {
		stripe = p.stripe
	}
	stripe = min(stripe, uint32(len(chains)))
	first, stripe := roomWindow(chains, fullChainsOf(info), stripe, p.next.Add(uint64(stripe)))
	t := layout.ChainTable{ID: id, Version: ver, Chains: chains}
	l := layout.NewLayout(t, chunk, stripe, uint64(first), rand.Uint64())
	if err := l.Check(t); err != nil {
		p.log.Warn("cannot lay a new file out", "inode", ino, "err", err)
		return inherited
	}
	return l
}
