package chaos

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The model is the object API seen through one partition: a singleton key, or an explicit group
// with its fixed member keys (a group's members change together under RemoveGroup, so they are
// checked together). A partition's state is the state of each member key; an operation names the
// member it touches (or the whole group).
//
// A key is absent, pending (PutStart committed, no PutEnd yet: it exists but is not readable, and
// only its writer may end or revoke it) or present (readable, with the size it was put with). The
// workload gives every PutStart a random size, so a read of an older incarnation of a key shows.
//
// Beside that replicated state a key may be reserved: the leader answered a PutStart of the
// absent key from its allocation arenas, with no log entry (service/reserve.go). A successful
// PutStart is either, as its answer does not say which. A reservation lives in the leader's memory
// only, so it may vanish at any moment (a leader change): its writer's PutEnd then answers
// RESERVATION_LOST and nothing was created, which the model accepts of a reservation and of an
// absent key, never of a write the state holds. Its PutEnd that succeeded created the object
// (PutCommit), which no read may miss afterwards; a reservation seen gone (a Get that answers
// OBJECT_NOT_FOUND, a RESERVATION_LOST) never comes back.
//
// A present key also has a count of COMPLETE replicas (a put places one; the drill's segments
// always have room) and may have a copy or move in progress, started by one client, which alone
// ends or revokes it. While a task runs the key refuses removal (OBJECT_HAS_REPLICATION_TASK) and
// Get answers its COMPLETE replicas only, so the count is unchanged until CopyEnd adds one; MoveEnd
// and a Revoke leave it as it was. Get's answer is checked for its count, not for the segments.
// A task the leader's reaper revokes (put_release_timeout) or an unmount ends leaves the same
// state as a Revoke: its starter's End or Revoke then answers OBJECT_NO_REPLICATION_TASK, which the
// model accepts as that revocation. The drill's release timeout (10 min) outlasts it, and it
// unmounts nothing, so neither should happen there.
//
// In a tiers drill (Config.Tiers) the workers keep a local SSD and offload every object they hold,
// memory eviction keeps an object in memory until it is on its owner's SSD and then drops its
// memory replicas, and the leader promotes a disk-only object that reads hit back to memory. None
// of that is a workload call, so the model sees it as the state moving by itself, and each
// operation of such a drill carries input.Tiers: a present key's Get answers at least one COMPLETE
// replica (memory or LOCAL_DISK) and at most one LOCAL_DISK replica, whatever the counts of the
// replicated state (eviction drops memory replicas, promotion adds one); a removal or a copy or
// move start may find a present key busy with an offload or a promotion (OBJECT_HAS_REPLICATION_TASK)
// that no workload client started, and a copy's or move's End or Revoke may find it pinned by that
// worker (ILLEGAL_CLIENT) where the workload holds no task of it; a snapshot is compared without the replica counts. Presence,
// size, writer, the workload's own tasks and every other answer are checked as strictly as in any
// drill: an object that a tier change lost, or that a read missed while it was on disk, fails it.
//
// Every write the workload sends is one RPC attempt (the client's own retries are off for writes),
// so an answer describes exactly one command. An attempt whose outcome is unknown (deadline,
// broken connection, UNAVAILABLE "outcome is unknown", a failed forward) is recorded with output
// unknown and a return at the end of time: the model lets it take effect or not. Reads that fail
// are dropped (they change nothing). Client.Put, which retries, appears only on keys that one
// writer puts once (the probe), where its retries cannot interleave with anyone else's writes.

// maxMembers is the most keys a partition has (the group size).
const maxMembers = 4

// keyKind is a key's state.
type keyKind uint8

const (
	absent keyKind = iota
	pending
	present
)

func (k keyKind) String() string {
	return [...]string{"absent", "pending", "present"}[k]
}

// taskKind is the replica task in progress on a present key.
type taskKind uint8

const (
	noTask taskKind = iota
	copyTask
	moveTask
)

func (k taskKind) String() string {
	return [...]string{"none", "copy", "move"}[k]
}

// keyState is one key's state in the model. A plain value.
type keyState struct {
	Kind     keyKind
	Writer   int32 // workload client that put it (pending or present)
	Size     uint64
	Replicas uint8    // COMPLETE replicas (present)
	Task     taskKind // copy or move in progress (present)
	TaskBy   int32    // the client that started Task
	// Rsv is the leader's reservation of the key, beside the replicated state above: a PutStart
	// it answered from its arenas. Only PutEnd, PutRevoke, PutStart and Get see it (step).
	Rsv reservation
}

