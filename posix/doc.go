// Package posix holds the POSIX front ends, both on core/client: fusefs, the
// FUSE mount (go-fuse); native, the async zero-copy ring API beside it; and
// conformance, POSIX checks run through real system calls on a live mount.
package posix
