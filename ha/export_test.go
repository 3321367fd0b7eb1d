package ha

import (
	"log/slog"

	"github.com/hashicorp/raft"
)

// Seams for the tests of package ha_test, which drive real nodes in a cluster of package hatest
// and together with the server.

// NewNodeWithApplyGate is NewNode whose state machine calls gate on its apply goroutine before it
// applies each entry or batch of entries: a gate that blocks holds apply (and with it the node's
// term-start barrier) back.
func NewNodeWithApplyGate(cfg Config, sm StateMachine, log *slog.Logger, gate func()) (*Node, error) {
	return newNode(cfg, sm, log, gate)
}

// ReadyWaiters returns how many calls wait for this node to become ready (LeaderReady, and reads
// in ReadBarrier).
func (n *Node) ReadyWaiters() int { return n.ready.waiters() }

// Raft returns the node's Raft, for configuration changes that the node's own methods refuse (a
// member named before the name rules, half of a removal).
func (n *Node) Raft() *raft.Raft { return n.raft }

// SetOnEntry has the proposer call f with the number of commands of each log entry it sends. Set
// it before the commands it is to count are proposed.
func (p *Proposer) SetOnEntry(f func(commands int)) { p.onEntry = f }

// SpoolPattern is the glob of an online restore's spool files in the data dir.
const SpoolPattern = spoolPattern

// The commands the cluster tests of both packages propose: a segment of TestClient, and the
// PutStart and PutEnd of an object on it.
var (
	TestClient = testClient
	MountCmd   = mountCmd
	PutCmds    = putCmds
)
