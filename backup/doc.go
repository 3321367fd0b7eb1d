// Package backup writes scheduled backups of a running member's state into a directory, and
// restores the newest of them into an empty data dir at start.
//
// # The loop (Loop.Run)
//
// Run may run on every member for the process's whole life: it acts only while its member leads
// (Source.IsLeader) and does nothing at all otherwise. While it leads, a backup is due once the
// newest backup in the directory is Config.Interval old (listed again each time the member gains
// leadership, so a new leader over a shared directory keeps the cadence, and one whose directory
// holds nothing recent writes at once). One backup (Loop.Backup) is:
//
//  1. a fresh snapshot through the path `metactl snapshot save` takes (ha.Node.OpenSnapshot, not
//     stale: a Raft barrier on the leader, then raft.Snapshot), so it holds everything committed
//     before it began;
//  2. streamed with bounded memory (1 MiB buffers) to DIR/metad-<index>-<term>-<UTC time>.snap.tmp,
//     each read checking that this member still leads and that the caller has not given up;
//  3. fsynced, then verified completely with snapshot.Inspect (magic, version, frames, counts,
//     checksum) and checked against the size Raft recorded;
//  4. renamed to its final name, and the directory fsynced;
//  5. retention: the oldest backups beyond Config.Retain are deleted (only files named as this
//     package names them: anything else in the directory is left alone).
//
// A failure at any step leaves no partial file (the temp file is removed), is logged and counted by
// reason (metad_backup_failures_total{reason}). Temp files left by a process that died mid-backup
// are removed when a member gains leadership, before its first backup. Never two backups run at
// once in one process (a second Backup is refused with ErrBusy), and a leadership loss mid-backup
// aborts it with ErrLostLeadership. The clock is read here freely: none of this is on the Raft
// apply path.
//
// # Names
//
// metad-<index>-<term>-<time>.snap, time as 20060102T150405.000Z (UTC, milliseconds): the index and
// term of the file's header (the last entry the state machine applied, as `metactl snapshot
// inspect` and `metad restore` report them) and when the snapshot was taken. "Newest" is by that
// time, then by index: a
// cluster restored from an older backup writes lower indexes than the backups before it, and its
// new backups must still count as the newest.
//
// # Auto-restore (RestoreOnEmpty)
//
// At start, before the node opens its data dir, RestoreOnEmpty restores the newest backup that
// verifies into the data dir through datadir.Restore (a full verification, then what a bootstrap
// writes plus the snapshot), only when all of these hold: the data dir is empty or missing, the
// member would bootstrap a new cluster, and that cluster is this member alone. A member of a
// multi-member initial cluster never restores on its own: it cannot tell a cluster that is lost
// from one that runs without it, and members that bootstrap from different states break Raft's
// agreement on what each index holds. Those members are either restored together with one file
// (`metad restore` on each) or join the restored first member (--initial-cluster-state existing),
// catching up from its snapshot.
package backup
