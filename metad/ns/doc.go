// Package ns is flyfs's namespace: inodes, directory entries, write sessions,
// xattrs and the GC queue, every operation ONE transaction on core/kv.
//
// # Key schema
//
// All keys start with a 4-byte tag; integers are fixed-width (see schema.go):
//
//	INOD ino(8, LE)                          -> Inode (CBOR)
//	DENT parent(8, LE) name                  -> Dentry (CBOR)
//	IDEM request(16)                         -> idempotency record
//	GCQU kind(1) shard(1) time(8, BE) ino(8) -> gcEntry
//	IALC shard(1)                            -> inode-id batch counter (8, LE)
//	SESS ino(8, LE) session(16)              -> Session
//	XATR ino(8, LE) name                     -> raw xattr value
//	INLN ino(8, LE)                          -> a small file's data (inline.go)
//	DMTI dir(8, LE)                          -> directory mtime (blind writes)
//	DMTI dir(8, LE) shard(1)                 -> subdirectory count shard (dirattr.go)
//	STAB                                     -> folded StatFS totals
//	STAD time(8, BE) nonce(8)                -> StatFS delta (blind writes)
//	LOCK ino(8, LE) class(1)                 -> []RangeLock, fcntl ('p') or flock ('f') (locks.go)
//	LKSS client                              -> lockSession: a client's lock session and its expiry
//	VBKT bucket(8, LE)                       -> a bucket's versioning state (versions.go)
//	VERS bucket(8, LE) key 0x00 ^seq(8, BE)  -> Version: a noncurrent version or delete marker
//	LAYR id(8, LE)                           -> a layer of shared chunks and its file count (layers.go)
//	SNAP top(8, LE) name                     -> SnapshotInfo: a snapshot of a tree under top (snapshot.go)
//	FRZE                                     -> freezeRecord: namespace changes wait for a snapshot (freeze.go)
//
// # Invariants
//
//   - The root directory is inode 1; its parent is itself; it has no dentry.
//   - A live directory has exactly one dentry and stored nlink 1; its Parent
//     and Name name that dentry. A directory with nlink 0 is detached
//     (RemoveAll, or a child expanded by GC) and sits in the GC queue. The
//     nlink a directory reports is 2 plus its subdirectories, counted in 16
//     shards by the subdirectory's id (DMTI dir shard): each shard is the
//     exact number of subdirectories whose id falls in it.
//   - A file, symlink or special file's nlink is the number of dentries naming
//     it. A file with nlink 0 still has its inode (open readers keep reading)
//     and is either in the GC queue, or has open write sessions (the last Close
//     queues it), or is a noncurrent version: Versions counts the version
//     records naming it, and such a file is never queued (versions.go has the
//     versioning invariants). Symlinks and special files with nlink 0 are
//     deleted at once.
//   - A file's own chunks are those of its DataID, which no other file
//     owns; each of its Layers has a LAYR record whose count is the number
//     of files listing it, on the file's layout, with a limit in (0, the
//     file's length]. A layer no file lists has no record and its chunks are
//     in the GC queue (clone.go, layers.go).
//   - An inline file (inline.go) has 0 < InlineLen <= Length and an INLN
//     key of at least InlineLen bytes, no write session, no layers and no
//     data id of its own; no other inode has an INLN key.
//   - Every inode of a snapshot is ReadOnly and only DeleteSnapshot changes
//     it; a snapshot's record names its live root directory, and a top
//     directory holding snapshots is not removed.
//   - Special files (fifos, sockets, devices) are inodes only: no layout, no
//     length, no sessions; only devices have an Rdev.
//   - A lock table belongs to an existing inode; it holds no two overlapping
//     ranges of one holder, and a lock counts only while its client's lock
//     session is live.
//   - An inode's system.posix_acl_access, when present, agrees with its
//     mode's permission bits (set together in one transaction).
//   - Every namespace change is one transaction. Path walks and lookups use
//     snapshot reads; each mutation then reads with conflict tracking exactly
//     the keys whose change must abort it: the parent inode (it must still be a
//     live directory), the target dentry (nobody else may take the name), the
//     inodes it rewrites, a directory's entry range when it must be empty, and
//     for a directory rename every ancestor of the destination.
//   - Creates never write the parent inode, so creates in one directory do not
//     conflict; the parent's mtime is a blind write to its DMTI key, and StatFS
//     counters are blind writes of delta keys folded later. Mkdir, rmdir and
//     directory moves also read-modify-write one subdirectory count shard of
//     each parent involved (never the parent inode), so they conflict only
//     with each other, and only within a shard.
//   - Every mutating request carries a RequestID reused on retry. Creates,
//     mkdir, link, symlink and rename stamp it into the dentry they create;
//     unlink, rmdir, rename and RemoveAll store their result (errors included)
//     in an IDEM record in the same transaction. So a retry after a
//     maybe-committed commit or a lost reply returns the first outcome.
package ns
