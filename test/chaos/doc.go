// Package chaos runs failover drills against real metad processes: three nodes on loopback behind
// a fault-injecting network, simulated workers, concurrent clients, faults on a seeded schedule,
// and, at the end, a linearizability check of every operation and the invariant checks. The
// promise under test is metad's: a failover loses nothing and reads never go back in time.
//
//	go test -run 'TestDrillShort$' -v ./test/chaos/                        # one drill, 40 s of faults
//	CHAOS_SEED=42 go test -run 'TestDrillShort$' -v ./test/chaos/          # the same drill again
//	CHAOS_SEEDS=20 CHAOS_DURATION=60s go test -run TestDrillMany -timeout 60m ./test/chaos/
//	go test -run 'TestDrillTiers$' -v ./test/chaos/                        # the tiers drill, 30 s of faults
//
// Environment: CHAOS_SEED (the seed; random and printed when unset; TestDrillMany runs SEED,
// SEED+1, ...), CHAOS_DURATION (the fault phase), CHAOS_SEEDS (drills of TestDrillMany),
// CHAOS_FAULTS (a comma-separated subset of the fault kinds below), CHAOS_KNOWN (known anomalies
// that do not fail a drill, see below), CHAOS_REPORT_DIR (default report/ in this directory),
// CHAOS_HISTORY=1 (keep history.txt and each node's state text even when the drill passes),
// CHAOS_INSECURE=1 (run the drill in plaintext with authentication off, every metad with
// --insecure, as a cluster without certificates runs; see Security below), CHAOS_TIERS=1 (make
// every drill a tiers drill, see Tiers below).
//
// # The drill
//
// Cluster (cluster.go, proxy.go): every node's peer port and client port sit behind a Proxy; the
// nodes listen on private ports and advertise the proxies (--advertise-peer, --advertise-client,
// --initial-cluster), so every Raft connection and every forwarded call crosses a proxy. A proxy
// tells which node a connection comes from by the process that owns the connecting socket (Linux
// /proc), and applies a rule per directed link: pass, drop (close and refuse) or blackhole (hold
// every byte until healed). The drill's own status polls and end checks use the private ports, so
// no fault hides what a node says. Nodes run with metad's default Raft timeouts and client ttl
// (10 s), and a put discard timeout of 10 min, so that discard never changes state while the drill
// runs. Two `metactl worker` processes mount four 64 MiB segments and ping every second; with one
// fault at a time a quorum is always up, so no worker may ever be expired (a check below).
//
// Workload (workload.go, ops.go): eight clients over three tenants (default, alpha, beta), each
// with 12 singleton keys and 3 groups of 3 members, pick: put (PutStart then PutEnd, one in ten
// PutStart then PutRevoke; a PutEnd that answers RESERVATION_LOST places the object again, at most
// three placements), group put and batch put (BatchPutStart then BatchPutEnd), Remove, BatchRemove,
// RemoveGroup (force or not), Get, Exist, BatchGet, BatchExist, ListGroup, and replicate: a Get for
// a source segment, then CopyStart or MoveStart of one replica (the target placed by the leader)
// and CopyEnd or MoveEnd 0-300 ms later (the copy of the bytes: some tasks span a leader change),
// one in eight CopyRevoke or MoveRevoke instead, every one of them through the client's session
// with its retries (exactly once), whatever the client's parity; a task whose outcome stays
// unknown is revoked before the client's next flow. Object sizes are random,
// so a read of an older incarnation of a key shows. The even clients' writes make one RPC attempt
// each (the Go client with retries off, no session, routed like the client would: to the leader an
// error names, else the next node), so that every attempt is recorded on its own: without a
// session a retried write could be applied twice. The odd clients write through the Go client in
// its session with its retries: one call is one operation, and the model holds it to taking effect
// once, whatever its retries did (a write whose answer was lost must answer as its first attempt
// did, not apply again); such a call that fails without a store reason has an unknown outcome,
// whatever its error says, since the error is its last attempt's and an earlier attempt may have
// committed. Reads use the Go client with its retries (a read changes nothing).
// A probe (probe.go) writes a fresh key with client.Put, retries on, every 50 ms, open loop: it
// measures when writes succeed, and its keys must all survive.
//
// Faults (faults.go), drawn from the seed with math/rand/v2 (PCG): kill -9 of the leader or a
// follower and restart from its data dir; SIGTERM of the leader (hands leadership over) and
// restart; SIGSTOP/SIGCONT of the leader (2-15 s: past the client ttl about a third of the time)
// or a follower (0.3-3 s); isolation of the leader or a follower from both others (drop or
// blackhole); leadership transfer (client.TransferLeader to a named follower or any); kill -9 of a
// follower, restart, and leadership transferred to it the moment it is back, while the workload's
// removals keep arriving (restart-transfer: a leader that has not applied its backlog yet must not
// answer from it); a snapshot saved from the leader under load; a snapshot saved, more load, then
// restored (SnapshotRestore) under load; lost answers (drop-reply: the link from the clients to the
// leader is muted for 0.5-3 s, so calls arrive and run and their answers vanish, and every write in
// flight there is retried elsewhere with its outcome unknown). One fault at a time: inject, hold, heal, wait until every node
// names one leader, a quiet gap, the next. "leader" and "follower" are resolved when the fault is
// injected. Memory pressure with eviction is not drilled in a plain drill: the workers' segments
// are large enough that the evictor (which cmd/metad runs) never has work (the report says so).
//
// Tiers (tiers.go): a tiers drill (TestDrillTiers, in make test; CHAOS_TIERS=1) gives the workers
// a local SSD directory and small memory, and runs every member with offload on evict and
// promotion on hit, so that during the faults objects are offloaded to their owner's SSD, evicted
// from memory to disk alone and promoted back by the reads. The model takes those moves as the
// state changing by itself (model.go, input.Tiers): replica counts are not checked, an offload's or
// a promotion's pin may refuse a removal or a copy, and everything else (presence, sizes, writers,
// no acknowledged write lost, one state on every node) is checked as in any drill. The drill fails
// unless its reads saw objects on disk alone and promoted back.
//
// Security (cluster.go): by default the drill runs as a production cluster does, with TLS and
// authentication on. NewCluster makes a CA and certificates in a temp dir (e2e.NewPKI): every
// node runs with its member certificate (--cacert, --cert, --key), so client calls, forwarded calls,
// the Raft peer transport and the metrics page are TLS, and the peers authenticate each other. The
// certificates name 127.0.0.1, so they verify through the proxies, which pass the TLS bytes through
// untouched. Each worker is its own principal (worker1, worker2) by a client certificate, bound
// worker:<its client id> by root before it starts; each workload client is its own principal
// (app1..app8) bound tenant:<t> for every tenant of the drill, and authenticates with an API key
// created by root at setup (TLS with no client certificate); the harness's own clients (admin,
// probe, monitor, end checks, snapshot save and restore) are root by its client certificate; the
// expiry check reads each node's metrics over HTTPS. CHAOS_INSECURE=1 runs it all in plaintext
// with no credentials, to tell a fault of the security layer from one of the cluster.
//
// # The model (model.go)
//
// Porcupine checks the history against a sequential model of the object API, partitioned by
// tenant and key: a singleton key is one partition, a group with its fixed member keys another
// (RemoveGroup and ListGroup touch all members at once). Each key is absent, pending (PutStart
// committed: it exists, reads say REPLICA_IS_NOT_READY, only its writer may end or revoke it) or
// present (with the size it was put with, its count of COMPLETE replicas, and the copy or move in
// progress with the client that started it, if any). Beside that a key may be reserved: the
// leader answered a PutStart from its allocation arenas with no log entry, a reservation in its
// memory that any leader change may lose, so the model lets it vanish before any operation.
// PutStart ok needs absent and unreserved, and leaves the key pending or reserved (the answer does
// not say which); OBJECT_ALREADY_EXISTS needs not absent or reserved; PutEnd ok needs our pending
// (or our present: a repeat) or our reservation, which it makes present; RESERVATION_LOST needs
// our reservation or an absent key and creates nothing, so a read that finds the object after it
// with no later PutEnd ok is a violation; a Get of a reserved key is REPLICA_IS_NOT_READY, and
// Exist, removals, ListGroup, copies and moves and snapshots see it as absent, and a restore keeps
// it; Get ok needs present with
// that size and that count of replicas, OBJECT_NOT_FOUND absent, REPLICA_IS_NOT_READY pending;
// Exist is true exactly when present; Remove ok takes present to absent; RemoveGroup ok needs no
// pending member, counts the present ones and empties the group; ListGroup lists the members that
// are not absent. A copy or move Start ok needs present with no task and records the task; while
// it runs every removal of the key (force or not, and RemoveGroup of its group) is
// OBJECT_HAS_REPLICATION_TASK, another Start too, and Get still answers the COMPLETE replicas only
// (a target is never read before End); End or Revoke ok needs the caller's own task of that kind:
// CopyEnd adds one replica, MoveEnd keeps the count (on another segment: placement is not checked),
// Revoke leaves the key as before. Another client's End is ILLEGAL_CLIENT, an End with no task
// OBJECT_NO_REPLICATION_TASK; that answer to the starter's own End is allowed too, as a task the
// reaper (put_release_timeout, 10 min, longer than a drill) or an unmount revoked. A task is
// replicated state, so one started before a leader change ends after it. Batch
// calls are recorded as one operation per item with the batch's times (a batch is one command,
// so its per-key projections are linearizable whenever it is). A write whose outcome is unknown
// (a deadline, a broken connection, UNAVAILABLE "outcome is unknown", a forward that failed after
// it was sent) is recorded as unknown and returns at the end of time: the model lets it take
// effect at any point after its call, or never. A routed attempt that certainly was not proposed
// (no leader known, NOT_LEADER without a forward, a connection or TLS handshake that never
// completed) is recorded as such and changes nothing. A read that failed is left out. A snapshot saved from the leader is a
// read of every key at once; a restore is a write of every key at once.
//
// End checks (checks.go): after the faults heal and the workload stops, every key and group is
// read once more, linearizably, into the history; an acknowledged write (PutEnd ok, probe Put ok)
// missing from that read with no removal or restore that could be ordered after it is a lost
// write; after one more write every node must reach the same applied index and show the same
// state: stale reads of every key (replicas, offsets, sizes), tenant (quota, charge, counts),
// segment (use, replica count) and group through its own port, and the bytes of a snapshot it
// saves with allow_stale; the status monitor (monitor.go, every 100 ms) must never have seen
// two nodes lead in one term; and no client may have been expired (every running node's
// metad_server_clients_expired_total is 0 and no worker log says it remounted).
//
// # Known anomalies
//
// A partition that porcupine finds not linearizable is checked again with relaxations that name
// known anomalies (see tolerance in model.go); its report says which explains it, or that none
// does:
//
//   - group-not-found: RemoveGroup answers OBJECT_NOT_FOUND, erasing nothing, while the group
//     still has members, when a removal of one member is in flight (the leader's unlink mark makes
//     PrepareRemoveGroup treat the marked member as absent and fail the whole group).
//   - restore-fenced: a Remove or RemoveGroup prepared before a SnapshotRestore and applied after
//     it answers OBJECT_NOT_FOUND, erasing nothing, though the restored state has the key (the
//     command fenced only by the object and group ids of the state it was prepared on). The state
//     epoch prevents it: every leader-prepared command carries the epoch it was checked against, a
//     restore advances the epoch, and apply refuses a command of another epoch so the leader
//     prepares it again; the relaxation names a regression.
//   - dirty-absent: a linearizable Get, Exist or Remove finds a present key absent because a
//     removal of it was prepared (marked) on the leader but never took effect: its proposal was
//     rejected at apply (a RemoveGroup that met a new member), or never committed (the leader was
//     paused, deposed or isolated first). The leader served uncommitted soft state.
//
// The relaxations are tried in that order, each adding to the ones before; a partition is named
// after the first that makes it linearizable. They fail a drill unless named in CHAOS_KNOWN
// (comma-separated).
//
// # Reading a report
//
// Each drill writes report/<seed>/ (gitignored):
//
//   - summary.txt: the verdict, the rerun command, the checks (violations by explanation, lost
//     writes, differing nodes, two-leader terms), operation counts by call and outcome, every
//     fault with the node it hit and its unavailability (injection to the return of the first
//     successful probe write called after it), and the median and maximum per fault kind.
//   - timeline.txt and timeline.svg: faults, heals, leader changes and failed probe stretches in
//     time order; the SVG has a row per node (killed, stopped, paused, isolated), the leader row
//     (coloured by node), every probe write (green ok, red failed) and the unavailability windows.
//   - linearizability-p<N>-<tenant>_<key>.html: porcupine's visualization of a partition that
//     is not linearizable (open it in a browser; hover for the states), and .txt beside it: the
//     model states after the longest partial linearization, the first operation that cannot be
//     placed, and the partition's history around it (* = linearized, + = unknown outcome).
//   - history.txt (when a check failed, or CHAOS_HISTORY=1): every operation, one per line: call
//     and return time in seconds from the start (+: unknown, open to the end of time), client,
//     partition, call, key, member, size, force, outcome, and the error of an unknown call.
//   - state-n<i>.txt (when nodes differ, or CHAOS_HISTORY=1): each node's state as read for the
//     comparison; diff them.
//   - logs/: every metad's and worker's output, restarts marked "=== start N".
//
// TestDrillMany also writes report/summary.txt: one row per seed and the totals, including the
// median and maximum unavailability after a leader kill over every drill.
package chaos
