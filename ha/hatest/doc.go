// Package hatest runs a metad Raft cluster inside a test's process, without sockets or a log on
// disk: N ha.Node members over raft's InmemTransport (ha.Config.Transport) and in-memory log and
// stable stores (ha.Config.LogStores, ha.InmemLogStores), each over a real fsm.FSM, with its
// snapshots in a t.TempDir() data dir. It is for the tests of ha, service, evict and any other
// package whose subject is what the cluster does (replication, failover, membership, snapshots,
// readiness, what a leader decides); a test about processes, TLS, the TCP transport or the log on
// disk runs real ones instead (ha's peer-TLS and log-store tests, test/e2e, test/chaos).
//
// The members behave as processes would: Stop is a crash (ha.Node.Kill, the connections dropped
// first), Shutdown a planned stop (a leader hands over first), Restart starts a stopped member
// again over its log, term, vote and snapshots with a new state machine, Partition cuts a member
// off from the others both ways and Heal reconnects it, Add starts a member outside the
// configuration for the leader's AddMember. The transport offers no AppendEntries pipeline, as ha's
// TCP one does not, and the Raft timeouts are short (HeartbeatTimeout and the rest) yet hold on a
// loaded two-core machine under the race detector. Every wait polls a condition with a deadline
// (WaitTimeout) and never sleeps to synchronise; every member is stopped when the test ends.
//
// A test:
//
//	c := hatest.New(t, 3, hatest.Options{})
//	c.Propose(mountCmd) // on the ready leader, again on the next one if leadership moves
//	old := c.WaitLeader()
//	c.Stop(old.Name) // a crash
//	nl := c.WaitLeader()
//	... nl.Node(), nl.Store() ...
//	c.Restart(old.Name)
//	c.WaitConverged() // every running member applied the same index and holds the same state
//
// Options shapes the members: the state machine each starts over (Options.FSM, a store config of
// the test's own), a change to each member's ha.Config (Options.Config: timeouts, snapshot
// thresholds, the leadership hook, a client address), and the call that starts each node
// (Options.Start: a logger, or ha's apply gate in ha's own tests).
//
// Packages that check goroutines with goleak ignore, as ha's TestMain does, the proposer goroutine
// that hashicorp/raft leaves waiting on an entry in flight when a node stops
// (metad/ha.(*Proposer).send.func1).
package hatest
