// Package fsm is metad's Raft state machine: a thin translator between Raft log entries and the
// store. It implements raft.FSM and raft.BatchingFSM.
//
// # Entries and commands
//
// A log entry of type LogCommand holds one metadv1.Envelope: the leader's time, a seed, and the
// commands that the proposer coalesced into that entry. Command i of an entry draws its seed from
// store.ItemSeed(envelope seed, i). Each command is declared once (commands.go: its decode, check,
// apply handler and feature level) and dispatched by the Command oneof's field number; tests check
// that every command is declared, with a check or the reason it has none, at a released level.
// Apply returns an *EntryResult with one typed store.Result per command.
//
// # The replicated state
//
// State (state.go) is the whole replicated state: the store, the member records, the client
// sessions and the auth state, one value behind one pointer, captured once by Snapshot and swapped
// once by Restore.
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
// Check is the leader's precheck of a command it is about to propose: it runs the check declared
// with the command over the request decoded as apply decodes it (the predicate apply runs), and
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
// Package auth decides the four auth commands and holds the immutable auth state; apply swaps the
// new state into State (auth.go) and, before a command's session sees it, refuses one authorized
// against an older auth revision (auth.Stale: AUTH_REVISION_STALE).
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
