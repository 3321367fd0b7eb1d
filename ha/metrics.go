package ha

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the Raft node and its proposer, all declared here and registered on an injected
// registry (never in init). Names: metad_raft_* and metad_proposer_*.
type metrics struct {
	commitApply   prometheus.Histogram // entry handed to Raft -> committed and applied
	entryCommands prometheus.Histogram // commands per log entry
	leaderChanges prometheus.Counter
	readVerify    prometheus.Histogram   // read barrier: VerifyLeader (a heartbeat round through the Raft loop)
	readApply     prometheus.Histogram   // read barrier: waiting for apply to reach the recorded commit index
	leaseReads    prometheus.Counter     // read barriers served under the leader lease, without a round
	peerRefused   *prometheus.CounterVec // peer connections and RPCs the PeerTLS gate refused, by reason
}

func newMetrics() *metrics {
	m := &metrics{
		commitApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_raft_commit_apply_seconds",
			Help:    "Time from handing a log entry to Raft until it is committed and applied on the leader.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		entryCommands: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_proposer_commands_per_entry",
			Help:    "Commands coalesced into one log entry.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13),
		}),
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_raft_leadership_changes_total",
			Help: "Times this node gained or lost leadership.",
		}),
		readVerify: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_raft_read_barrier_verify_seconds",
			Help:    "Read barrier rounds: time to confirm leadership (VerifyLeader, a heartbeat round served by the Raft loop).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		readApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_raft_read_barrier_apply_wait_seconds",
			Help:    "Read barrier rounds: time waiting for the state machine to apply the commit index recorded at the round's start.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
		}),
		leaseReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_raft_lease_reads_total",
			Help: "Linearizable reads served under the leader lease at the commit index, without a heartbeat round.",
		}),
		peerRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_peer_rpcs_refused_total",
			Help: "Peer connections closed by the Raft transport's TLS gate, by reason: handshake, not_member (before any RPC), no_sender, sender_mismatch, bad_frame (an RPC that never reached Raft).",
		}, []string{"reason"}),
	}
	for _, r := range refusedReasons {
		m.peerRefused.WithLabelValues(r)
	}
	return m
}

// RegisterMetrics registers the node's metrics on reg.
func (n *Node) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{n.metrics.commitApply, n.metrics.entryCommands, n.metrics.leaderChanges,
		n.metrics.readVerify, n.metrics.readApply, n.metrics.leaseReads, n.metrics.peerRefused, &raftCollector{n: n}} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

var (
	descTerm      = prometheus.NewDesc("metad_raft_term", "Current Raft term.", nil, nil)
	descCommit    = prometheus.NewDesc("metad_raft_commit_index", "Raft commit index.", nil, nil)
	descApplied   = prometheus.NewDesc("metad_raft_applied_index", "Index of the last entry the state machine applied.", nil, nil)
	descLeader    = prometheus.NewDesc("metad_raft_is_leader", "1 if this node is the leader.", nil, nil)
	descContact   = prometheus.NewDesc("metad_raft_last_contact_seconds", "Time since this follower last heard from the leader (0 on the leader).", nil, nil)
	descSlotsUsed = prometheus.NewDesc("metad_proposer_inflight_slots", "Proposer slots in use (commands proposed, not yet applied).", nil, nil)
	descSlotsCap  = prometheus.NewDesc("metad_proposer_slots", "Proposer slots in all.", nil, nil)
	descEntries   = prometheus.NewDesc("metad_proposer_entries_in_flight", "Log entries the proposer has handed to Raft and not yet seen end.", nil, nil)
	descEntryCap  = prometheus.NewDesc("metad_proposer_entries_in_flight_limit", "Log entries the proposer may have in flight at once (derived from GOMAXPROCS unless configured).", nil, nil)
	descBatchCap  = prometheus.NewDesc("metad_proposer_batch_limit", "Commands one log entry may carry at most.", nil, nil)
	descOpenAt    = prometheus.NewDesc("metad_proposer_open_threshold_commands", "Queued commands that open a further log entry while one is in flight: measured arrival rate x commit latency (-1 until measured; only in the derived mode).", nil, nil)
)

// raftCollector reads Raft's state on scrape.
type raftCollector struct{ n *Node }

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTerm, descCommit, descApplied, descLeader, descContact, descSlotsUsed, descSlotsCap,
		descEntries, descEntryCap, descBatchCap, descOpenAt} {
		ch <- d
	}
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.n.raft
	applied, _ := c.n.sm.Applied()
	leader := 0.0
	if r.State() == raft.Leader {
		leader = 1
	}
	contact := 0.0
	if leader == 0 {
		if lc := r.LastContact(); !lc.IsZero() {
			contact = time.Since(lc).Seconds()
		}
	}
	p := c.n.proposer
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	gauge(descTerm, float64(r.CurrentTerm()))
	gauge(descCommit, float64(r.CommitIndex()))
	gauge(descApplied, float64(applied))
	gauge(descLeader, leader)
	gauge(descContact, contact)
	gauge(descSlotsUsed, float64(cap(p.slots)-len(p.slots)))
	gauge(descSlotsCap, float64(cap(p.slots)))
	gauge(descEntries, float64(p.inflight.Load()))
	gauge(descEntryCap, float64(cap(p.freed)))
	gauge(descBatchCap, float64(p.maxBatch))
	gauge(descOpenAt, float64(p.open.Load()))
}
