package datadir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
	"metad/ha"
	"metad/store"
)

// RecoveryPeer is a plain value: one member of a recovered cluster, as a peers file lists it (the
// format of Consul's peers.json): {"id": "n1", "address": "127.0.0.1:6101", "non_voter": false}.
type RecoveryPeer struct {
	ID       string `json:"id"`
	Address  string `json:"address"`
	NonVoter bool   `json:"non_voter,omitempty"`
}

// ParsePeersFile parses a peers file: a JSON list of RecoveryPeer with unique ids and addresses and
// at least one voter.
func ParsePeersFile(data []byte) ([]RecoveryPeer, error) {
	var peers []RecoveryPeer
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&peers); err != nil {
		return nil, fmt.Errorf("%w: want a JSON list like [{\"id\":\"n1\",\"address\":\"127.0.0.1:6101\"}]: %v", ErrBadPeers, err)
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("%w: the list is empty", ErrBadPeers)
	}
	ids, addrs, voters := map[string]bool{}, map[string]bool{}, 0
	for i, p := range peers {
		if p.ID == "" {
			return nil, fmt.Errorf("%w: entry %d has no id", ErrBadPeers, i)
		}
		if _, _, err := net.SplitHostPort(p.Address); err != nil {
			return nil, fmt.Errorf("%w: %s: address %q: want host:port", ErrBadPeers, p.ID, p.Address)
		}
		if ids[p.ID] || addrs[p.Address] {
			return nil, fmt.Errorf("%w: %s (%s) listed twice", ErrBadPeers, p.ID, p.Address)
		}
		ids[p.ID], addrs[p.Address] = true, true
		if !p.NonVoter {
			voters++
		}
	}
	if voters == 0 {
		return nil, fmt.Errorf("%w: no voter", ErrBadPeers)
	}
	return peers, nil
}

// RecoveryResult is a plain value. It describes a recovered data dir.
type RecoveryResult struct {
	Index, Term uint64 // the last entry recovered (the new snapshot's position)
	Objects     int64
	Tenants     int
	Members     int
}

// Recover rewrites the Raft configuration of a stopped node's data dir to peers, for when a cluster
// has lost its quorum for good (raft.RecoverCluster): it replays the newest snapshot and every log
// entry after it into a fresh state machine built with cfg (zero: store.DefaultConfig()), writes
// that state as a new snapshot carrying the new configuration, and compacts the log. Start metad on
// the data dir afterwards; every member of peers must be recovered with the same file (or, better,
// recover one node and add the others as new members). A data dir with no Raft state gives
// ErrNoRaftState; one that a running metad holds gives ErrInUse.
func Recover(dataDir string, peers []RecoveryPeer, cfg store.Config, log *slog.Logger) (*RecoveryResult, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.LeaseTTL == 0 {
		cfg = store.DefaultConfig()
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("%w: the list is empty", ErrBadPeers)
	}
	kind, err := ha.LogStoreOf(dataDir)
	if err != nil {
		return nil, fmt.Errorf("datadir: %w", err)
	}
	if kind == ha.LogStoreAuto { // opening it would create one
		return nil, fmt.Errorf("%w: %s holds neither %s/ nor %s", ErrNoRaftState, dataDir, ha.WALDir, ha.RaftDBFile)
	}
	start := time.Now()
	hlog := ha.NewRaftLogger(log)
	stores, err := ha.OpenLogStores(dataDir, kind, hlog)
	if err != nil {
		if errors.Is(err, ha.ErrDataDirInUse) {
			return nil, fmt.Errorf("%w: %v", ErrInUse, err)
		}
		return nil, fmt.Errorf("datadir: %w", err)
	}
	defer stores.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dataDir, ha.SnapshotsDir), ha.DefaultConfig().SnapshotRetain, hlog)
	if err != nil {
		return nil, fmt.Errorf("datadir: snapshot store: %w", err)
	}
	var configuration raft.Configuration
	for _, p := range peers {
		s := raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Address)}
		if p.NonVoter {
			s.Suffrage = raft.Nonvoter
		}
		configuration.Servers = append(configuration.Servers, s)
	}
	_, trans := raft.NewInmemTransport(configuration.Servers[0].Address)
	defer trans.Close()
	f, err := fsm.New(cfg, log)
	if err != nil {
		return nil, err
	}
	rc := raft.DefaultConfig()
	rc.LocalID = configuration.Servers[0].ID
	rc.Logger = hlog
	if has, err := raft.HasExistingState(stores.Log, stores.Stable, snaps); err != nil {
		return nil, fmt.Errorf("datadir: read raft state: %w", err)
	} else if !has {
		return nil, fmt.Errorf("%w: %s", ErrNoRaftState, dataDir)
	}
	log.Info("recover: replaying the snapshot and the log", "data_dir", dataDir, "members", len(peers))
	if err := raft.RecoverCluster(rc, f, stores.Log, stores.Stable, snaps, trans, configuration); err != nil {
		return nil, fmt.Errorf("datadir: recover: %w", err)
	}
	if err := stores.Close(); err != nil {
		return nil, fmt.Errorf("datadir: close the Raft log store of %s: %w", dataDir, err)
	}
	res := &RecoveryResult{Members: len(peers)}
	if metas, err := snaps.List(); err == nil && len(metas) > 0 {
		res.Index, res.Term = metas[0].Index, metas[0].Term
	}
	for _, t := range f.Store().Tenants().List() {
		if t.Life() != store.TenantRemoved {
			res.Objects += t.Directory().Objects()
			res.Tenants++
		}
	}
	log.Info("recover: done", "index", res.Index, "term", res.Term, "objects", res.Objects, "took", time.Since(start))
	return res, nil
}
