package ha

import (
	"sync"
	"time"
)

// leaderLease lets the leader decide from its own soft state, with no log entry and no round trip,
// while no other node can lead: the arena reservations of a PutStart (service/reserve.go), and
// linearizable reads without a heartbeat round (readbarrier.go).
//
// Why a lease holds: a read-barrier round that starts at s and confirms leadership (VerifyLeader)
// means a quorum heard from this leader after s. A voter that has heard from a leader refuses to
// vote for another candidate until its own heartbeat timeout passes without contact (hashicorp/raft
// rejects a vote request while it knows a leader, unless the request is a leadership transfer),
// so no other leader can be elected before s + HeartbeatTimeout on that voter's clock. The lease
// is half of it, s + HeartbeatTimeout/2 on this node's clock, which leaves the other half for clock
// rate differences and scheduling. A leadership transfer this node starts lets the target win at
// once, so the lease ends before the transfer starts and none is taken while it runs.
//
// Concurrency contract: mu guards every field.
type leaderLease struct {
	mu           sync.Mutex
	term         uint64    // the term the last confirmation was in (0: none)
	start        time.Time // when that confirmation round started
	dur          time.Duration
	transferring bool      // a leadership transfer this node started is running
	fence        time.Time // the last start or end of a transfer: rounds started before it count for nothing
}

// confirmed records a successful read-barrier round of term that started at start.
func (l *leaderLease) confirmed(term uint64, start time.Time) {
	l.mu.Lock()
	if term != 0 && !start.Before(l.fence) && (term != l.term || start.After(l.start)) {
		l.term, l.start = term, start
	}
	l.mu.Unlock()
}

// holds reports whether the lease of term is held at now.
func (l *leaderLease) holds(term uint64, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return term != 0 && !l.transferring && l.term == term && now.Before(l.start.Add(l.dur))
}

// transfer ends the lease and refuses new ones while a transfer runs (on), or lets them be taken
// again (off: the transfer failed, or leadership changed). Either way the lease in force ends, and
// only a round that starts afterwards gives a new one (the target of a failed transfer may still
// have been told to campaign).
func (l *leaderLease) transfer(on bool) {
	l.mu.Lock()
	l.transferring = on
	l.term = 0
	l.fence = time.Now()
	l.mu.Unlock()
}

// leaseRead returns the commit index a linearizable read may be served at without confirming
// leadership, and true, while this node, ready, holds the lease with at least half of it left.
func (n *Node) leaseRead() (uint64, bool) {
	term := n.ready.term.Load()
	if !n.lease.holds(term, time.Now().Add(n.lease.dur/2)) {
		return 0, false
	}
	idx := n.raft.CommitIndex()
	if n.ready.term.Load() != term { // leadership changed meanwhile: the index may be another term's
		return 0, false
	}
	n.metrics.leaseReads.Inc()
	return idx, true
}

// LeaseTerm returns the term in which this node, leading and ready, holds a leader lease now (see
// leaderLease): no other node can be leader before the lease ends. 0 when it holds none; a
// ReadBarrier that succeeds renews it.
func (n *Node) LeaseTerm() uint64 {
	term := n.ready.term.Load()
	if !n.lease.holds(term, time.Now()) {
		return 0
	}
	return term
}

// LeaseDuration is how long a leader lease lasts after the start of the round that confirmed it.
func (n *Node) LeaseDuration() time.Duration { return n.lease.dur }
