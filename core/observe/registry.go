package observe

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry holding the Go runtime and process
// collectors (go_*, process_*).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Role returns reg with every metric registered through it labelled
// role=<role>; nil for a nil reg (no metrics).
func Role(reg prometheus.Registerer, role string) prometheus.Registerer {
	return With(reg, prometheus.Labels{"role": role})
}

// With returns reg adding labels to every metric registered through it; nil
// for a nil reg.
func With(reg prometheus.Registerer, labels prometheus.Labels) prometheus.Registerer {
	if reg == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(labels, reg)
}

// Register registers c on reg, or returns the equal collector registered
// there already (a second server or client of one process sharing the
// family). A collector of a conflicting shape stays unregistered: the metric
// is not exported, and nothing fails for it.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// Collectors registers one instance's collectors on a registerer and
// unregisters them all at Close, so an instance stopped and started again in
// one process (the in-process cluster) registers afresh. Its methods do
// nothing with a nil registerer.
type Collectors struct {
	reg  prometheus.Registerer
	mu   sync.Mutex
	list []prometheus.Collector
}

// NewCollectors returns a Collectors over reg (nil: metrics off).
func NewCollectors(reg prometheus.Registerer) *Collectors { return &Collectors{reg: reg} }

// On reports whether metrics are on (a registerer was given).
func (c *Collectors) On() bool { return c != nil && c.reg != nil }

// Registerer is the registerer the collectors go to (nil: metrics off).
func (c *Collectors) Registerer() prometheus.Registerer {
	if c == nil {
		return nil
	}
	return c.reg
}

// Add registers col and returns it; an error (a duplicate: the same
// instance registered twice) leaves it unregistered but usable.
func Add[C prometheus.Collector](c *Collectors, col C) C {
	if !c.On() {
		return col
	}
	if err := c.reg.Register(col); err == nil {
		c.mu.Lock()
		c.list = append(c.list, col)
		c.mu.Unlock()
	}
	return col
}

// Close unregisters every collector Add registered.
func (c *Collectors) Close() {
	if !c.On() {
		return
	}
	c.mu.Lock()
	list := c.list
	c.list = nil
	c.mu.Unlock()
	for _, col := range list {
		c.reg.Unregister(col)
	}
}
