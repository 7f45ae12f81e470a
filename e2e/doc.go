// Package e2e holds end-to-end tests over real flyfs processes and real
// clients, and (in e2e/harness) the test wrappers around the in-process
// cluster; e2e/multihost is the fault suite over network namespaces.
package e2e
