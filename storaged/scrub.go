package storaged

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/flyfs/flyfs/core/layout"
	"github.com/flyfs/flyfs/storaged/engine"
	"golang.org/x/time/rate"
)

// The scrub finds corrupt chunks nobody reads: it walks every chunk of this
// node's targets, slowly (ScrubBytesPerSec), verifies each one's content
// against its CRCs and schedules a repair of those that fail. Off unless
// Config.ScrubInterval is set.

const (
	defaultScrubBytesPerSec = 16 << 20
	scrubBurst              = 4 << 20
	scrubPage               = 1024
)

func (s *Server) scrub(ctx context.Context) {
	bps := s.cfg.ScrubBytesPerSec
	if bps <= 0 {
		bps = defaultScrubBytesPerSec
	}
	lim := rate.NewLimiter(rate.Limit(bps), scrubBurst)
	for {
		start := time.Now()
		chunks, bytes, corrupt := s.scrubPass(ctx, lim)
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelDebug
		if corrupt > 0 {
			level = slog.LevelWarn
		}
		s.log.Log(ctx, level, "scrub pass done", "chunks", chunks, "bytes", bytes, "corrupt", corrupt, "took", time.Since(start).Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(0, s.cfg.ScrubInterval-time.Since(start))):
		}
	}
}

// scrubPass verifies every chunk of every target once.
func (s *Server) scrubPass(ctx context.Context, lim *rate.Limiter) (chunks, bytes, corrupt int64) {
	for _, t := range s.allTargets() {
		var from layout.ChunkID
		for {
			page, more, err := t.eng.List(uint32(t.chain), from, layout.ChunkID{}, scrubPage, false)
			if err != nil {
				if !errors.Is(err, engine.ErrClosed) {
					s.log.Warn("scrub: list chunks", "chain", t.chain, "err", err)
				}
				break
			}
			for _, e := range page {
				for left := int(e.Meta.Len); left > 0; left -= scrubBurst {
					if lim.WaitN(ctx, min(left, scrubBurst)) != nil {
						return
					}
				}
				bad, n := s.scrubChunk(t, e.Chunk)
				chunks++
				bytes += n
				if bad {
					corrupt++
				}
			}
			if !more || len(page) == 0 {
				break
			}
			from = page[len(page)-1].Chunk.Next()
		}
	}
	return
}

// scrubChunk verifies one chunk's current version and schedules its repair
// if it fails.
func (s *Server) scrubChunk(t *target, id layout.ChunkID) (bad bool, n int64) {
	h, err := t.eng.Get(t.key(id))
	if err != nil {
		return false, 0 // removed since listed (or a corrupt record, reported at open)
	}
	n = int64(h.Meta().Len)
	err = h.Verify()
	h.Release()
	if errors.Is(err, engine.ErrChecksum) {
		s.noteCorrupt(t, id, err)
		return true, n
	}
	return false, n
}
