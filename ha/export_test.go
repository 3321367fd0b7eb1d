package ha

import (
	"log/slog"
)

// Seams for the tests of package ha_test, which drive real nodes together with the server.

// NewNodeWithApplyGate is NewNode whose state machine calls gate on its apply goroutine before it
// applies each entry or batch of entries: a gate that blocks holds apply (and with it the node's
// term-start barrier) back.
func NewNodeWithApplyGate(cfg Config, sm StateMachine, log *slog.Logger, gate func()) (*Node, error) {
	return newNode(cfg, sm, log, gate)
}

// ReadyWaiters returns how many calls wait for this node to become ready (LeaderReady, and reads
// in ReadBarrier).
func (n *Node) ReadyWaiters() int { return n.ready.waiters() }
