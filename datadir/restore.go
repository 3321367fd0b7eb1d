package datadir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"

	"metad/fsm"
	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// RestoreOptions is a plain value: what Restore needs, the snapshot file and the new member.
type RestoreOptions struct {
	Snapshot string       // path of the snapshot file
	DataDir  string       // the new member's data dir: must not exist or be empty
	Name     string       // the new member's name; one of Peers
	Peers    []ha.Peer    // the new cluster's members, as --initial-cluster names them
	Store    store.Config // checks the state as the daemon will load it (zero: store.DefaultConfig())
	// LogStore is the kind of Raft log store to create (ha.LogStoreAuto: raft-wal, as metad creates
	// in a new data dir).
	LogStore string
}

// Restore creates a new cluster member's data dir from a snapshot file, offline: the file is
// verified completely first (a refused file wraps ha.ErrInvalidSnapshot), a data dir that holds
// anything is refused (ErrNotEmpty), and on any failure the data dir is left as it was found. The
// data dir gets the Raft log store of o.LogStore (raft-wal by default) with what
// ha.Node.BootstrapCluster writes for Peers (Raft term 1), an empty log, and the snapshot in the
// file snapshot store at the file's index (at least 1) with the configuration of Peers, so `metad` started on it comes up with the snapshot's state whatever
// --initial-cluster-state says. The file's member records describe the cluster it came from and
// are left out; each leader records its own addresses. Run it with the same file for every member.
func Restore(o RestoreOptions, log *slog.Logger) (*metadv1.SnapshotHeader, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	configuration, self, err := restoreConfiguration(o)
	if err != nil {
		return nil, err
	}
	if o.Store.LeaseTTL == 0 {
		o.Store = store.DefaultConfig()
	}
	created, err := emptyDataDir(o.DataDir)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			cleanDataDir(o.DataDir, created)
		}
	}()

	start := time.Now()
	f, err := os.Open(o.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("datadir: snapshot file: %w", err)
	}
	defer f.Close()
	log.Info("restore: verifying the snapshot", "file", o.Snapshot)
	// The format first (a damaged file is reported as such), then the state it describes.
	if _, err := snapshot.Inspect(bufio.NewReaderSize(f, 1<<20)); err != nil {
		return nil, invalid(err)
	}
	h, err := verify(f, o.Store)
	if err != nil {
		return nil, err
	}
	log.Info("restore: verified", "index", h.GetIndex(), "term", h.GetTerm(), "objects", h.GetObjects(),
		"tenants", h.GetTenants(), "took", time.Since(start))

	hlog := ha.NewRaftLogger(log)
	stores, err := ha.OpenLogStores(o.DataDir, o.LogStore, hlog)
	if err != nil {
		return nil, fmt.Errorf("datadir: create the Raft log store: %w", err)
	}
	defer stores.Close() // a no-op after the Close below
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(o.DataDir, ha.SnapshotsDir), ha.DefaultConfig().SnapshotRetain, hlog)
	if err != nil {
		return nil, fmt.Errorf("datadir: snapshot store: %w", err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(self.PeerAddr))
	defer trans.Close()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(o.Name)
	rc.Logger = hlog
	if err := raft.BootstrapCluster(rc, stores.Log, stores.Stable, snaps, trans, configuration); err != nil {
		return nil, fmt.Errorf("datadir: bootstrap: %w", err)
	}
	index := max(h.GetIndex(), 1)
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, 1, configuration, 1, trans)
	if err != nil {
		return nil, fmt.Errorf("datadir: create snapshot: %w", err)
	}
	// A new cluster: no command was ever prepared or authorized against any state of it, so the
	// file's epoch stays, and so do its API keys and role bindings (the only ones it will have).
	if _, _, err := snapshot.Rewrite(sink, bufio.NewReaderSize(f, 1<<20), snapshot.Carried{Epoch: h.GetStateEpoch()}); err != nil {
		_ = sink.Cancel()
		return nil, invalid(err)
	}
	if err := sink.Close(); err != nil {
		return nil, fmt.Errorf("datadir: write snapshot: %w", err)
	}
	// The snapshot holds the configuration too: the log is emptied, so that the member's first
	// append after the snapshot's index follows nothing (raft-wal takes only consecutive indexes:
	// an entry at 1 and the next at the snapshot's index + 1 would not be).
	if err := emptyLog(stores.Log); err != nil {
		return nil, err
	}
	if err := stores.Close(); err != nil {
		return nil, fmt.Errorf("datadir: close the Raft log store: %w", err)
	}
	if err := syncDir(o.DataDir); err != nil {
		return nil, err
	}
	ok = true
	log.Info("restore: data dir ready", "data_dir", o.DataDir, "name", o.Name, "members", len(configuration.Servers),
		"raft_index", index, "took", time.Since(start))
	return h, nil
}

