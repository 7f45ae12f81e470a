// Package metad is the stateless metadata service: inodes, directory entries,
// layouts, write sessions, file length and garbage collection, every operation
// one transaction on core/kv. Built by the metadata issue.
package metad
