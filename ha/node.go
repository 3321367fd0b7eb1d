package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
)

// Node is one metad cluster member: hashicorp/raft over its data dir's log and stable store
// (raft-wal, or raft-boltdb in a data dir that has it: logstore.go), a file snapshot store and the
// TCP transport (mutual TLS under PeerTLS), or in tests a given transport and log store
// (Config.Transport, Config.LogStores), with the proposer, the read barrier and leader soft state
// on top. Concurrency contract: every exported method is safe for
// concurrent use; Shutdown may be called once, after which calls fail with ErrShutdown.
type Node struct {
	cfg  Config
	log  *slog.Logger
	sm   StateMachine
	raft *raft.Raft

	stores    *LogStores // closed on stop unless ownStores is false (Config.LogStores)
	ownStores bool
	snaps     *raft.FileSnapshotStore
	transport raft.Transport // TCP (*raft.NetworkTransport), or Config.Transport

	proposer *Proposer
	barrier  *readBarrier
	metrics  *metrics
	applied  *appliedWaiter

	ready    *readiness    // the term whose term-start barrier this node, leading, has applied
	lease    *leaderLease  // the leader lease (lease.go)
	restore  sync.Mutex    // one RestoreSnapshot at a time (each advances the state epoch by one)
	stop     chan struct{} // closed by Shutdown
	stopCtx  context.Context
	stopped  context.CancelFunc // cancels stopCtx; called by Shutdown with close(stop)
	wg       sync.WaitGroup
	shutOnce sync.Once

	// lastSnap caches the index of the newest snapshot on disk for Status, which loops call many
	// times a second (the arena keeper every few milliseconds, every ping, every watch response):
	// listing the snapshot directory reads a directory and a metadata file per snapshot.
	lastSnap struct {
		sync.Mutex
		index uint64
		at    time.Time
	}
}

// snapshotListTTL is how old Status's figure of the newest snapshot may be.
const snapshotListTTL = time.Second

// lastSnapshotIndex returns the index of the newest snapshot on disk (0: none), listed at most
// once a snapshotListTTL, and again at once after this node restored or took one
// (snapshotsChanged); a scheduled snapshot shows within the TTL.
func (n *Node) lastSnapshotIndex() uint64 {
	n.lastSnap.Lock()
	defer n.lastSnap.Unlock()
	if now := time.Now(); n.lastSnap.at.IsZero() || now.Sub(n.lastSnap.at) >= snapshotListTTL {
		n.lastSnap.at = now
		if metas, err := n.snaps.List(); err == nil && len(metas) > 0 {
			n.lastSnap.index = metas[0].Index
		}
	}
	return n.lastSnap.index
}

// snapshotsChanged makes the next Status list the snapshots again.
func (n *Node) snapshotsChanged() {
	n.lastSnap.Lock()
	n.lastSnap.at = time.Time{}
	n.lastSnap.Unlock()
}

// applyNotifier wraps the state machine so the read barrier learns what has been applied.
type applyNotifier struct {
	StateMachine
	applied *appliedWaiter
	// gate, when set, runs on the apply goroutine before each entry or batch is applied (tests
	// hold apply back with it; nil in a daemon).
	gate func()
	// restored runs after a restore (an installed or a restored snapshot, stored before Raft
	// hands it to the state machine).
	restored func()
}

var _ raft.BatchingFSM = applyNotifier{}

func (a applyNotifier) Apply(l *raft.Log) interface{} {
	if a.gate != nil {
		a.gate()
	}
	r := a.StateMachine.Apply(l)
	a.applied.advance(l.Index)
	return r
}

func (a applyNotifier) ApplyBatch(logs []*raft.Log) []interface{} {
	if a.gate != nil {
		a.gate()
	}
	r := a.StateMachine.ApplyBatch(logs)
	if len(logs) > 0 {
		a.applied.advance(logs[len(logs)-1].Index)
	}
	return r
}

func (a applyNotifier) Restore(rc io.ReadCloser) error {
	if err := a.StateMachine.Restore(rc); err != nil {
		return err
	}
	idx, _ := a.StateMachine.Applied()
	a.applied.advance(idx)
	a.restored()
	return nil
}

