package gateway

import (
	"context"
	"time"
)

// stagingMaxAge: staging files and directories older than this belong to
// requests that died (a crash mid-PUT); the sweeper removes them.
const stagingMaxAge = 24 * time.Hour

// sweepStaging removes stale staging files now and then.
func (g *Gateway) sweepStaging() {
	defer g.wg.Done()
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		g.sweepOnce(context.Background(), time.Now().Add(-stagingMaxAge))
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

func (g *Gateway) sweepOnce(ctx context.Context, before time.Time) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	after := ""
	for {
		select {
		case <-g.stop:
			return
		default:
		}
		ents, more, err := g.meta.ReadDir(ctx, g.stagingIno, after, 1000, true)
		if err != nil {
			return
		}
		for _, e := range ents {
			after = e.Name
			if e.Inode != nil && time.Unix(0, e.Inode.Mtime).Before(before) {
				g.meta.RemoveAll(ctx, g.stagingIno, e.Name)
			}
		}
		if !more || len(ents) == 0 {
			return
		}
	}
}
