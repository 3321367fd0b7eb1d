package ha

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
)

// Peer is one member of the initial cluster.
type Peer struct {
	Name     string
	PeerAddr string
}

// Config configures one Node. Durations are wall-clock; addresses are host:port.
type Config struct {
	Name    string // Raft server name (ID); unique in the cluster
	DataDir string // the Raft log store (wal/ or raft.db: LogStore) and snapshots/ live here
	// LogStore (log_store) is the kind of Raft log store: LogStoreAuto (the default) opens what the
	// data dir holds and creates raft-wal in an empty one; LogStoreWAL or LogStoreBolt must match
	// what the data dir holds, or is created in an empty one (logstore.go).
	LogStore   string
	PeerListen string // address the Raft transport binds
	PeerAddr   string // address other members dial (defaults to PeerListen)
	ClientAddr string // this node's gRPC address, recorded so others can name and reach the leader

	// PeerTLS, when set, puts the Raft transport on mutual TLS: every peer connection presents a
	// certificate naming a member, and every RPC on an accepted connection must name that member
	// as its sender (see PeerTLS). nil: plaintext TCP.
	PeerTLS *PeerTLS

	InitialCluster []Peer // members of a new cluster (must include this node when bootstrapping)
	Bootstrap      bool   // true for --initial-cluster-state new: bootstrap if the data dir is empty

	HeartbeatTimeout   time.Duration // follower -> candidate after this silence (randomized up to 2x). Default 400ms
	ElectionTimeout    time.Duration // candidate's election timeout. Default 400ms
	LeaderLeaseTimeout time.Duration // leader steps down without quorum contact for this long. Default 200ms
	CommitTimeout      time.Duration // heartbeat when idle. Default 20ms
	ApplyTimeout       time.Duration // bound on enqueueing one entry to Raft. Default 5s

	SnapshotThreshold uint64        // entries between snapshots. Default 65536
	SnapshotInterval  time.Duration // how often to check the threshold. Default 30s
	TrailingLogs      uint64        // entries kept after a snapshot. Default 10240
	SnapshotRetain    int           // snapshot files kept. Default 2

	// The proposer's pipeline (see doc.go, "Writes: the proposer"). MaxInflight bounds the commands
	// proposed and not yet applied (the proposer's slots): a bound on what waits, not a throughput
	// setting. MaxEntriesOut and MaxBatch are 0 by default: derived from GOMAXPROCS and the commit
	// latency and arrival rate the proposer measures (entries in flight: up to two, one per
	// pipeline stage, no more than GOMAXPROCS, a further one opened only when a round's worth of
	// commands waits; commands per entry: MaxInflight shared by the entries that may be in flight).
	// A value above 0 fixes it: that many entries in flight whenever commands wait, that many
	// commands per entry at most.
	MaxInflight   int // proposer slots. Default 4096
	MaxBatch      int // commands coalesced into one log entry at most. Default 0 (derived)
	MaxEntriesOut int // log entries in flight from the proposer at once. Default 0 (derived)

	// OnLeadership, when set, is the node's one leadership hook: the place where the caller starts
	// and drops what belongs to a leader's term (leader soft state). The node calls it on its
	// leadership goroutine, synchronously and never twice at once:
	//
	//   - with leading=true and the term it now leads, when it gains leadership, before it issues
	//     the term-start barrier: nothing has been decided from this node's state in the term yet
	//     (it is not ready, so linearizable reads, removal checks and refusals wait), and once the
	//     hook returns the barrier is applied and the node becomes ready;
	//   - with leading=false and the term it last gained, when it loses leadership, after it has
	//     stopped being ready.
	//
	// Raft may fold changes that come close together into the last one, so the hook can see a gain
	// without the loss before it, or a loss without the gain before it (term 0 when this node has
	// not led since it started). The hook must return promptly (the node takes office only after
	// it) and must not wait for this node's readiness, barrier or proposals.
	OnLeadership func(leading bool, term uint64)

	// Transport and LogStores run a member without sockets or a log on disk: tests that run a
	// cluster in one process set them (package hatest: raft's InmemTransport and InmemLogStores);
	// a daemon leaves both nil, and the node then uses the TCP transport and its data dir's log.
	//
	// Transport, when set, carries this member's Raft RPCs in place of the TCP transport: nothing
	// listens on PeerListen (which may be empty), PeerAddr is the transport's LocalAddr, PeerTLS
	// must be nil, and the node closes the transport (when it has a Close method) as it stops.
	Transport raft.Transport
	// LogStores, when set, is the Raft log and stable store in place of the data dir's (LogStore
	// is then not consulted). The node does not close it: a member started again over the same
	// value finds its log, term and vote as a restarted process finds its data dir's. The snapshot
	// store stays in the data dir.
	LogStores *LogStores
}

