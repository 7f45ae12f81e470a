// Package md5lanes computes MD5 (crypto/md5's sums) for many messages at
// once, one message in each 32-bit lane of a vector register, for the
// ETags of concurrent uploads.
//
// One message's MD5 cannot go faster than its chain of dependent steps, so
// a SIMD kernel gains only across messages: block16 (AVX-512) advances 16
// of them by a block in about the time one takes in general registers, a
// seventh of crypto/md5's CPU per byte with 16 uploads under way. A Write
// of at least minLaneWrite bytes hands its whole blocks to the Server,
// whose goroutine (running only while there are writes) fills its lanes
// from the writes waiting, runs the kernel over the blocks the shortest of
// them has left and hands back each write that is done; the rest of a
// message, its head, tail and padding, is hashed in place. A message
// hashed alone goes through crypto/md5 where its run is long (stdmd5.go),
// whose assembly outruns general registers.
//
// The kernels are generated (gen_lanes.go) and keep BP as the frame
// pointer: the execution tracer and profilers walk stacks by it, and
// assembly that clobbers it (as minio's md5-simd does) crashes the process
// under a trace.
//
// Invariants:
//   - A lane's state is the state of its job's message after the blocks
//     of the job before its current position; idle lanes hash zeros, whose
//     state nobody reads.
//   - A job is handed back (done closed) exactly once, after its last
//     block, with its state written back; the server never keeps a
//     reference to it after that.
package md5lanes
