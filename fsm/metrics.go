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
	shortPlacements   atomic.Uint64 // successful puts placed with fewer replicas than asked
	sessionsOpened    atomic.Uint64
	sessionsExpired   atomic.Uint64 // dropped as expired, or as the least recently used of a full table
	sessionDuplicates atomic.Uint64 // session commands answered with a kept result
}

// countShort counts a put that succeeded with fewer replicas than it asked for (SEMANTICS section
// 3: a put succeeds with at least one replica of each tier asked).
func (m *metrics) countShort(cfg store.ReplicaConfig, reps []store.Replica) {
	if n := countAsked(reps); n > 0 && n < cfg.Memory+cfg.NOF+cfg.DFS {
		m.shortPlacements.Add(1)
	}
}

// countAsked counts the replicas of the tiers a put asks for by count (alloc.Tier.Placeable): not
// the DISK one a shared root adds by itself.
func countAsked(reps []store.Replica) int {
	n := 0
	for i := range reps {
		if reps[i].Tier.Placeable() {
			n++
		}
	}
	return n
}

// ShortPlacements returns how many puts this node applied that were placed with fewer replicas
// than asked (PutStart, an UpsertStart that placed anew, each item of BatchPutStart).
func (f *FSM) ShortPlacements() uint64 { return f.m.shortPlacements.Load() }

// RegisterMetrics registers the state machine's metrics on reg.
func (f *FSM) RegisterMetrics(reg prometheus.Registerer) error {
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	for _, c := range []prometheus.Collector{
		counter("metad_fsm_short_placements_total", "Puts this node applied that were placed with fewer replicas than asked (a put succeeds with at least one replica of each tier asked; PutStart, UpsertStart that placed anew, each BatchPutStart item). Every node applies the same puts and counts the same.", &f.m.shortPlacements),
		counter("metad_fsm_sessions_opened_total", "Client sessions opened (OpenSession applied).", &f.m.sessionsOpened),
		counter("metad_fsm_sessions_expired_total", "Client sessions dropped: unused for their ttl, or the least recently used of a full table.", &f.m.sessionsExpired),
		counter("metad_fsm_session_duplicates_total", "Session commands applied as duplicates: answered with the result the session kept, nothing done.", &f.m.sessionDuplicates),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "metad_fsm_sessions", Help: "Open client sessions."},
			func() float64 { n, _ := f.Sessions(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "metad_fsm_session_results", Help: "Results the open sessions keep for retries."},
			func() float64 { _, n := f.Sessions(); return float64(n) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