// reservation is a PutStart the leader answered from its arenas, with no log entry: it lives in
// that leader's memory only, and a leader change loses it (step lets it vanish before any
// operation that sees it). Its writer's PutEnd creates the object (PutCommit); a linearizable
// Get of the key answers REPLICA_IS_NOT_READY while it is held, and a PutStart of the key
// OBJECT_ALREADY_EXISTS. The replicated state does not know it: Exist, Remove, RemoveGroup,
// ListGroup, copies and moves, and a snapshot see the key as the state has it, and a restore
// leaves the reservation as it was. A plain value.
type reservation struct {
	Held   bool
	Writer int32
	Size   uint64
}

func (s keyState) String() string {
	rsv := ""
	if s.Rsv.Held {
		rsv = fmt.Sprintf("reserved(c%d,%d)", s.Rsv.Writer, s.Rsv.Size)
	}
	switch s.Kind {
	case pending:
		return fmt.Sprintf("pending(c%d,%d)", s.Writer, s.Size) + plus(rsv)
	case present:
		task := ""
		if s.Task != noTask {
			task = fmt.Sprintf(",%s@c%d", s.Task, s.TaskBy)
		}
		return fmt.Sprintf("present(c%d,%d,r%d%s)", s.Writer, s.Size, s.Replicas, task) + plus(rsv)
	}
	if rsv != "" {
		return rsv
	}
	return "absent"
}

// plus is "+s", or "" for an empty s.
func plus(s string) string {
	if s == "" {
		return ""
	}
	return "+" + s
}

// replicated is k as the replicated state has it: without the leader's reservation.
func (k keyState) replicated() keyState {
	k.Rsv = reservation{}
	return k
}

// partState is the state of a partition: its members in a fixed order. Comparable, so the
// checker's == works.
type partState [maxMembers]keyState

// opKind is the API call an operation stands for.
type opKind uint8

const (
	opPutStart opKind = iota + 1
	opPutEnd
	opPutRevoke
	opGet
	opExist
	opRemove
	opRemoveGroup
	opListGroup
	opClientPut // client.Put with the client's retries, on a key written once by one writer
	opSnapshot  // SnapshotSave from the leader: a read of every key at once (Snap is what it found)
	opRestore   // SnapshotRestore: a write of every key at once (Snap is what it installs)
	opCopyStart
	opCopyEnd
	opCopyRevoke
	opMoveStart
	opMoveEnd
	opMoveRevoke
)

var opNames = map[opKind]string{
	opPutStart: "PutStart", opPutEnd: "PutEnd", opPutRevoke: "PutRevoke", opGet: "Get", opExist: "Exist",
	opRemove: "Remove", opRemoveGroup: "RemoveGroup", opListGroup: "ListGroup", opClientPut: "Put",
	opSnapshot: "SnapshotSave", opRestore: "SnapshotRestore",
	opCopyStart: "CopyStart", opCopyEnd: "CopyEnd", opCopyRevoke: "CopyRevoke",
	opMoveStart: "MoveStart", opMoveEnd: "MoveEnd", opMoveRevoke: "MoveRevoke",
}

// task returns the replica task a task call is about (noTask for other calls).
func (k opKind) task() taskKind {
	switch k {
	case opCopyStart, opCopyEnd, opCopyRevoke:
		return copyTask
	case opMoveStart, opMoveEnd, opMoveRevoke:
		return moveTask
	}
	return noTask
}

func (k opKind) String() string { return opNames[k] }

// result is the kind of answer an operation got.
type result uint8

const (
	resOK      result = iota // success
	resReason                // a deterministic rejection; Reason says which
	resUnknown               // the outcome is unknown: the write may or may not have taken effect
	resNoop                  // certainly not proposed (no leader known, refused connection): no effect
)

