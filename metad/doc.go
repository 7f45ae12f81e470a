// Package metad is the stateless metadata service: the namespace (metad/ns)
// served over core/rpc. Every operation is one transaction on the shared KV
// store, so any number of metad can run and any can be restarted.
package metad
