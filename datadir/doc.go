// Package datadir holds the offline tools for a metad data dir: the files a stopped ha.Node keeps
// in it (the Raft log and stable store, <data-dir>/wal or <data-dir>/raft.db: ha.OpenLogStores, and
// <data-dir>/snapshots, the file snapshot store), read and written while no node runs on them.
//
//   - Restore (metad restore) makes a new cluster member's data dir from a snapshot file: the file
//     is verified completely first, and the data dir gets what a bootstrap writes plus the
//     snapshot, so the node started on it comes up with the snapshot's state.
//   - Recover (metad recover) rewrites the Raft configuration of a stopped node's data dir, for a
//     cluster that has lost its quorum for good (raft.RecoverCluster), replaying its snapshot and
//     log into a fresh state machine.
//
// Both leave the data dir as they found it when they fail before writing the result, and log their
// phases. Neither has a deadline: a large state takes as long as it takes. Snapshots of a running
// node, and restoring one into a running cluster, are package ha's (Node.OpenSnapshot,
// Node.RestoreSnapshot).
package datadir
