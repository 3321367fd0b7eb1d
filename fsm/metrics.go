package fsm

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"metad/store"
)

// Metrics of the state machine, all declared here and registered on an injected registry (never
// in init). Names: metad_fsm_*. They count what this node applied, so every node that applied the
// same log counts the same; a snapshot restore does not reset them (they belong to the FSM, not to
// the store it swaps).

// metrics is safe for concurrent use: the apply goroutine adds, a scrape reads.
type metrics struct {
	shortPlacements atomic.Uint64 // successful puts placed with fewer replicas than asked
}

// countShort counts a put that succeeded with fewer replicas than it asked for (SEMANTICS section
// 3: a put succeeds with at least one replica of each tier asked).
func (m *metrics) countShort(cfg store.ReplicaConfig, reps []store.Replica) {
	if len(reps) > 0 && len(reps) < cfg.Memory+cfg.NOF {
		m.shortPlacements.Add(1)
	}
}

// ShortPlacements returns how many puts this node applied that were placed with fewer replicas
// than asked (PutStart, an UpsertStart that placed anew, each item of BatchPutStart).
func (f *FSM) ShortPlacements() uint64 { return f.m.shortPlacements.Load() }

// RegisterMetrics registers the state machine's metrics on reg.
func (f *FSM) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "metad_fsm_short_placements_total",
		Help: "Puts this node applied that were placed with fewer replicas than asked (a put succeeds with at least one replica of each tier asked; PutStart, UpsertStart that placed anew, each BatchPutStart item). Every node applies the same puts and counts the same.",
	}, func() float64 { return float64(f.ShortPlacements()) }))
}