// input is an operation's porcupine input. A plain value.
type input struct {
	Kind   opKind
	Member int       // index of the key in its partition (not used by RemoveGroup and ListGroup)
	Writer int32     // the workload client
	Size   uint64    // PutStart, Put
	Force  bool      // Remove, RemoveGroup
	Label  string    // "tenant/key" or "tenant/group", for descriptions
	Snap   partState // opSnapshot, opRestore: the partition as the snapshot file has it
	// Weak relaxes the model for this operation (see tolerance); set only when the checker
	// classifies a violation.
	Weak tolerance
	// Tiers marks an operation of a tiers drill: offloads, evictions to disk and promotions
	// change the key beside the workload (see the model's comment above).
	Tiers bool
}

// tolerance is a set of relaxations of the model for known anomalies of metad, each applied only
// to the operations that could show it. The drill checks strictly first; a partition that fails
// strictly but passes with a relaxation is reported under that anomaly's name.
type tolerance uint8

const (
	// tolGroupNotFound: RemoveGroup answers OBJECT_NOT_FOUND, erasing nothing, while the group has
	// members, when another removal of one of its members is in flight (the leader's unlink mark
	// makes PrepareRemoveGroup see that member as absent and fail the whole group). Applied to a
	// RemoveGroup that overlaps a removal of one of its members.
	tolGroupNotFound tolerance = 1 << iota
	// tolDirtyAbsent: a linearizable read (Get, Exist) or a Remove finds a present key absent while
	// a removal of it is in flight that never commits: the leader answers from its unlink mark,
	// which is uncommitted soft state. Applied to an absence answer that overlaps a removal of the
	// key.
	tolDirtyAbsent
	// tolRestoreFenced: a Remove or RemoveGroup prepared before a SnapshotRestore and applied
	// after it answers OBJECT_NOT_FOUND, erasing nothing, though the restored state has the key
	// (the removal is fenced by object and group ids of the state it was prepared on). Applied
	// to OBJECT_NOT_FOUND of a removal that overlaps a restore.
	tolRestoreFenced
)

var tolNames = map[tolerance]string{
	tolGroupNotFound: "group-not-found",
	tolDirtyAbsent:   "dirty-absent",
	tolRestoreFenced: "restore-fenced",
}

// output is an operation's porcupine output. A plain value.
type output struct {
	Res      result
	Reason   string // the reason name without REASON_ (OBJECT_NOT_FOUND...) when Res is resReason
	Size     uint64 // Get
	Replicas uint8  // Get: COMPLETE replicas answered but LOCAL_DISK ones
	Disk     uint8  // Get: COMPLETE LOCAL_DISK replicas answered (a tiers drill only has any)
	Exists   bool   // Exist
	Count    uint64 // RemoveGroup: members removed
	Listed   uint8  // ListGroup: bit i set = member i listed
}

func (r result) String() string { return output{Res: r, Reason: "rejected"}.String() }

func (o output) String() string {
	switch o.Res {
	case resUnknown:
		return "unknown"
	case resNoop:
		return "not proposed"
	case resReason:
		return o.Reason
	}
	return "ok"
}

// Reason names the workload checks for.
const (
	rNotFound  = "OBJECT_NOT_FOUND"
	rExists    = "OBJECT_ALREADY_EXISTS"
	rHasLease  = "OBJECT_HAS_LEASE"
	rNotReady  = "REPLICA_IS_NOT_READY"
	rInvalid   = "INVALID_WRITE"
	rIllegal   = "ILLEGAL_CLIENT"
	rNoHandle  = "NO_AVAILABLE_HANDLE"
	rQuota     = "TENANT_QUOTA_EXCEEDED"
	rNotLeader = "NOT_LEADER"
	rHasTask   = "OBJECT_HAS_REPLICATION_TASK"
	rNoTask    = "OBJECT_NO_REPLICATION_TASK"
	rNoReplica = "REPLICA_NOT_FOUND"
	rParams    = "INVALID_PARAMS"
	rLost      = "RESERVATION_LOST"

	rSessionExpired = "SESSION_EXPIRED"
	rSeqTooOld      = "SEQUENCE_TOO_OLD"
	rAuthStale      = "AUTH_REVISION_STALE"
)

// step is the nondeterministic step function: every state the partition can be in after the
// operation, none if the answer is impossible in st. A reservation may have been lost to a leader
// change at any moment before an operation that sees it: then the operation meets the key without
// it.
func step(st partState, in input, out output, members int) []partState {
	if out.Res == resNoop {
		return []partState{st}
	}
	next := stepHeld(st, in, out, members)
	if st[in.Member].Rsv.Held && in.Kind.seesReservation() {
		lost := st
		lost[in.Member].Rsv = reservation{}
		for _, s := range stepHeld(lost, in, out, members) {
			if !slices.Contains(next, s) {
				next = append(next, s)
			}
		}
	}
	return next
}