// NewNode opens (or creates) the data dir, starts Raft over sm, and bootstraps a new cluster when
// cfg.Bootstrap is set and the data dir holds no Raft state yet.
func NewNode(cfg Config, sm StateMachine, log *slog.Logger) (*Node, error) {
	return newNode(cfg, sm, log, nil)
}

// newNode is NewNode whose state machine runs applyGate (if not nil) before it applies anything.
func newNode(cfg Config, sm StateMachine, log *slog.Logger, applyGate func()) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("ha: data dir: %w", err)
	}
	n := &Node{cfg: cfg, log: log, sm: sm, applied: newAppliedWaiter(), ready: newReadiness(), stop: make(chan struct{}),
		lease:   &leaderLease{dur: cfg.HeartbeatTimeout / 2},
		metrics: newMetrics()}
	n.stopCtx, n.stopped = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			n.closeStores()
		}
	}()
	var err error
	hlog := NewRaftLogger(log)
	if cfg.LogStores != nil {
		n.stores = cfg.LogStores
	} else if n.stores, err = OpenLogStores(cfg.DataDir, cfg.LogStore, hlog); err != nil {
		return nil, err
	} else {
		n.ownStores = true
	}
	log.Info("raft log store", "kind", n.stores.Kind, "data_dir", cfg.DataDir)
	if n.snaps, err = raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.DataDir, SnapshotsDir), cfg.SnapshotRetain, hlog); err != nil {
		return nil, fmt.Errorf("ha: snapshot store: %w", err)
	}
	if cfg.Transport != nil {
		n.transport = cfg.Transport
	} else {
		// A port of 0 (tests) binds any free port and advertises what it bound.
		var adv net.Addr
		if !strings.HasSuffix(cfg.PeerAddr, ":0") {
			if adv, err = net.ResolveTCPAddr("tcp", cfg.PeerAddr); err != nil {
				return nil, fmt.Errorf("ha: peer address %q: %w", cfg.PeerAddr, err)
			}
		}
		nt, err := newPeerTransport(cfg, adv, hlog, log, n.metrics.peerRefused)
		if err != nil {
			return nil, fmt.Errorf("ha: listen on %s: %w", cfg.PeerListen, err)
		}
		n.transport = nt
	}
	n.cfg.PeerAddr = string(n.transport.LocalAddr())
	rc := n.raftConfig(hlog)
	if cfg.Bootstrap && len(cfg.InitialCluster) > 0 {
		has, err := raft.HasExistingState(n.stores.Log, n.stores.Stable, n.snaps)
		if err != nil {
			return nil, fmt.Errorf("ha: read raft state: %w", err)
		}
		if !has {
			if err := cfg.validateNew(); err != nil {
				return nil, fmt.Errorf("ha: bootstrap: %w", err)
			}
			servers := make([]raft.Server, len(cfg.InitialCluster))
			for i, p := range cfg.InitialCluster {
				servers[i] = raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.Name), Address: raft.ServerAddress(p.PeerAddr)}
			}
			if err := raft.BootstrapCluster(rc, n.stores.Log, n.stores.Stable, n.snaps, n.transport, raft.Configuration{Servers: servers}); err != nil {
				return nil, fmt.Errorf("ha: bootstrap: %w", err)
			}
			log.Info("bootstrapped a new cluster", "members", len(servers))
		}
	}
	// The log cache keeps recent entries in memory (LogCacheEntries), so replication to followers
	// does not read them back from the log store.
	logs, err := raft.NewLogCache(LogCacheEntries, n.stores.Log)
	if err != nil {
		return nil, fmt.Errorf("ha: log cache: %w", err)
	}
	if n.raft, err = raft.NewRaft(rc, applyNotifier{StateMachine: sm, applied: n.applied, gate: applyGate, restored: n.snapshotsChanged}, logs, n.stores.Stable, n.snaps, n.transport); err != nil {
		return nil, fmt.Errorf("ha: start raft: %w", err)
	}
	idx, _ := sm.Applied()
	n.applied.advance(idx)
	n.proposer = newProposer(n.raft, cfg, n.Leader)
	n.proposer.ready = n.isReady
	n.proposer.onEntry = func(c int) { n.metrics.entryCommands.Observe(float64(c)) }
	n.proposer.onDone = func(d time.Duration) { n.metrics.commitApply.Observe(d.Seconds()) }
	n.barrier = &readBarrier{raft: n.raft, applied: n.applied, waitReady: n.LeaderReady, ready: n.readReady, stop: n.stop,
		observe: func(verify, wait time.Duration) {
			n.metrics.readVerify.Observe(verify.Seconds())
			n.metrics.readApply.Observe(wait.Seconds())
		},
		confirmed: n.lease.confirmed, term: n.ready.term.Load, leased: n.leaseRead}
	n.wg.Add(1)
	go n.watchLeadership()
	ok = true
	return n, nil
}

