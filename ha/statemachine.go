package ha

import (
	"io"

	"github.com/hashicorp/raft"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
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
	// StateEpoch returns the current state's epoch (RestoreSnapshot installs the next one).
	StateEpoch() uint64
	// NextSessionID returns the next client session id (RestoreSnapshot installs a state whose
	// counter is at least this, and no session of the file).
	NextSessionID() uint64
	// Auth returns the current auth state (RestoreSnapshot installs a state with these keys and
	// role bindings, at a revision no lower).
	Auth() *fsm.AuthState
	// Objects returns how many objects the current state holds (Status).
	Objects() int64
	// VerifySnapshot reads a whole snapshot file from r and verifies it as Restore would, changing
	// nothing, and returns the file's header. The error of a damaged file wraps the snapshot
	// package's error that names the damage (snapshot.Damaged reports true for it).
	VerifySnapshot(r io.Reader) (*metadv1.SnapshotHeader, error)
	// ResetSoftState starts leader soft state afresh at now (unix ns): RestoreSnapshot calls it on
	// the leader once the restored state is installed.
	ResetSoftState(now int64)
}