// seesReservation reports whether an operation of kind k answers differently while the leader
// holds a reservation of its key.
func (k opKind) seesReservation() bool {
	switch k {
	case opPutStart, opPutEnd, opPutRevoke, opGet, opClientPut:
		return true
	}
	return false
}

// stepHeld is step with every reservation in st still held.
func stepHeld(st partState, in input, out output, members int) []partState {
	one := func(s partState) []partState { return []partState{s} }
	// with sets member m's replicated state to k; the leader's reservation stays.
	with := func(m int, k keyState) partState { s := st; k.Rsv = st[m].Rsv; s[m] = k; return s }
	k := st[in.Member]
	mine := k.Writer == in.Writer
	dirty := in.Weak&tolDirtyAbsent != 0 && k.Kind == present
	switch in.Kind {
	case opPutStart:
		// Through the log (pending) or answered from the leader's arenas (a reservation): the
		// answer does not say which.
		free := k.Kind == absent && !k.Rsv.Held
		placed := with(in.Member, keyState{Kind: pending, Writer: in.Writer, Size: in.Size})
		reserved := st
		reserved[in.Member].Rsv = reservation{Held: true, Writer: in.Writer, Size: in.Size}
		switch {
		case out.Res == resOK && free:
			return []partState{placed, reserved}
		case out.Res == resOK:
			return nil
		case out.Res == resUnknown && free:
			return []partState{st, placed, reserved}
		case out.Res == resUnknown:
			return one(st)
		case out.Reason == rExists:
			if free {
				return nil
			}
			return one(st)
		default: // no handle, quota...: nothing placed
			return one(st)
		}
	case opPutEnd:
		if k.Rsv.Held && k.Rsv.Writer == in.Writer {
			return commitReserved(st, in, out)
		}
		ended := with(in.Member, keyState{Kind: present, Writer: in.Writer, Size: k.Size, Replicas: 1})
		if k.Kind == present { // a repeat changes nothing
			ended = st
		}
		ours := (k.Kind == pending || k.Kind == present) && mine
		switch {
		case out.Res == resOK && ours:
			return one(ended)
		case out.Res == resOK:
			return nil
		case out.Res == resUnknown && k.Kind == pending && mine:
			return []partState{st, ended}
		case out.Res == resUnknown:
			return one(st)
		case ours: // a rejection of our own write in progress (or a repeat) is wrong
			return nil
		case out.Reason == rLost:
			// The leader knows no such write (OBJECT_NOT_FOUND) while an earlier term's
			// reservations may have been lost: the key is absent. Another writer's object is not
			// ours to end (ILLEGAL_CLIENT).
			if k.Kind != absent {
				return nil
			}
			return one(st)
		default:
			return one(st)
		}
	case opPutRevoke:
		if k.Rsv.Held && k.Rsv.Writer == in.Writer {
			switch {
			case out.Res == resOK:
				return one(unreservedOf(st, in.Member))
			case out.Res == resUnknown:
				return []partState{st, unreservedOf(st, in.Member)}
			case out.Reason == rNotReady: // its PutCommit is in flight or of unknown outcome
				return one(st)
			}
			return nil
		}
		ours := k.Kind == pending && mine
		gone := with(in.Member, keyState{})
		switch {
		case out.Res == resOK && ours:
			return one(gone)
		case out.Res == resOK:
			return nil
		case out.Res == resUnknown && ours:
			return []partState{st, gone}
		case out.Res == resUnknown:
			return one(st)
		case ours:
			return nil
		default:
			return one(st)
		}
	case opGet:
		replicas := k.Replicas == out.Replicas && out.Disk == 0
		if in.Tiers {
			replicas = out.Replicas+out.Disk >= 1 && out.Disk <= 1
		}
		switch {
		case out.Res == resOK && k.Kind == present && k.Size == out.Size && replicas,
			out.Reason == rNotFound && k.Kind == absent && !k.Rsv.Held,
			out.Reason == rNotReady && k.Kind == pending,
			out.Reason == rNotReady && k.Kind == absent && k.Rsv.Held,
			out.Reason == rNotFound && dirty:
			return one(st)
		}
		return nil
	case opExist:
		if out.Res == resOK && (out.Exists == (k.Kind == present) || !out.Exists && dirty) {
			return one(st)
		}
		return nil
	case opRemove:
		gone := with(in.Member, keyState{})
		switch {
		case out.Res == resOK && k.Kind == present && k.Task == noTask:
			return one(gone)
		case out.Res == resUnknown && k.Kind == present && k.Task == noTask:
			return []partState{st, gone}
		case out.Res == resUnknown:
			return one(st)
		case out.Reason == rHasTask && k.Kind == present && k.Task != noTask,
			out.Reason == rHasTask && k.Kind == present && in.Tiers: // an offload or a promotion
			return one(st)
		case out.Reason == rNotFound && k.Kind == absent,
			out.Reason == rNotFound && dirty,
			out.Reason == rNotFound && in.Weak&tolRestoreFenced != 0,
			out.Reason == rNotReady && k.Kind == pending,
			// A key the leader holds a reservation of: its write is in progress (the leader may
			// also answer from the replicated state alone, where the key is absent).
			out.Reason == rNotReady && k.Kind == absent && k.Rsv.Held,
			// A task is checked before the lease.
			out.Reason == rHasLease && k.Kind == present && k.Task == noTask && !in.Force:
			return one(st)
		}
		return nil
	case opRemoveGroup:
		var nrsv int
		for m := range members {
			if st[m].Rsv.Held {
				nrsv++
			}
		}
		if nrsv > 0 {
			// The leader refuses the group while it holds a reservation of a member (its write is
			// in progress: REPLICA_IS_NOT_READY, nothing erased). A leader change may have lost
			// those reservations first: then the group is removed as if they had never been.
			var next []partState
			if out.Reason == rNotReady || out.Res == resUnknown {
				next = append(next, st)
			}
			lost := st
			for m := range members {
				lost[m].Rsv = reservation{}
			}
			for _, s := range stepHeld(lost, in, out, members) {
				if !slices.Contains(next, s) {
					next = append(next, s)
				}
			}
			return next
		}
		var npresent, npending, ntask uint64
		for m := range members {
			switch st[m].Kind {
			case present:
				npresent++
			case pending:
				npending++
			}
			if st[m].Task != noTask {
				ntask++
			}
		}
		removable := npending == 0 && npresent > 0 && ntask == 0
		var empty partState // no member holds a reservation here
		switch {
		case out.Res == resOK && removable && out.Count == npresent:
			return one(empty)
		case out.Res == resUnknown && removable:
			return []partState{st, empty}
		case out.Res == resUnknown:
			return one(st)
		case out.Reason == rNotFound && npresent+npending == 0,
			out.Reason == rNotFound && in.Weak&(tolGroupNotFound|tolRestoreFenced) != 0,
			out.Reason == rNotReady && npending > 0,
			out.Reason == rHasTask && ntask > 0,
			out.Reason == rHasTask && npresent > 0 && in.Tiers, // an offload or a promotion
			out.Reason == rHasLease && npresent > 0 && !in.Force,
			// A member joined after the leader prepared the removal: nothing is erased
			// (store.EraseGroup); the joiner is there.
			out.Reason == rExists && npresent+npending > 0:
			return one(st)
		}
		return nil
	case opListGroup:
		var want uint8
		for m := range members {
			if st[m].Kind != absent {
				want |= 1 << m
			}
		}
		switch {
		case out.Res == resOK && out.Listed == want && want != 0,
			out.Reason == rNotFound && want == 0:
			return one(st)
		}
		return nil
	case opSnapshot:
		for m := range members {
			a, b := st[m].replicated(), in.Snap[m]
			// The probe's Put is one operation in the model, but a snapshot can catch it between
			// its PutStart and its PutEnd.
			if b.Kind == pending && b.Writer == probeClient && (a.Kind == absent || a == keyState{Kind: present, Writer: b.Writer, Size: b.Size, Replicas: 1}) {
				continue
			}
			if in.Tiers { // eviction and promotion move replicas beside the workload
				a.Replicas, b.Replicas = 0, 0
			}
			if a != b { // kind, writer, size, replica count and task
				return nil
			}
		}
		return one(st)
	case opRestore:
		restored := in.Snap // the leader's reservations stay
		for m := range restored {
			restored[m].Rsv = st[m].Rsv
		}
		switch out.Res {
		case resOK:
			return one(restored)
		case resUnknown:
			return []partState{st, restored}
		}
		return one(st)
	case opClientPut:
		free := k.Kind == absent && !k.Rsv.Held
		placed := with(in.Member, keyState{Kind: pending, Writer: in.Writer, Size: in.Size})
		done := with(in.Member, keyState{Kind: present, Writer: in.Writer, Size: in.Size, Replicas: 1})
		reserved := st
		reserved[in.Member].Rsv = reservation{Held: true, Writer: in.Writer, Size: in.Size}
		switch {
		case out.Res == resOK && free:
			return one(done)
		case out.Res == resOK:
			return nil
		case free: // failed or unknown: a retried put may have left anything behind
			return []partState{st, placed, done, reserved}
		default:
			return one(st)
		}
	case opCopyStart, opMoveStart:
		return taskStart(st, in, out)
	case opCopyEnd, opMoveEnd, opCopyRevoke, opMoveRevoke:
		return taskEnd(st, in, out)
	}
	return nil
}

