package engine

// Stats is a snapshot of an engine's state.
type Stats struct {
	Chunks         int64 // chunks stored
	InlineChunks   int64 // of them, chunks whose content is inline (inline.go)
	UsedBytes      int64 // content bytes (sum of Len)
	AllocatedBytes int64 // preallocated data file bytes (all blocks, used or free)
	Classes        [NumClasses]ClassStats
	ChecksumErrors int64 // reads (or update reads) that found corrupt or missing data
	CorruptRecords int64 // metadata records found corrupt at Open
	ReadOnly       bool  // a read or write of the disk failed (ErrIO): writes are refused until a restart
	ReadOnlyReason string
	Full           bool // the disk ran out of space: writes fail fast until space returns
	FullReason     string
	Unsynced       bool // relaxed updates wait for a sync (Engine.Sync, or the sync window)
	StagedUnsynced bool // staged content sits in a data file unsynced until Engine.Sync
}

// Stats returns current counters. Cheap enough for periodic reporting.
func (e *Engine) Stats() Stats {
	e.checkRoom()
	s := Stats{
		Chunks:         e.chunks.Load(),
		InlineChunks:   e.inlineChunks.Load(),
		UsedBytes:      e.usedBytes.Load(),
		ChecksumErrors: e.checksumErrors.Load(),
		CorruptRecords: e.corruptRecords.Load(),
		ReadOnly:       e.ro.Load(),
		Unsynced:       e.wal.Pending(),
		StagedUnsynced: e.stagedPending(),
	}
	if s.ReadOnly {
		s.ReadOnlyReason = e.readOnlyReason()
	}
	s.Full, s.FullReason = e.full.state()
	s.Classes, s.AllocatedBytes = e.alloc.stats()
	return s
}