// DefaultConfig returns the defaults documented on Config; the caller sets names and addresses.
func DefaultConfig() Config {
	return Config{
		HeartbeatTimeout:   400 * time.Millisecond,
		ElectionTimeout:    400 * time.Millisecond,
		LeaderLeaseTimeout: 200 * time.Millisecond,
		CommitTimeout:      20 * time.Millisecond,
		ApplyTimeout:       5 * time.Second,
		SnapshotThreshold:  65536,
		SnapshotInterval:   30 * time.Second,
		TrailingLogs:       10240,
		SnapshotRetain:     2,
		MaxInflight:        4096,
	}
}

// Validate checks the config and fills PeerAddr from PeerListen (with a Transport: from its
// address).
func (c *Config) Validate() error {
	var errs []error
	// Names are checked in full only when a new cluster is made (validateNew): a member named
	// before the rules of SEMANTICS section 1 keeps starting.
	if c.Name == "" {
		errs = append(errs, errors.New("name: must be set"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir: must be set"))
	}
	if !ValidLogStore(c.LogStore) {
		errs = append(errs, fmt.Errorf("log_store %q: want %q, %q or empty (what the data dir holds; %q for a new one)",
			c.LogStore, LogStoreWAL, LogStoreBolt, LogStoreWAL))
	}
	if c.Transport != nil {
		if c.PeerTLS != nil {
			errs = append(errs, errors.New("peer_tls: not with a given transport"))
		}
		c.PeerAddr = string(c.Transport.LocalAddr())
	} else if _, _, err := net.SplitHostPort(c.PeerListen); err != nil {
		errs = append(errs, fmt.Errorf("listen_peer %q: %v", c.PeerListen, err))
	}
	if c.PeerTLS != nil && c.Transport == nil {
		if err := c.PeerTLS.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.PeerAddr == "" {
		c.PeerAddr = c.PeerListen
	}
	if c.Bootstrap && len(c.InitialCluster) > 0 {
		found := false
		seen := map[string]bool{}
		for _, p := range c.InitialCluster {
			if seen[p.Name] {
				errs = append(errs, fmt.Errorf("initial_cluster: %s named twice", p.Name))
			}
			seen[p.Name] = true
			if p.Name == c.Name {
				found = true
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("initial_cluster: does not include this node %q", c.Name))
		}
	}
	if c.HeartbeatTimeout < 5*time.Millisecond || c.ElectionTimeout < 5*time.Millisecond {
		errs = append(errs, errors.New("heartbeat_timeout and election_timeout: at least 5ms"))
	}
	if c.LeaderLeaseTimeout <= 0 || c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		errs = append(errs, errors.New("leader_lease_timeout: must be positive and at most heartbeat_timeout"))
	}
	if c.MaxInflight < 1 {
		errs = append(errs, errors.New("max_inflight: at least 1"))
	}
	if c.MaxBatch < 0 || c.MaxEntriesOut < 0 {
		errs = append(errs, errors.New("max_batch, max_entries_out: 0 (derived) or more"))
	}
	return errors.Join(errs...)
}

// validateNew checks what only a new cluster must meet: every member name of the initial cluster
// (this node's among them) is a valid member name (fsm.ValidateMemberName). NewNode calls it
// before it bootstraps an empty data dir.
func (c *Config) validateNew() error {
	var errs []error
	for _, p := range c.InitialCluster {
		if err := invalidMember(fsm.ValidateMemberName(p.Name)); err != nil {
			errs = append(errs, fmt.Errorf("initial_cluster: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ParseInitialCluster parses "n1=127.0.0.1:6101,n2=127.0.0.1:6102".
func ParseInitialCluster(s string) ([]Peer, error) {
	var out []Peer
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, addr, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("initial_cluster: %q is not name=host:port", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("initial_cluster: %q: %v", part, err)
		}
		out = append(out, Peer{Name: name, PeerAddr: addr})
	}
	return out, nil
}