func (n *Node) raftConfig(hlog hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(n.cfg.Name)
	rc.HeartbeatTimeout = n.cfg.HeartbeatTimeout
	rc.ElectionTimeout = n.cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = n.cfg.LeaderLeaseTimeout
	rc.CommitTimeout = n.cfg.CommitTimeout
	rc.SnapshotThreshold = n.cfg.SnapshotThreshold
	rc.SnapshotInterval = n.cfg.SnapshotInterval
	rc.TrailingLogs = n.cfg.TrailingLogs
	rc.BatchApplyCh = true
	rc.Logger = hlog
	return rc
}

// PeerAddr returns the address other members dial (the bound one when the config asked for port 0).
func (n *Node) PeerAddr() string { return n.cfg.PeerAddr }

// BootstrapCluster makes this node, which must hold no Raft state, bootstrap a cluster of peers.
// Used when addresses are known only after the nodes have started (tests); a daemon bootstraps
// from Config.InitialCluster instead.
func (n *Node) BootstrapCluster(peers []Peer) error {
	servers := make([]raft.Server, len(peers))
	for i, p := range peers {
		servers[i] = raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.Name), Address: raft.ServerAddress(p.PeerAddr)}
	}
	return n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
}

// watchLeadership follows this node's leadership: on gaining it, the leadership hook runs, the
// term-start barrier is applied before this node decides anything from its state (linearizable
// reads, removal checks, refusals), and the leader records its own client address; on losing it,
// readiness ends and the hook runs.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	ch := n.raft.LeaderCh()
	var term uint64 // the term this node last gained leadership in
	for {
		select {
		case <-n.stop:
			return
		case isLeader := <-ch:
			n.ready.set(0)
			n.lease.transfer(false)
			n.metrics.leaderChanges.Inc()
			if isLeader {
				term = n.raft.CurrentTerm()
				n.takeOffice(term)
			} else if n.cfg.OnLeadership != nil {
				n.cfg.OnLeadership(false, term)
			}
		}
	}
}

// takeOffice makes this node ready in term, which it now leads: the leadership hook runs first;
// then, once its term-start barrier is applied, its state holds everything committed before the
// term. A barrier that fails while the node still leads in that term is tried again (requests wait
// for readiness meanwhile); one that fails because the term ended or the node stops gives up.
func (n *Node) takeOffice(term uint64) {
	if n.cfg.OnLeadership != nil {
		n.cfg.OnLeadership(true, term)
	}
	retry := 10 * time.Millisecond
	for {
		// Raft may never answer a barrier it took just before it shut down (the leader loop gone),
		// so the wait ends with the node: Shutdown waits for this goroutine.
		err := waitFuture(n.stopCtx, n.raft.Barrier(n.cfg.ApplyTimeout))
		if err == nil {
			break
		}
		if n.stopCtx.Err() != nil || !n.leadsIn(term) {
			n.log.Warn("term-start barrier failed; not ready in this term", "term", term, "err", err)
			return
		}
		n.log.Warn("term-start barrier failed; trying again", "term", term, "err", err, "in", retry)
		select {
		case <-time.After(retry):
		case <-n.stop:
			return
		}
		retry = min(2*retry, time.Second)
	}
	if !n.leadsIn(term) {
		return
	}
	n.applied.advance(n.raft.AppliedIndex())
	n.ready.set(term)
	n.log.Info("leader ready", "term", term)
	if !n.SelfRecorded() {
		ctx, cancel := context.WithTimeout(n.stopCtx, n.cfg.ApplyTimeout)
		defer cancel()
		if err := n.RecordMember(ctx, n.Self()); err != nil {
			n.log.Warn("could not record this leader's addresses (the server's loop asks again)", "err", err)
		}
	}
}

