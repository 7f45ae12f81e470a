// Package e2e holds end-to-end tests over real flyfs processes and real
// clients. Built up by the issues that add services, and by the fault suite.
package e2e
