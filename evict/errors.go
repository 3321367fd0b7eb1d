package evict

import "errors"

// Errors of a round or of EvictTenant. A round that stops with one of them holds nothing: no slot,
// no lock and no mark.
var (
	// ErrNotLeader: this node is not the leader; only the leader evicts.
	ErrNotLeader = errors.New("evict: not the leader")
	// ErrNoSlot: the leader's replication pipeline had no free slot; the round was skipped and runs
	// again later.
	ErrNoSlot = errors.New("evict: no free proposer slot")
	// ErrRejected: the state machine rejected an Evict or RevokeExpired command as a whole (it is
	// malformed, which is a bug of this package).
	ErrRejected = errors.New("evict: command rejected")
)
