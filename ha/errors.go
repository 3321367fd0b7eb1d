package ha

import (
	"errors"
	"fmt"
)

// Raft-level failures: the command may or may not have been applied (ErrUnknown) or was certainly
// not (ErrNotLeader, ErrShutdown, ErrTimeout: Raft did not take the entry within the apply timeout,
// ErrNoSlot). Deterministic rejections are never errors
// here: they come back as store.Result values.
var (
	ErrNotLeader = errors.New("not the leader")
	ErrShutdown  = errors.New("node is shutting down")
	ErrTimeout   = errors.New("timed out waiting for the cluster (no quorum?)")
	ErrUnknown   = errors.New("outcome unknown: leadership was lost after the command was sent")
	ErrNoSlot    = errors.New("proposal pipeline is full")
)

// NotLeaderError is ErrNotLeader with the leader this node knows of (empty when none is known).
type NotLeaderError struct {
	LeaderName string // Raft server name
	LeaderAddr string // client (gRPC) address
}

func (e *NotLeaderError) Error() string {
	if e.LeaderName == "" {
		return "not the leader; no leader is known"
	}
	return fmt.Sprintf("not the leader; the leader is %s at %s", e.LeaderName, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }
