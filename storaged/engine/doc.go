// Package engine is the per-disk chunk engine of storaged.
//
// One Engine owns one disk directory and is shared by all storage targets on
// that disk. It stores chunks keyed by (chain id, chunk id) and records the
// versions the CRAQ layer above decides, faithfully and atomically.
//
// Layout of a disk directory:
//
//	dir/meta/           Pebble: chunk key -> record (Meta, block location, segment CRCs)
//	dir/data/<class>.<n> data files, fixed set: 11 size classes x filesPerClass files
//
// Data files are carved into physical blocks of one power-of-two size class
// (64 KiB .. 64 MiB). A chunk lives in one block of the smallest class that
// holds its length. Files grow by preallocating (fallocate) a group of blocks
// at a time. Which blocks are in use is not stored: it is rebuilt at Open from
// the records, so a block is used iff a committed record points at it (plus
// blocks still pinned in memory by open Handles).
//
// Updates are copy-on-write: the new content goes to a fresh block, is made
// durable, and only then a single Pebble write switches the record to it.
// Appends that fit the current block write past the current end in place,
// which no reader of the old length can observe. Either way a crash leaves
// each chunk with its old or its new record, and the content of the block a
// record points at always matches the record's checksums.
//
// Content is checksummed with CRC32C per segment, 4 KiB on a new disk (a
// disk's segment size is fixed when it is created; format 1 disks have
// 64 KiB); every read verifies the segments it touches. A chunk's checksum
// (Meta.Checksum) is computed over 64 KiB units whatever the segment size,
// so replicas compare it across disks.
//
// A disk created with an encryption key holds its blocks' content as
// AES-256-CTR ciphertext under a per-block IV (cipher.go); the CRCs cover
// the plain content.
package engine
