// Package fsm is metad's Raft state machine: a thin translator between Raft log entries and the
// store. It implements raft.FSM and raft.BatchingFSM.
//
// # Entries and commands
//
// A log entry of type LogCommand holds one metadv1.Envelope: the leader's time, a seed, and the
// commands that the proposer coalesced into that entry. Command i of an entry draws its seed from
// store.ItemSeed(envelope seed, i). Each command is dispatched through an explicit table, built in
// New and indexed by the Command oneof's field number; a test checks every command type has a
// handler. Apply returns an *EntryResult with one typed store.Result per command.
//
// # Three kinds of failure
//
//   - A deterministic rejection (exists, over quota, not found...) is a value: store.Result.Reason and
//     store.Result.Message. Every replica rejects the same command the same way.
//   - Raft failures (not leader, timeout, shutdown) never reach this package: the proposer sees them
//     on the future.
//   - An entry that cannot be decoded, carries a newer format, or breaks a store invariant panics
//     with the log index: a replica must stop rather than diverge silently.
//
// # Prechecks
//
// Check is the leader's precheck of a command it is about to propose: it converts the command as
// its handler does and runs the store's Check* method for it (the predicate apply runs), and
// reports a refusal only when apply would refuse the command in the state it reads (the leader
// reads it after a read barrier, so the refusal is a linearizable answer: the request takes
// effect, as a refusal, at that point). It changes nothing, and it is no part of apply: apply
// decides again.
//
// # Determinism
//
// Apply depends only on (state, entry): handlers call replicated store operations only, with the
// time and seed from the envelope; nothing here reads the clock, draws randomness, reads local
// configuration that changes an outcome, or lets map order reach the state. A rule that apply
// gained in a later release (Envelope.rules_version, metadv1.RulesVersion) is enforced only on
// entries written under it, so an older entry replays exactly as it applied when it was written.
//
// # The auth state
//
// auth.go holds the API keys (the SHA-256 of each secret) and role bindings, changed by the four
// auth commands and swapped in whole (AuthState is immutable), and the auth revision they bump.
// runCommand refuses a command authorized against an older revision (AUTH_REVISION_STALE) before
// its session runs it. CheckAuth is Check for the auth commands.
//
// # Metrics
//
// metrics.go declares what apply counts (metad_fsm_*: puts placed with fewer replicas than asked),
// registered by RegisterMetrics on the registry the daemon injects. Counting reads only the
// command and its result, so it never changes an outcome.
//
// # Snapshots
//
// Snapshot runs on the apply goroutine and only captures pointers to the objects' immutable states
// (store.Capture). Persist sorts and streams them through package snapshot on Raft's snapshot
// goroutine while apply continues. Restore reads a whole snapshot into a new store, verifying the
// checksum and the store invariants, and swaps it in only if everything holds; on any error the FSM
// is unchanged.
package fsm