// Self returns this node's member record as it should be recorded (SelfRecorded): its addresses
// and its binary's feature level.
func (n *Node) Self() fsm.Member {
	return fsm.Member{Name: n.cfg.Name, PeerAddr: n.cfg.PeerAddr, ClientAddr: n.cfg.ClientAddr, Level: fsm.FeatureLevel}
}

// SelfRecorded reports whether the member records this node has applied hold its own current peer
// and client addresses and its binary's feature level. A member whose record is missing or stale
// asks the leader to record it (RecordMember; package server does, whichever node leads), and a
// new leader records its own.
func (n *Node) SelfRecorded() bool {
	m, ok := n.sm.Member(n.cfg.Name)
	return ok && m == n.Self()
}

// RecordMember records a member's record (peer and client addresses, feature level) in the
// replicated member records (leader only). Its name must be a server of Raft's configuration
// (MEMBER_NOT_FOUND otherwise) and a valid member name (INVALID_PARAMS: a member named before the
// rules goes unrecorded); a record that already holds these values is left as it is, with no log
// entry.
func (n *Node) RecordMember(ctx context.Context, rec fsm.Member) error {
	name, peerAddr, clientAddr := rec.Name, rec.PeerAddr, rec.ClientAddr
	if err := n.leaderOnly(); err != nil {
		return err
	}
	if _, err := n.member(name); err != nil {
		return err
	}
	if err := invalidMember(fsm.ValidateMemberName(name)); err != nil {
		// A member named before the rules: apply would refuse its record, so do not propose it.
		return err
	}
	if m, ok := n.sm.Member(name); ok && m == rec {
		return nil
	}
	res, err := n.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_SetMember{SetMember: &metadv1.SetMember{
		Name: name, PeerAddress: peerAddr, ClientAddress: clientAddr, FeatureLevel: rec.Level}}})
	if err != nil {
		return err
	}
	return res.Err()
}

// leadsIn reports whether this node leads in term (a node leads at most once per term).
func (n *Node) leadsIn(term uint64) bool {
	return n.raft.State() == raft.Leader && n.raft.CurrentTerm() == term
}

// isReady reports whether this node leads in the term whose term-start barrier it has applied.
func (n *Node) isReady() bool {
	t := n.ready.term.Load()
	return t != 0 && n.leadsIn(t)
}

// readReady is nil when this node is ready now, *NotLeaderError otherwise (ErrShutdown once it
// stops).
func (n *Node) readReady() error {
	select {
	case <-n.stop:
		return ErrShutdown
	default:
	}
	if !n.isReady() {
		name, addr := n.Leader()
		return &NotLeaderError{LeaderName: name, LeaderAddr: addr}
	}
	return nil
}

// Ready reports whether this node leads and has applied its term-start barrier now: what
// LeaderReady waits for, without waiting (and without counting as a waiter).
func (n *Node) Ready() bool { return n.isReady() }

// LeaderReady returns nil once this node leads and has applied its term-start barrier: from then
// on its state holds everything committed before its term, and it may decide a request from that
// state (check a removal, refuse a write). While it leads but is not ready yet it waits, bounded
// by ctx and the node's life (ErrShutdown); it fails with *NotLeaderError when the node does not
// lead or stops leading meanwhile. It does not confirm leadership: a deposed leader that has not
// noticed yet is still ready (ReadBarrier confirms).
func (n *Node) LeaderReady(ctx context.Context) error {
	return n.ready.wait(ctx, n.stop, func() (bool, error) {
		if err := n.readReady(); err == nil || errors.Is(err, ErrShutdown) || n.raft.State() != raft.Leader {
			return true, err
		}
		return false, nil // leading, the term-start barrier not applied yet
	})
}

