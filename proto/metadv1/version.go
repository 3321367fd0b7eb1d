package metadv1

// Encoding versions written by this release. A reader that meets a higher version refuses it with
// an error (snapshot) or panics with the log index (log entry) rather than misread it.
const (
	// EnvelopeFormatVersion is Envelope.format_version for the Raft log entries this release writes.
	EnvelopeFormatVersion uint32 = 1
	// SnapshotFormatVersion is SnapshotHeader.format_version for the snapshot records this release
	// writes. 2 adds the client sessions (SessionRecord, SnapshotHeader.next_session_id); a
	// version 1 file reads as a state with no session. 3 adds the auth state (KeyRecord,
	// RoleRecord, SnapshotHeader.auth_revision, keys, role_bindings); a version 1 or 2 file reads
	// as a state with no key and no role binding, at auth revision 0. 4 adds a segment's closing
	// state (SegmentRecord.closing, unmount_at_unix_nano; ResultRecord.unmount_at_unix_nano) and the
	// objects' replica tasks (ObjectRecord.task) with the scheduled tasks; a version 1 to 3 file
	// reads as a state with every segment open and no task. 5 adds the allocation arenas
	// (ArenaRecord, SnapshotHeader.last_arena_id, arenas); a version 1 to 4 file reads as a state
	// with no arena. 6 adds a client session's owner (SessionRecord.principal, owned); a version 2
	// to 5 file reads as a state whose sessions have no known owner. 7 adds the rate limits
	// (LimitRecord, SnapshotHeader.limits); a version 1 to 6 file reads as a state with no limit.
	// 8 adds the LOCAL_DISK tier (SegmentRecord.segment.tier TIER_LOCAL_DISK and its offload flag,
	// ReplicaRecord.tier TIER_LOCAL_DISK); a version 1 to 7 file reads as a state with none.
	SnapshotFormatVersion uint32 = 8
)

// RulesVersion is Envelope.rules_version for the entries this release writes: the apply rules
// its leader checked every command against. Each version adds rules that apply enforces only on
// entries of that version or later (an older entry replays as it applied when it was written):
//
//	1: SEMANTICS section 1's limits on a mounted segment's size (at most 2^48 bytes), name
//	   (1..256 bytes) and endpoint (1..1024 bytes, no byte below 0x20); the keys of a batch command
//	   distinct (a repeat refuses the whole command); a member name recorded by SetMember (like a
//	   tenant id, 1..64 bytes).
//	2: OpenSession records its Command.principal as the session's owner, and a command in a
//	   session another principal opened is refused SESSION_EXPIRED (as for an unknown session),
//	   the session untouched.
const RulesVersion uint32 = 2
