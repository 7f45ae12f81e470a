package client

// IOStats counts what the data path did.
type IOStats struct {
	Window       WindowStats
	Hedges       uint64 // hedge requests sent to a second replica
	HedgeWins    uint64 // reads the hedge answered first
	Retries      uint64 // request attempts repeated after a retryable error
	Relayed      uint64 // updates sent through a replica because the head did not answer
	Unanswered   uint64 // write attempts ended early: the head answered neither them nor a probe
	NotCommitted uint64 // read results refused because the chunk was mid-update
	BatchRPCs    uint64 // batch-read RPCs carrying more than one IO
	BatchedIOs   uint64 // IOs those RPCs carried
}

// Stats returns the counters.
func (c *ChunkIO) Stats() IOStats {
	h := c.hedge.Load()
	return IOStats{Window: c.Window().Stats(), Hedges: h.hedges.Load(), HedgeWins: h.wins.Load(),
		Retries: c.retries.Load(), Relayed: c.relayed.Load(), Unanswered: c.unanswered.Load(), NotCommitted: c.notCommitted.Load(),
		BatchRPCs: c.batchRPCs.Load(), BatchedIOs: c.batchedIOs.Load()}
}

// IOStats returns the data path's counters.
func (fs *FS) IOStats() IOStats { return fs.chunks.Stats() }