// emptyLog deletes every entry of log.
func emptyLog(log raft.LogStore) error {
	first, err := log.FirstIndex()
	if err != nil {
		return fmt.Errorf("datadir: read the log: %w", err)
	}
	last, err := log.LastIndex()
	if err != nil {
		return fmt.Errorf("datadir: read the log: %w", err)
	}
	if last == 0 {
		return nil
	}
	if err := log.DeleteRange(first, last); err != nil {
		return fmt.Errorf("datadir: empty the log: %w", err)
	}
	return nil
}

func restoreConfiguration(o RestoreOptions) (raft.Configuration, ha.Peer, error) {
	var self ha.Peer
	if o.Name == "" || o.DataDir == "" || o.Snapshot == "" {
		return raft.Configuration{}, self, fmt.Errorf("%w: snapshot, data dir and name must be set", ErrBadPeers)
	}
	var c raft.Configuration
	seen := map[string]bool{}
	for _, p := range o.Peers {
		if seen[p.Name] {
			return c, self, fmt.Errorf("%w: %s named twice", ErrBadPeers, p.Name)
		}
		seen[p.Name] = true
		if p.Name == o.Name {
			self = p
		}
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.Name), Address: raft.ServerAddress(p.PeerAddr)})
	}
	if self.Name == "" {
		return c, self, fmt.Errorf("%w: the initial cluster does not include this member %q", ErrBadPeers, o.Name)
	}
	return c, self, nil
}

// invalid wraps a snapshot reading error as a refusal (ha.ErrInvalidSnapshot), unless it is a
// failure to read the source or write the copy (nothing is wrong with the file as far as anyone
// knows).
func invalid(err error) error {
	if snapshot.Damaged(err) {
		return fmt.Errorf("%w: %w", ha.ErrInvalidSnapshot, err)
	}
	return err
}

// verify reads the whole file f into a throwaway store built with cfg, so every store invariant
// must hold, and returns its header; f is left at its start.
func verify(f *os.File, cfg store.Config) (*metadv1.SnapshotHeader, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("datadir: snapshot file: %w", err)
	}
	_, _, h, err := fsm.ReadSnapshot(cfg, bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, invalid(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("datadir: snapshot file: %w", err)
	}
	return h, nil
}

// emptyDataDir makes sure dir exists and is empty, and reports whether it created it.
func emptyDataDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return false, fmt.Errorf("datadir: data dir: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("datadir: data dir: %w", err)
	case len(entries) > 0:
		what := entries[0].Name()
		if len(entries) > 1 {
			what += " and more"
		}
		return false, fmt.Errorf("%w: %s holds %s; restore makes a new member's data dir, so give it an empty or new one",
			ErrNotEmpty, dir, what)
	}
	return false, nil
}

// cleanDataDir undoes a failed restore: it removes what the restore wrote, and the dir if the
// restore created it.
func cleanDataDir(dir string, created bool) {
	if created {
		_ = os.RemoveAll(dir)
		return
	}
	_ = os.RemoveAll(filepath.Join(dir, ha.RaftDBFile))
	_ = os.RemoveAll(filepath.Join(dir, ha.WALDir))
	_ = os.RemoveAll(filepath.Join(dir, ha.SnapshotsDir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("datadir: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("datadir: sync %s: %w", dir, err)
	}
	return nil
}