// commitReserved is step for a PutEnd of a write the leader holds a reservation of, by its writer:
// it proposes PutCommit, which creates the object from the reserved ranges, or refuses it,
// changing nothing in the state (RESERVATION_LOST: the ranges are no longer the arenas';
// OBJECT_ALREADY_EXISTS: a restore brought another object back; TENANT_QUOTA_EXCEEDED). Either
// answer ends the reservation; an unknown one leaves it committing.
func commitReserved(st partState, in input, out output) []partState {
	k := st[in.Member]
	committed := st
	committed[in.Member] = keyState{Kind: present, Writer: in.Writer, Size: k.Rsv.Size, Replicas: 1}
	refused := unreservedOf(st, in.Member)
	switch {
	case out.Res == resOK && k.Kind == absent:
		return []partState{committed}
	case out.Res == resUnknown && k.Kind == absent:
		return []partState{st, committed}
	case out.Res == resUnknown:
		return []partState{st, refused}
	case out.Reason == rLost, out.Reason == rQuota,
		out.Reason == rExists && k.Kind != absent:
		return []partState{refused}
	case out.Reason == rSessionExpired, out.Reason == rSeqTooOld, out.Reason == rAuthStale:
		// Refused before apply by the command's session or auth revision: nothing changed, and
		// the leader keeps the reservation for a retry.
		return []partState{st}
	}
	return nil
}

