package engine

import (
	"log/slog"
	"time"
)

// Options configure an Engine.
type Options struct {
	// Sync makes every Apply/Commit/Remove durable before it returns: data
	// files are fdatasync'ed before the metadata write that points at them,
	// and the metadata write is synced. Production runs with Sync on; without
	// it a crash of the machine (not of the process) may lose recent updates.
	// A relaxed update (Update.Relaxed) syncs its data file but not its
	// metadata write; Sync, or the background sync every SyncWindow, makes
	// it durable.
	Sync bool
	// SyncWindow bounds how long a relaxed update stays not durable: a
	// background sync runs this often while one waits. 0: none (only Sync).
	SyncWindow time.Duration
	// InlineMax: a chunk of at most this many bytes that has no block keeps
	// its content in the metadata store, beside its record (inline.go), so
	// writing it is one metadata write. 0: DefaultInlineMax; negative: no
	// chunk is inline. At most MaxInline.
	InlineMax int
	// Logger receives corruption and state-change reports. nil: discard.
	Logger *slog.Logger

	// GroupBlocks is how many blocks a size class grows by at a time
	// (fallocate), shared among its data files. Default 256.
	GroupBlocks int
	// MaxGroupBytes caps one growth of a class in bytes, so large classes do not
	// preallocate 256 x 64 MiB at once. Default 1 GiB.
	MaxGroupBytes int64
	// ReserveBytes is free space left on the filesystem for the metadata
	// store: growth that would eat into it fails with ErrNoSpace. Pebble
	// cannot survive running out of space, the data files can. Default
	// 64 MiB; negative: no reserve.
	ReserveBytes int64
	// MetaMemTableSize is Pebble's memtable size (its WAL is preallocated at
	// 110% of it). Default 4 MiB.
	MetaMemTableSize uint64
	// MetaCacheSize is Pebble's block cache size. Default 8 MiB.
	MetaCacheSize int64
	// EncryptionKey (32 bytes) keeps block contents as AES-256-CTR
	// ciphertext (cipher.go). Decided when the disk is created: an existing
	// disk opens only with the key it was created with, or none if none.
	EncryptionKey []byte
	// SegmentSize is the checksum granularity of a new disk: a power of two
	// from MinSegmentSize to MaxSegmentSize; 0: DefaultSegmentSize. Each
	// segment's CRC takes 4 bytes of memory; a read reads and verifies the
	// whole segments it touches. An existing disk keeps its own.
	SegmentSize int
	// Faults, when set, fails data-file I/O on demand (faults.go): fault
	// drills and tests of what a bad disk costs.
	Faults *Faults
}

// DefaultOptions are the production settings: durable updates.
func DefaultOptions() Options { return Options{Sync: true} }

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.GroupBlocks <= 0 {
		o.GroupBlocks = 256
	}
	if o.MaxGroupBytes <= 0 {
		o.MaxGroupBytes = 1 << 30
	}
	switch {
	case o.ReserveBytes == 0:
		o.ReserveBytes = 64 << 20
	case o.ReserveBytes < 0:
		o.ReserveBytes = 0
	}
	if o.MetaMemTableSize == 0 {
		o.MetaMemTableSize = 4 << 20
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.MetaCacheSize <= 0 {
		o.MetaCacheSize = 8 << 20
	}
	switch {
	case o.InlineMax == 0:
		o.InlineMax = DefaultInlineMax
	case o.InlineMax < 0:
		o.InlineMax = 0
	}
	o.InlineMax = min(o.InlineMax, MaxInline)
}
