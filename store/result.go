package store

// Result is the typed outcome of one replicated command as applied to the store (package fsm
// dispatches commands and builds it; the proposer hands it to the caller). Reason OK means
// applied; any other reason is a deterministic rejection and Message says why. Only the payload
// fields of the command's kind are set. A Result is never changed once built: a client session
// keeps it to answer retries.
type Result struct {
	Reason  Reason
	Message string

	Replicas []Replica     // PutStart, UpsertStart: the replicas to write; ReplicaTaskStart: the source, then the targets
	Reused   bool          // UpsertStart: the object's extents were kept (same size)
	Count    int           // RemoveAll, RemoveGroup, UnregisterTenant, Evict, RevokeExpired: objects affected
	Bytes    uint64        // Evict: bytes freed; ReplicaTaskStart: the object's size
	Instance uint64        // RegisterTenant: the new instance id
	Created  bool          // MountSegment: false when the mount was a repeat
	Unmount  UnmountResult // UnmountSegment
	Items    []Result      // batch forms and token lists: one per item, in request order
	Session  uint64        // OpenSession: the new session's id
	Key      string        // an item of a keyed BatchRemove (RemoveByRegex): its key
	Tasks    []Task        // CreateTask: the task created; FetchTasks: the tasks handed out; RevokeExpired: the tasks it ended FAILED
	Drain    *DrainJob     // StartDrain, CancelDrain: the job as the command left it
	// Evict: the outcome of each unit, in command order (a token of the form without unit_sizes
	// is a unit). A reason, not a Result, because every node builds it for every unit of every
	// Evict it applies, hundreds of thousands in a large eviction.
	Units []Reason
}

// Err returns the rejection as an error (nil when OK).
func (r *Result) Err() error {
	if r.Reason == OK {
		return nil
	}
	return &Error{Reason: r.Reason, Msg: r.Message}
}
