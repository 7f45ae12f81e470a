// Package access holds access keys: the credentials S3 clients sign with and
// admins sign in to the console with, and what each key may do. A key is one
// record for the whole cluster, kept by metad (package metad/keys) and
// reached through core/client, so the gateway and the console agree on every
// key without either opening a store.
//
// A key grants read or read-write per bucket ("*" for every bucket, which
// also allows creating buckets); a root key may do everything, including
// administration. Objects a key writes are owned by its UID/GID.
package access
