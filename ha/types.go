package ha

// Role is a node's Raft role.
type Role string

const (
	RoleLeader    Role = "leader"
	RoleFollower  Role = "follower"
	RoleCandidate Role = "candidate"
	RoleShutdown  Role = "shutdown"
)

// Member is one member of the cluster as Raft's configuration and the replicated member records
// describe it.
type Member struct {
	Name       string
	PeerAddr   string
	ClientAddr string // "" until the member has recorded it
	Voter      bool
	Leader     bool
	Level      uint32 // the feature level it records; 0 until recorded (ClusterLevel counts it as 1)
}

// Status is one node's view of itself and the cluster.
type Status struct {
	Name              string
	ClientAddr        string
	PeerAddr          string
	Role              Role
	Term              uint64
	CommitIndex       uint64
	AppliedIndex      uint64 // the last entry applied: the state machine's, or Raft's when ahead (entries that change no state)
	LastLogIndex      uint64 // the last entry in this node's log (stored, maybe not yet committed)
	LastSnapshotIndex uint64
	LeaderName        string
	LeaderAddr        string // client address
	Objects           int64
}