// Propose replicates one command through the proposer and returns its typed result.
//
// A command that needs a feature level above the cluster's (fsm.LevelOf, ClusterLevel) is not
// proposed: the error is a *FeatureLevelError (errors.Is ErrFeatureLevel), and no entry exists.
func (n *Node) Propose(ctx context.Context, cmd *metadv1.Command) (fsm.Result, error) {
	if need := fsm.LevelOf(cmd); need > 1 {
		if have, member := n.ClusterLevel(); have < need {
			return fsm.Result{}, &FeatureLevelError{Command: cmd, Need: need, Have: have, Member: member}
		}
	}
	return n.proposer.Propose(ctx, cmd)
}

// ClusterLevel returns the cluster's feature level: the lowest that the members of the Raft
// configuration (as this node knows it) record, a member with no recorded level counting as 1;
// member names one at that level ("" when the configuration is unknown, and the level is then 1).
func (n *Node) ClusterLevel() (level uint32, member string) {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 1, ""
	}
	level = fsm.FeatureLevel
	for _, s := range f.Configuration().Servers {
		rec, _ := n.sm.Member(string(s.ID))
		if l := max(rec.Level, 1); l < level || member == "" && l == level {
			level, member = l, string(s.ID)
		}
	}
	return level, member
}

// Proposer returns the proposer (eviction reserves slots on it).
func (n *Node) Proposer() *Proposer { return n.proposer }

// ReadBarrier returns once a linearizable read may be served from this node's state: leadership
// confirmed by a heartbeat round and everything committed before the call applied. A leader that is
// not ready yet waits for it (see LeaderReady); a node that does not lead fails with
// *NotLeaderError.
func (n *Node) ReadBarrier(ctx context.Context) error {
	err := n.barrier.wait(ctx)
	switch {
	case err == nil, errors.Is(err, ErrNotLeader), errors.Is(err, ErrShutdown), ctx.Err() != nil:
		return err
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		// A read is never applied, so losing leadership during the round is plainly not-leader.
		name, addr := n.Leader()
		return &NotLeaderError{LeaderName: name, LeaderAddr: addr}
	}
	return n.mapRaftErr(err)
}

// IsLeader reports whether this node is the leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the leader's name and client address as far as this node knows ("" if none).
func (n *Node) Leader() (name, clientAddr string) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return "", ""
	}
	name = string(id)
	if name == n.cfg.Name {
		return name, n.cfg.ClientAddr
	}
	m, _ := n.sm.Member(name)
	return name, m.ClientAddr
}

// LeaderReachable reports whether this node may expect the leader it knows of to answer: it is
// the leader itself, or it has heard from a leader (an append or a heartbeat, sent every tenth of
// the heartbeat timeout) within one heartbeat timeout. A follower past that has missed about ten
// heartbeats and will start an election within one more timeout; a call forwarded to that leader
// meanwhile would wait for a node that is gone, paused or cut off. A candidate that a leadership
// transfer started heard from the leader just before, so it still counts the leader as reachable
// (the transfer's caller is waiting on that leader's answer).
func (n *Node) LeaderReachable() bool {
	if n.raft.State() == raft.Leader {
		return true
	}
	last := n.raft.LastContact()
	return !last.IsZero() && time.Since(last) <= n.cfg.HeartbeatTimeout
}

// WaitLeader polls until some leader is known or ctx ends.
func (n *Node) WaitLeader(ctx context.Context) (string, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if name, _ := n.Leader(); name != "" {
			return name, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-t.C:
		}
	}
}

// LogStoreStats returns the raft-boltdb log store's counters (free and pending pages, the
// freelist's size, transactions); ok is false on raft-wal, which keeps no freelist.
func (n *Node) LogStoreStats() (st bbolt.Stats, ok bool) { return n.stores.BoltStats() }

// LogStoreKind is the kind of this node's Raft log store (LogStoreWAL or LogStoreBolt).
func (n *Node) LogStoreKind() string { return n.stores.Kind }