// unreservedOf is st without member m's reservation.
func unreservedOf(st partState, m int) partState {
	st[m].Rsv = reservation{}
	return st
}

// taskStart is step for CopyStart and MoveStart (one target each, placed by the leader).
func taskStart(st partState, in input, out output) []partState {
	k := st[in.Member]
	started := st
	started[in.Member].Task, started[in.Member].TaskBy = in.Kind.task(), in.Writer
	free := k.Kind == present && k.Task == noTask
	switch {
	case out.Res == resOK && free:
		return []partState{started}
	case out.Res == resUnknown && free:
		return []partState{st, started}
	case out.Res == resOK:
		return nil
	case out.Res == resUnknown,
		out.Reason == rNotFound && k.Kind == absent,
		out.Reason == rNotReady && k.Kind == pending,
		out.Reason == rHasTask && k.Kind == present && k.Task != noTask,
		out.Reason == rHasTask && k.Kind == present && in.Tiers, // an offload or a promotion
		// The source segment was read before the call: the key may have been put again since,
		// elsewhere. A full tier, the tenant's quota, or a state changed under the placement
		// refuse it with nothing changed.
		free && (out.Reason == rNoReplica || out.Reason == rNoHandle || out.Reason == rQuota || out.Reason == rInvalid):
		return []partState{st}
	}
	return nil
}

