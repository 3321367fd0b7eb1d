package ha

import (
	"io"

	"github.com/hashicorp/raft"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// StateMachine is what a Node needs of the replicated state machine; *fsm.FSM is metad's. Raft calls
// the raft.BatchingFSM methods (Apply, ApplyBatch, Snapshot, Restore) on its apply goroutine, one
// at a time; the node calls the others from any goroutine, concurrently with those, so they must
// be safe for that. Apply and ApplyBatch return an *fsm.EntryResult for each entry (the proposer
// hands its results to the callers).
type StateMachine interface {
	raft.BatchingFSM
	// Applied returns the index and term of the last entry applied or snapshot restored.
	Applied() (index, term uint64)
	// Members returns the recorded member addresses by name: a copy, the caller's to keep.
	Members() map[string]fsm.Member
	// Member returns the record of member name: Members without the copy (a proposal's feature
	// level check reads it for each member).
	Member(name string) (fsm.Member, bool)
	// Carried returns what a snapshot restore keeps of the current state (RestoreSnapshot installs
	// a state at its epoch, with its member records limited to the Raft configuration, a session
	// counter no lower and its auth state at a revision no lower). The caller runs a barrier first
	// so that every restore committed so far is in it.
	Carried() snapshot.Carried
	// Objects returns how many objects the current state holds (Status).
	Objects() int64
	// VerifySnapshot reads a whole snapshot file from r and verifies it as Restore would, changing
	// nothing, and returns the file's header. The error of a damaged file wraps the snapshot
	// package's error that names the damage (snapshot.Damaged reports true for it).
	// It may keep what it built for a Restore of the same file, until ForgetVerified.
	VerifySnapshot(r io.Reader) (*metadv1.SnapshotHeader, error)
	// ForgetVerified drops what the last VerifySnapshot kept, if a Restore has not taken it.
	ForgetVerified()
	// ResetSoftState starts leader soft state afresh at now (unix ns): RestoreSnapshot calls it on
	// the leader once the restored state is installed.
	ResetSoftState(now int64)
}

// MemberRecord is one member's replicated record: its addresses and its binary's feature level
// (RecordMember, StateMachine.Members).
type MemberRecord = fsm.Member
