package evict

import (
	"context"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Node is what the evictor needs of a cluster member. *ha.Node, with the state machine's store,
// fits through FromHA; tests supply a fake over a single store.
type Node interface {
	// Store returns the current store (a snapshot restore may swap it; the evictor asks once per
	// round).
	Store() *store.Store
	// IsLeader reports whether this node leads; only the leader evicts.
	IsLeader() bool
	// TryReserve takes a free place in the replication pipeline without waiting; false when there
	// is none or this node is not the leader.
	TryReserve() (Slot, bool)
}

// Slot is one reserved place in the replication pipeline (ha.Slot): used once by Propose, or given
// back unused by Release.
type Slot interface {
	// Propose replicates cmd and returns its typed result; it consumes the slot.
	Propose(ctx context.Context, cmd *metadv1.Command) (store.Result, error)
	// Release gives back an unused slot.
	Release()
}

var _ Slot = (*ha.Slot)(nil)

// FromHA adapts a Raft node to Node; st returns the current store of the node's state machine
// (fsm.FSM.Store), read at each call.
func FromHA(n *ha.Node, st func() *store.Store) Node { return haNode{n, st} }

type haNode struct {
	n  *ha.Node
	st func() *store.Store
}

func (h haNode) Store() *store.Store { return h.st() }
func (h haNode) IsLeader() bool      { return h.n.IsLeader() }

func (h haNode) TryReserve() (Slot, bool) {
	s, ok := h.n.Proposer().TryReserve()
	if !ok {
		return nil, false // never a nil *ha.Slot inside a non-nil interface
	}
	return s, true
}