// taskEnd is step for CopyEnd, MoveEnd, CopyRevoke and MoveRevoke.
func taskEnd(st partState, in input, out output) []partState {
	k := st[in.Member]
	kind := in.Kind.task()
	ours := k.Kind == present && k.Task == kind && k.TaskBy == in.Writer
	cleared := st
	cleared[in.Member].Task, cleared[in.Member].TaskBy = noTask, 0
	ended := cleared // MoveEnd: the target replaces the source; a Revoke drops the target
	if in.Kind == opCopyEnd {
		ended[in.Member].Replicas++
	}
	switch {
	case out.Res == resOK && ours:
		return []partState{ended}
	case out.Res == resUnknown && ours:
		return []partState{st, ended}
	case out.Res == resOK:
		return nil
	case out.Reason == rHasLease && ours && in.Kind == opMoveEnd:
		// A reader holds a lease: the source stays until it ends (store.PrepareMoveEnd).
		return []partState{st}
	case out.Reason == rNoTask && ours:
		// The reaper or an unmount revoked it first: as a Revoke.
		return []partState{cleared}
	case out.Res == resUnknown,
		out.Reason == rNotFound && k.Kind == absent,
		out.Reason == rNoTask && k.Kind != absent && k.Task == noTask,
		out.Reason == rIllegal && k.Kind == present && k.Task != noTask && k.TaskBy != in.Writer,
		// The worker's offload or promotion pin is a task of a client the workload never saw.
		out.Reason == rIllegal && k.Kind == present && k.Task == noTask && in.Tiers,
		out.Reason == rParams && k.Kind == present && k.Task != noTask && k.Task != kind && k.TaskBy == in.Writer:
		return []partState{st}
	}
	return nil
}

// partition describes one model partition: a singleton key or a group.
type partition struct {
	ID      int
	Tenant  string
	Group   string   // "" for a singleton
	Keys    []string // members; one for a singleton
	IsProbe bool     // a key written once by the probe
}

func (p *partition) label() string {
	if p.Group != "" {
		return p.Tenant + "/" + p.Group
	}
	return p.Tenant + "/" + p.Keys[0]
}

// newModel returns the porcupine model over the partitions parts (indexed by partition id; an
// operation's Metadata is its *Op, which names its partition).
func newModel(parts []*partition) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := make(map[int][]porcupine.Operation)
			var order []int
			for _, op := range h {
				id := op.Metadata.(*Op).Part
				if _, ok := by[id]; !ok {
					order = append(order, id)
				}
				by[id] = append(by[id], op)
			}
			out := make([][]porcupine.Operation, 0, len(order))
			for _, id := range order {
				out = append(out, by[id])
			}
			return out
		},
		Init: func() []interface{} { return []interface{}{partState{}} },
		Step: func(state, in, out interface{}) []interface{} {
			i := in.(input)
			members := 1
			if i.Kind == opRemoveGroup || i.Kind == opListGroup || i.Kind == opSnapshot {
				members = maxMembers
			}
			next := step(state.(partState), i, out.(output), members)
			res := make([]interface{}, len(next))
			for j, s := range next {
				res[j] = s
			}
			return res
		},
		Hash: func(state interface{}) uint64 {
			h := fnv.New64a()
			fmt.Fprint(h, state.(partState))
			return h.Sum64()
		},
		DescribeOperation: func(in, out interface{}) string {
			i, o := in.(input), out.(output)
			var b strings.Builder
			fmt.Fprintf(&b, "c%d %s(%s", i.Writer, i.Kind, i.Label)
			if i.Kind == opPutStart || i.Kind == opClientPut {
				fmt.Fprintf(&b, ", %d", i.Size)
			}
			if i.Force {
				b.WriteString(", force")
			}
			if i.Kind == opSnapshot || i.Kind == opRestore {
				fmt.Fprintf(&b, ", %v", describeState(i.Snap, maxMembers))
			}
			fmt.Fprintf(&b, ") -> %s", o)
			switch {
			case o.Res != resOK:
			case i.Kind == opGet:
				fmt.Fprintf(&b, " size %d replicas %d", o.Size, o.Replicas)
				if o.Disk > 0 {
					fmt.Fprintf(&b, " local disk %d", o.Disk)
				}
			case i.Kind == opExist:
				fmt.Fprintf(&b, " %v", o.Exists)
			case i.Kind == opRemoveGroup:
				fmt.Fprintf(&b, " %d removed", o.Count)
			case i.Kind == opListGroup:
				fmt.Fprintf(&b, " members %04b", o.Listed)
			}
			return b.String()
		},
		DescribeState: func(state interface{}) string {
			st := state.(partState)
			var parts []string
			for _, k := range st {
				parts = append(parts, k.String())
			}
			return "[" + strings.Join(parts, " ") + "]"
		},
	}
	return nm.ToModel()
}
