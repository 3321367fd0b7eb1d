package evict

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the evictor, all declared here and registered on the registry given to New (never in
// init). Names: metad_evict_*. Labels are the eviction kind and fixed reasons, never object keys.
// Every update happens after the round's locks are released ("metrics off-lock").
type metrics struct {
	attempts     *prometheus.CounterVec   // units revalidated, marked and proposed
	successes    *prometheus.CounterVec   // units the state machine evicted
	keys         *prometheus.CounterVec   // objects evicted (their tier replicas dropped)
	bytes        *prometheus.CounterVec   // extent bytes freed
	census       *prometheus.HistogramVec // census and selection time of one round
	skipped      *prometheus.CounterVec   // candidates passed over, by reason
	rounds       *prometheus.CounterVec   // rounds by kind and how they ended
	reaped       prometheus.Counter       // writes revoked by the reaper
	expiredTasks prometheus.Counter       // scheduled tasks the reaper ended FAILED
	marksKept    prometheus.Counter       // marks left after a proposal of unknown outcome
	flagsDropped prometheus.Counter       // failed placements' calls for a round dropped: memory freed since
	offloads     prometheus.Counter       // objects whose offload a round queued first (offload on evict)
	trimmed      prometheus.Counter       // objects awaiting offload whose redundant MEMORY replicas a round evicted
}

func newMetrics() *metrics {
	return &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_evict_attempts_total",
			Help: "Eviction units (a singleton or a whole group) revalidated, marked and proposed, by kind.",
		}, []string{"kind"}),
		successes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_evict_successes_total",
			Help: "Eviction units the replicated Evict command evicted, by kind.",
		}, []string{"kind"}),
		keys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_evict_keys_total",
			Help: "Objects whose replicas of the tier were evicted, by kind.",
		}, []string{"kind"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_evict_bytes_total",
			Help: "Bytes of segment extents freed by eviction, by kind.",
		}, []string{"kind"}),
		census: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "metad_evict_census_duration_seconds",
			Help:    "Time to take an eviction census and select its candidates (no lock held), by kind.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"kind"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_evict_candidates_skipped_total",
			Help: "Objects passed over by the eviction census or revalidation, by reason.",
		}, []string{"reason"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_evict_rounds_total",
			Help: "Eviction rounds by kind and outcome (done, no_slot, not_leader, failed).",
		}, []string{"kind", "outcome"}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_evict_reaped_writes_total",
			Help: "Writes PROCESSING longer than put_release_timeout that the reaper revoked.",
		}),
		expiredTasks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_evict_reaped_tasks_total",
			Help: "Scheduled tasks PROCESSING longer than put_release_timeout since their fetch that the reaper ended FAILED.",
		}),
		marksKept: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_evict_marks_kept_total",
			Help: "Unlink marks left in place because an Evict proposal's outcome was unknown (cleared by the next term).",
		}),
		flagsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_evict_flags_dropped_total",
			Help: "Memory rounds a failed placement asked for and none ran, because memory was freed since the failure.",
		}),
		offloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_evict_offloads_queued_total",
			Help: "Objects a memory round kept in memory and queued the offload of first (offload on evict; counted once per round while they wait).",
		}),
		trimmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_evict_redundant_trimmed_total",
			Help: "Objects awaiting offload whose MEMORY replicas but the one their offload copies from a memory round evicted (offload on evict).",
		}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.attempts, m.successes, m.keys, m.bytes, m.census, m.skipped, m.rounds, m.reaped, m.expiredTasks, m.marksKept, m.flagsDropped, m.offloads, m.trimmed} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// addSkips adds a round's skip counts (gathered without touching a metric per object).
func (m *metrics) addSkips(s *skips) {
	for r, n := range s {
		if n > 0 {
			m.skipped.WithLabelValues(skipReason(r).String()).Add(float64(n))
		}
	}
}
