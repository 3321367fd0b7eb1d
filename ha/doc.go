// Package ha turns the state machine into a replicated service: one Node per metad process, over
// hashicorp/raft with raft-boltdb (log and stable store in <data-dir>/raft.db), a file snapshot
// store (<data-dir>/snapshots) and the TCP transport (mutual TLS when Config.PeerTLS is set). The
// node takes the state machine as a StateMachine (metad's is *fsm.FSM) and knows nothing of the
// store behind it; the offline tools for its data dir are package datadir's.
//
// # Writes: the proposer
//
// A write becomes a metadv1.Command and goes through the Proposer: take a slot (at most MaxInflight
// commands in flight), queue, and wait. One loop goroutine coalesces every queued command (up to
// MaxBatch) into one log entry, an Envelope stamped with the leader's wall-clock time and a random
// seed — the only clock and randomness in the write path, read here and never during apply — and
// hands it to Raft, keeping at most MaxEntriesOut entries in flight (default one). While that
// commits, new commands queue and form the next entry, so under load one commit round (the
// leader's and a follower's fsyncs) carries everything that arrived during the previous one; a
// lone command still goes out at once, since nothing waits for a batch to fill. More entries in
// flight cost more fsyncs for the same commands, and measured slower on this machine class
// (`make bench-cluster` with MaxEntriesOut changed, 64 clients: about 5.5k commands/s with one entry in flight, 3.5k with
// two or four).
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
package ha
