package service

import (
	"sync/atomic"
	"time"

	"metad/store"
)

// Leadership is the node's one leadership hook: give its Changed to the Raft node
// (ha.Config.OnLeadership), which calls it on its leadership goroutine whenever this node gains
// leadership (before the term's start barrier, so before it decides anything from its state) or
// loses it. Changed starts the leader's soft state afresh and then tells the Service, once New has
// attached one: the service resets client liveness and runs the hooks registered with
// OnLeadership (the adapter's health status) and kicks its evictor. It is safe for concurrent use.
type Leadership struct {
	state func() *store.Store
	now   func() time.Time
	svc   atomic.Pointer[Service]
}

// NewLeadership returns the hook over the state machine's current store (read at each call: a
// snapshot restore swaps it) and a clock (nil: time.Now).
func NewLeadership(state func() *store.Store, now func() time.Time) *Leadership {
	if now == nil {
		now = time.Now
	}
	return &Leadership{state: state, now: now}
}

// Changed is the hook. On gaining leadership the store's leader soft state starts conservatively:
// every object counts as leased for one lease ttl, so no lease an earlier leader granted is broken,
// and no unlink mark survives (store.ResetSoftState). It returns promptly and waits for nothing of
// the node.
func (l *Leadership) Changed(leading bool, term uint64) {
	if leading {
		l.state().ResetSoftState(l.now().UnixNano())
	}
	if s := l.svc.Load(); s != nil {
		s.leadershipChanged(leading, term)
	}
}
