package datadir

import "errors"

// Failures of the data dir tools. A refused snapshot file is ha.ErrInvalidSnapshot, wrapping the
// snapshot package's error that names what is wrong with it.
var (
	ErrNotEmpty    = errors.New("data dir is not empty")
	ErrNoRaftState = errors.New("data dir holds no Raft state")
	ErrInUse       = errors.New("data dir is in use (is metad still running on it?)")
	ErrBadPeers    = errors.New("bad peer list")
)
