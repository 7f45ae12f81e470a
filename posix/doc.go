// Package posix is the FUSE mount (go-fuse) and the native async zero-copy API,
// both on core/client. Built by the POSIX issue.
package posix
