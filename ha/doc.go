// Package ha turns the state machine into a replicated service: one Node per metad process, over
// hashicorp/raft with its log and stable store in the data dir (raft-wal in <data-dir>/wal, or
// raft-boltdb in <data-dir>/raft.db for a data dir that has it: logstore.go), a file snapshot
// store (<data-dir>/snapshots) and the TCP transport (mutual TLS when Config.PeerTLS is set). The
// node takes the state machine as a StateMachine (metad's is *fsm.FSM) and knows nothing of the
// store behind it; the offline tools for its data dir are package datadir's. Tests run members
// over a given transport and log store instead (Config.Transport, Config.LogStores): package
// hatest runs a whole cluster so, in memory.
//
// # Writes: the proposer
//
// A write becomes a metadv1.Command and goes through the Proposer: take a slot (at most MaxInflight
// commands in flight), queue, and wait. One loop goroutine coalesces every queued command (up to the
// batch limit) into one log entry, an Envelope stamped with the leader's wall-clock time and a random
// seed — the only clock and randomness in the write path, read here and never during apply — and
// hands it to Raft. While an entry commits, new commands queue and form the next, so under load one
// commit round (the leader's and a follower's fsyncs) carries everything that arrived during the
// previous one; a lone command still goes out at once, since nothing waits for a batch to fill.
//
// How many entries are in flight follows the machine (MaxEntriesOut 0, the default; pipelineRule).
// A commit round has two stages that can overlap, the leader's log write and the followers' (Raft
// sends a follower one AppendEntries at a time, peerMaxInFlight), so at most two entries are in
// flight, and no more than GOMAXPROCS. The first goes out whenever a command waits; the second only
// when the commands queued behind the first already number what one round brings (the arrival rate
// times the commit latency, both measured by the proposer as moving averages with RFC 6298's gain
// of 1/8) and the machine had at least one whole CPU idle over the last sample (about eight rounds,
// read from /proc/stat; none where it cannot be read). The CPU condition is there because clients
// waiting for their answers split among the entries in flight, each carrying about 1/(k+1) of them
// with k in flight: a second entry adds fsyncs and processor time per command, which pays only when
// a processor would otherwise idle. On a machine whose CPUs are all busy one entry stays in flight.
// The batch limit (MaxBatch 0) is the slots shared by the entries that may be in flight, so the
// slots alone bound what waits. A value above 0 fixes either: that many entries in flight whenever
// commands wait, that many commands per entry. Metrics: metad_proposer_entries_in_flight, its
// _limit, metad_proposer_batch_limit, metad_proposer_open_threshold_commands and the
// metad_proposer_commands_per_entry histogram.
//
// Eviction reserves a slot (TryReserve) before it takes any metadata lock and gives up the round
// when none is free or the node is not the leader, so it never holds a lock while waiting for the
// pipeline.
//
// # Reads: the read barrier
//
// A linearizable read on the leader waits for a barrier round: record the commit index, confirm
// leadership with one heartbeat round (VerifyLeader), wait until the FSM has applied that index.
// Reads that arrive while a round runs share the next round. A node serves such reads only after
// its term-start Raft barrier has been applied (so the state includes everything the previous
// leader committed); a read that reaches a leader before that waits for it. Stale reads skip all
// of this and may be served by any node.
//
// # Readiness
//
// LeaderReady is the point from which the leader may decide anything from its own state (the
// server's removal checks and refusals): this node leads in the term whose term-start barrier it
// has applied. Readiness is recorded as that term, so a node that loses and regains leadership is
// not ready again until the new term's barrier is applied. A caller that arrives while the node
// leads but is not ready waits, bounded by its context and the node's life; one that arrives at a
// node that does not lead, or is waiting when leadership is lost, gets *NotLeaderError. Readiness
// does not confirm leadership; ReadBarrier does.
//
// # Leadership
//
// On gaining leadership the node calls its one leadership hook (Config.OnLeadership) with the term
// it now leads, then runs the term-start barrier, becomes ready, and records its own client address
// in the replicated member list (SetMember) so that followers can name and reach it; on losing
// leadership it stops being ready and calls the hook again. The hook is where the caller starts
// what belongs to a leader's term: metad gives it service.Leadership.Changed, which resets the
// store's leader soft state there (every object counts as leased for one lease ttl, no unlink mark
// survives), so the reset comes before the barrier and before anything is decided from the state in
// the term. After an online snapshot
// restore the node itself resets it (StateMachine.ResetSoftState).
//
// Members that do not lead record their addresses through the leader: package server's loop calls
// the leader's RecordMember RPC while SelfRecorded is false, and the leader's RecordMember proposes
// SetMember for a name that is in Raft's configuration (MEMBER_NOT_FOUND otherwise). So every member's
// client address is known soon after it starts, whichever node leads.
//
// # Peer transport
//
// Under PeerTLS every peer connection is mutual TLS and both ends' certificates must name members.
// Raft believes the sender an RPC names, so each accepted connection sits behind a gate
// (gateConn): it reads one RPC frame ahead with the transport's codec, checks that the header's
// sender is the member the peer's certificate names, and releases exactly that frame's bytes to
// the transport; a mismatch closes the connection before Raft sees the RPC, and is logged and
// counted (metad_peer_rpcs_refused_total).
//
// # Failures
//
// Raft failures come back as this package's errors: *NotLeaderError (with the leader's name and
// client address when known), ErrUnknown (leadership lost after the entry was sent: it may yet
// commit), ErrTimeout, ErrShutdown. A command's deterministic rejection is never an error here; it
// is an fsm.Result value. Membership requests that break the member rules or name a member that is
// not in the configuration are refused before Raft sees them, with *InvalidMemberError and
// *MemberNotFoundError. Shutdown transfers leadership first when this node leads, so a planned stop
// costs clients a short pause rather than an election timeout.
//
// NoEntry tells the failures that certainly left no entry (ErrNotLeader, ErrShutdown, ErrTimeout)
// from those that may yet commit. ProposeMarked (marked.go) builds the removal protocol on it: a
// command removing objects the leader marked (the service's removals, eviction's Evict) is waited
// for to its outcome, and the marks are cleared once that is known and kept while it is not. It
// sits here, below both the service and the evictor, because it is about a proposal's outcome and
// nothing of the store: the caller passes the proposal and how to clear its marks.
package ha
