package evict

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// hashicorp/raft's network transport (the benchmark's TCP cluster) and its pooled
		// connections wind down asynchronously after Shutdown returns; they hold nothing of the test.
		goleak.IgnoreTopFunction("github.com/hashicorp/raft.(*NetworkTransport).listen"),
		// hashicorp/raft never answers an Apply future whose entry was queued for the FSM when
		// Raft shut down (hashicorp/raft#498), so the proposer's goroutine waiting on an entry in
		// flight at Shutdown stays blocked; the node's callers were answered ErrShutdown.
		goleak.IgnoreAnyFunction("metad/ha.(*Proposer).send.func1"),
		// A node that takes office just as it is shut down (Shutdown hands leadership over, so the
		// benchmark's cluster stops elect a last leader) may never have its term-start barrier
		// answered: hashicorp/raft drops a barrier queued when its leader loop ends, and the
		// goroutine ha.waitFuture left waiting on it stays (see waitFuture).
		goleak.IgnoreAnyFunction("metad/ha.waitFuture.func1"),
	)
}
