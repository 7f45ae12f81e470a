//go:build race

package gateway

// raceOn: the race detector slows the gateway several times; the heaviest
// tests scale down under it so `make test` stays within its budget.
const raceOn = true