// Status returns this node's view of itself and the cluster.
func (n *Node) Status() Status {
	name, addr := n.Leader()
	st := Status{Name: n.cfg.Name, ClientAddr: n.cfg.ClientAddr, PeerAddr: n.cfg.PeerAddr,
		Role: roleOf(n.raft.State()), Term: n.raft.CurrentTerm(), CommitIndex: n.raft.CommitIndex(),
		LastLogIndex: n.raft.LastIndex(), LeaderName: name, LeaderAddr: addr}
	// The state machine's index, or Raft's when ahead: the entries that change no state (barriers,
	// no-ops) never reach the state machine, and would otherwise leave it below the commit index
	// of an idle cluster for good.
	st.AppliedIndex, _ = n.sm.Applied()
	st.AppliedIndex = max(st.AppliedIndex, n.raft.AppliedIndex())
	st.LastSnapshotIndex = n.lastSnapshotIndex()
	st.Objects = n.sm.Objects()
	return st
}

func roleOf(s raft.RaftState) Role {
	switch s {
	case raft.Leader:
		return RoleLeader
	case raft.Candidate:
		return RoleCandidate
	case raft.Shutdown:
		return RoleShutdown
	}
	return RoleFollower
}

// TransferLeader hands leadership to the named member (any up-to-date one when to is empty) and
// returns the new leader's name. Naming this node, the leader, is a no-op that returns its name:
// leadership is already where it was asked to be, so a retried transfer succeeds.
func (n *Node) TransferLeader(ctx context.Context, to string) (string, error) {
	if err := n.leaderOnly(); err != nil {
		return "", err
	}
	var f raft.Future
	switch to {
	case "":
		n.lease.transfer(true)
		f = n.raft.LeadershipTransfer()
	case n.cfg.Name:
		return n.cfg.Name, nil
	default:
		m, err := n.member(to)
		if err != nil {
			return "", err
		}
		n.lease.transfer(true)
		f = n.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(m.PeerAddr))
	}
	if err := f.Error(); err != nil {
		n.lease.transfer(false)
		return "", n.mapRaftErr(err)
	}
	name, err := n.WaitLeader(ctx)
	return name, err
}

func (n *Node) mapRaftErr(err error) error {
	if err == nil {
		return nil
	}
	return n.proposer.mapErr(err)
}

func timeoutOf(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return def
}

// TransferIfLeader hands leadership to another member if this node leads and has peers (the second
// step of a graceful stop, after health turns NOT_SERVING and before the gRPC server stops).
func (n *Node) TransferIfLeader() {
	if n.raft.State() == raft.Leader && n.hasPeers() {
		n.lease.transfer(true)
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			n.lease.transfer(false)
			n.log.Warn("leadership transfer before shutdown failed", "err", err)
		} else {
			n.log.Info("handed leadership over before shutdown")
		}
	}
}

// Shutdown transfers leadership away if this node leads (so clients see a short pause, not an
// election timeout), stops Raft and closes the stores.
func (n *Node) Shutdown() error { return n.stopNode(true) }

// Kill stops the node abruptly, as a crash would: no leadership transfer, Raft and the stores
// stopped at once. For tests (package hatest stops members so); a daemon calls Shutdown.
func (n *Node) Kill() error { return n.stopNode(false) }

func (n *Node) stopNode(handOver bool) error {
	var err error
	n.shutOnce.Do(func() {
		if handOver {
			n.TransferIfLeader()
		}
		close(n.stop)
		n.stopped()
		n.proposer.Close()
		err = n.raft.Shutdown().Error()
		n.wg.Wait()
		n.closeStores()
	})
	return err
}

func (n *Node) hasPeers() bool {
	ms, err := n.Members()
	return err == nil && len(ms) > 1
}

func (n *Node) closeStores() {
	if nt, ok := n.transport.(*raft.NetworkTransport); ok {
		nt.CloseStreams() // pooled outgoing connections; Close alone leaves them open
	}
	if c, ok := n.transport.(raft.WithClose); ok {
		_ = c.Close()
	}
	if n.stores != nil && n.ownStores {
		_ = n.stores.Close()
	}
}

// LogCacheEntries is how many of the latest log entries Raft's log cache keeps in memory. On the
// leader it holds each by a pointer into the entry's future, with the FSM's response, which is why
// the proposer detaches the results once it has them (Proposer.send).
const LogCacheEntries = 1024
