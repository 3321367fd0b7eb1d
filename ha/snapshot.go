package ha

// Snapshots for operators. Four tools, each built on what hashicorp/raft offers for it:
//
//   - OpenSnapshot (metactl snapshot save): a user snapshot (raft.Snapshot), so that the FSM's
//     Snapshot runs on the apply goroutine as its contract requires and Persist writes
//     fsm.WriteCapture's bytes into the file snapshot store; the caller streams that file.
//   - RestoreSnapshot (metactl snapshot restore): spool, verify completely, then Raft's user restore
//     (raft.Restore), which installs the file on the leader and, through the hole it leaves in the
//     log, on every follower.
//   - RestoreDataDir (metad restore): a new member's data dir made from a snapshot file, offline.
//   - RecoverDataDir (metad recover): raft.RecoverCluster on a stopped node's data dir.
//
// None of them has a fixed deadline: a large state takes as long as it takes, bounded only by the
// caller's context where one is given. Each logs its phases.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// Failures of the snapshot tools. A refused snapshot file also wraps the snapshot package's error
// that names what is wrong with it (snapshot.ErrBadMagic, ErrFutureVersion, ErrTruncated,
// ErrCorrupt, ErrChecksum).
var (
	ErrInvalidSnapshot = errors.New("snapshot refused")
	ErrDataDirNotEmpty = errors.New("data dir is not empty")
	ErrNoRaftState     = errors.New("data dir holds no Raft state")
	ErrDataDirInUse    = errors.New("data dir is in use (is metad still running on it?)")
	ErrBadPeers        = errors.New("bad peer list")
)

// Data dir layout, as NewNode opens it.
const (
	raftDBFile   = "raft.db"
	snapshotsDir = "snapshots"
	spoolPattern = "restore-*.snap.tmp" // an online restore's spool, in the data dir
)

// progressEvery is how often a long transfer logs its progress.
const progressEvery = 5 * time.Second

// SnapshotStream is not safe for concurrent use. It is a snapshot file of this node's state,
// opened for streaming; Close it.
type SnapshotStream struct {
	io.ReadCloser
	Index uint64 // Raft index the snapshot covers
	Term  uint64 // Raft term of that index
	Size  int64  // bytes of the file
}

// OpenSnapshot takes a fresh snapshot and opens it. Unless allowStale, the node must lead and a
// Raft barrier first makes sure the snapshot holds everything committed before the call; with
// allowStale any node answers from its own state. The snapshot is Raft's own (the FSM captures on
// its apply goroutine, Persist writes fsm.WriteCapture's bytes into the file snapshot store), so
// taking one also compacts the log as a scheduled snapshot would.
func (n *Node) OpenSnapshot(ctx context.Context, allowStale bool) (*SnapshotStream, error) {
	start := time.Now()
	if !allowStale {
		if err := n.leaderOnly(); err != nil {
			return nil, err
		}
		if err := n.raftBarrier(ctx); err != nil {
			return nil, err
		}
	}
	n.log.Info("snapshot save: taking a snapshot", "stale", allowStale)
	f := n.raft.Snapshot()
	if err := waitFuture(ctx, f); err != nil {
		if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return nil, fmt.Errorf("ha: take snapshot: %w", n.mapRaftErr(err))
		}
		// Nothing applied since this node started: the newest stored snapshot is the state.
		return n.openLatest()
	}
	meta, rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("ha: open snapshot: %w", err)
	}
	n.log.Info("snapshot save: snapshot taken", "index", meta.Index, "term", meta.Term, "bytes", meta.Size, "took", time.Since(start))
	return &SnapshotStream{ReadCloser: rc, Index: meta.Index, Term: meta.Term, Size: meta.Size}, nil
}

func (n *Node) openLatest() (*SnapshotStream, error) {
	metas, err := n.snaps.List()
	if err != nil {
		return nil, fmt.Errorf("ha: list snapshots: %w", err)
	}
	if len(metas) == 0 {
		return nil, errors.New("ha: nothing to snapshot: this node has applied nothing yet")
	}
	meta, rc, err := n.snaps.Open(metas[0].ID)
	if err != nil {
		return nil, fmt.Errorf("ha: open snapshot %s: %w", metas[0].ID, err)
	}
	return &SnapshotStream{ReadCloser: rc, Index: meta.Index, Term: meta.Term, Size: meta.Size}, nil
}

// raftBarrier waits until everything committed before the call is applied here, confirming that this
// node still leads. Losing leadership meanwhile is plainly not-leader: a barrier changes nothing.
func (n *Node) raftBarrier(ctx context.Context) error {
	// The wait ends with ctx or with the node (Raft may never answer a barrier taken as it stops).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(n.stopCtx, cancel)()
	err := waitFuture(ctx, n.raft.Barrier(timeoutOf(ctx, n.cfg.ApplyTimeout)))
	switch {
	case err == nil:
		n.applied.advance(n.raft.AppliedIndex())
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
		name, addr := n.Leader()
		return &NotLeaderError{LeaderName: name, LeaderAddr: addr}
	}
	return n.mapRaftErr(err)
}

// waitFuture waits for f, or returns ctx's error when ctx ends first. f then completes unobserved,
// or, if Raft shut down without answering it, never: its waiting goroutine is left behind, blocked,
// which is still better than a Shutdown that never returns.
func waitFuture(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RestoreResult is a plain value. It describes a snapshot installed by RestoreSnapshot.
type RestoreResult struct {
	Index, Term uint64                  // Raft index and term at which the restored state was installed
	Header      *metadv1.SnapshotHeader // the file's header: its own index, term, created-at and counts
}

// RestoreSnapshot replaces the cluster's state with the snapshot file read from r; leader only.
// Nothing changes until the whole file has been received and verified:
//
//  1. spool r into a temp file in the data dir, checking the format as it streams (magic, version,
//     frames, counts, checksum); the file's member records, which describe the cluster it was saved
//     from, are replaced by this cluster's, so that no node ever forwards to another cluster, and
//     its state epoch becomes this cluster's current epoch + 1 (read after a barrier), so that a
//     removal or eviction prepared against the state being replaced can never commit on the
//     restored one (apply refuses it with STATE_REPLACED and the leader prepares it again);
//  2. verify the spooled state completely by building it into a throwaway store (fsm.ReadSnapshot);
//  3. install it with Raft's user restore: the leader takes it on, and the hole the restore leaves
//     in the log makes every follower install it too;
//  4. start leader soft state afresh (every object leased for one ttl, no unlink mark) and record
//     this leader's addresses, which also moves the applied index past the restore.
//
// A refused file gives an error wrapping ErrInvalidSnapshot and the snapshot package's error. No
// fixed deadline applies; ctx bounds the transfer and the wait for the install.
func (n *Node) RestoreSnapshot(ctx context.Context, r io.Reader) (*RestoreResult, error) {
	if err := n.leaderOnly(); err != nil {
		return nil, err
	}
	n.restore.Lock()
	defer n.restore.Unlock()
	start := time.Now()
	// Every restore committed so far is applied here after the barrier, so the current epoch is
	// the largest this cluster's states have had.
	if err := n.raftBarrier(ctx); err != nil {
		return nil, fmt.Errorf("ha: snapshot restore: %w", err)
	}
	epoch := n.fsm.Store().Epoch() + 1
	spool, err := os.CreateTemp(n.cfg.DataDir, spoolPattern)
	if err != nil {
		return nil, fmt.Errorf("ha: snapshot restore: spool file: %w", err)
	}
	defer func() {
		_ = spool.Close()
		_ = os.Remove(spool.Name())
	}()

	// 1. Receive, checking the format as it streams.
	n.log.Info("snapshot restore: receiving", "spool", spool.Name())
	members := n.currentMembers()
	h, size, err := rewriteSnapshot(spool, &progressReader{r: r, log: n.log, what: "snapshot restore: receiving"}, members, epoch)
	if err != nil {
		return nil, err
	}
	if err := spool.Sync(); err != nil {
		return nil, fmt.Errorf("ha: snapshot restore: spool file: %w", err)
	}
	n.log.Info("snapshot restore: received", "bytes", size, "index", h.GetIndex(), "term", h.GetTerm(),
		"objects", h.GetObjects(), "tenants", h.GetTenants(), "state_epoch", epoch, "took", time.Since(start))

	// 2. Verify the state it describes.
	if _, err := verifySpool(spool, n.Store().LeaseTTL()); err != nil {
		return nil, err
	}
	n.log.Info("snapshot restore: verified", "took", time.Since(start))
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// 3. Install.
	if err := n.leaderOnly(); err != nil {
		return nil, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("ha: snapshot restore: spool file: %w", err)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: h.GetIndex(), Term: h.GetTerm(), Size: size}
	n.log.Info("snapshot restore: installing through Raft")
	if err := n.raft.Restore(meta, bufio.NewReaderSize(spool, 1<<20), timeoutOf(ctx, 0)); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			name, addr := n.Leader()
			return nil, &NotLeaderError{LeaderName: name, LeaderAddr: addr}
		}
		return nil, fmt.Errorf("ha: snapshot restore: install: %w", n.mapRaftErr(err))
	}

	// 4. Leader soft state and the applied index.
	res := &RestoreResult{Header: h}
	if metas, err := n.snaps.List(); err == nil && len(metas) > 0 {
		res.Index, res.Term = metas[0].Index, metas[0].Term
	}
	n.fsm.Store().ResetSoftState(time.Now().UnixNano())
	// The state is installed whatever the caller does now; these steps get their own bound.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ApplyTimeout)
	defer cancel()
	if err := n.raftBarrier(pctx); err != nil {
		n.log.Warn("snapshot restore: installed, but the barrier after it failed", "err", err)
	} else {
		_, err := n.Propose(pctx, &metadv1.Command{Op: &metadv1.Command_SetMember{SetMember: &metadv1.SetMember{
			Name: n.cfg.Name, PeerAddress: n.cfg.PeerAddr, ClientAddress: n.cfg.ClientAddr}}})
		if err != nil {
			n.log.Warn("snapshot restore: installed, but recording this leader's addresses failed", "err", err)
		}
	}
	n.log.Info("snapshot restore: installed", "index", res.Index, "term", res.Term, "objects", h.GetObjects(),
		"tenants", h.GetTenants(), "segments", h.GetSegments(), "took", time.Since(start))
	return res, nil
}

// currentMembers is this cluster's recorded members, limited to its Raft configuration, by name.
func (n *Node) currentMembers() []*metadv1.MemberRecord {
	recorded := n.fsm.Members()
	var out []*metadv1.MemberRecord
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if m, ok := recorded[string(s.ID)]; ok {
				out = append(out, &metadv1.MemberRecord{Name: m.Name, PeerAddress: m.PeerAddr, ClientAddress: m.ClientAddr})
			}
		}
	}
	slices.SortFunc(out, func(a, b *metadv1.MemberRecord) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// rewriteSnapshot copies a snapshot file from r to w record by record, verifying it as it streams,
// with its member records replaced by members (sorted by name) and its state epoch set to epoch.
// Every other header field and record is kept as it is, so the objects, tenants and segments it
// describes are unchanged. It returns the header written and the bytes written; a file that fails
// verification gives an error wrapping ErrInvalidSnapshot.
func rewriteSnapshot(w io.Writer, r io.Reader, members []*metadv1.MemberRecord, epoch uint64) (*metadv1.SnapshotHeader, int64, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return nil, 0, invalid(err)
	}
	h := proto.CloneOf(sr.Header())
	h.StateEpoch = epoch
	sw, err := snapshot.NewWriter(w, h)
	if err != nil {
		return nil, 0, fmt.Errorf("ha: write snapshot: %w", err)
	}
	rec := &metadv1.Record{}
	for {
		err := sr.Next(rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, invalid(err)
		}
		if _, ok := rec.Record.(*metadv1.Record_Member); ok {
			continue
		}
		if err := sw.WriteRecord(rec); err != nil {
			return nil, 0, fmt.Errorf("ha: write snapshot: %w", err)
		}
	}
	for _, m := range members {
		if err := sw.WriteRecord(&metadv1.Record{Record: &metadv1.Record_Member{Member: m}}); err != nil {
			return nil, 0, fmt.Errorf("ha: write snapshot: %w", err)
		}
	}
	if err := sw.Close(); err != nil {
		return nil, 0, fmt.Errorf("ha: write snapshot: %w", err)
	}
	return h, sw.Size(), nil
}

// invalid wraps a snapshot reading error as a refusal, unless it is an I/O failure of the source
// (the stream broke: nothing is wrong with the file as far as anyone knows).
func invalid(err error) error {
	for _, kind := range []error{snapshot.ErrBadMagic, snapshot.ErrFutureVersion, snapshot.ErrTruncated, snapshot.ErrCorrupt, snapshot.ErrChecksum} {
		if errors.Is(err, kind) {
			return fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
		}
	}
	return err
}

// verifySpool reads the whole file f into a throwaway store, so every store invariant must hold,
// and returns its header.
func verifySpool(f *os.File, leaseTTL time.Duration) (*metadv1.SnapshotHeader, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("ha: snapshot file: %w", err)
	}
	cfg := store.DefaultConfig()
	if leaseTTL > 0 {
		cfg.LeaseTTL = leaseTTL
	}
	_, _, h, err := fsm.ReadSnapshot(cfg, bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, invalid(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("ha: snapshot file: %w", err)
	}
	return h, nil
}

// progressReader is not safe for concurrent use. It logs the bytes read so far every progressEvery.
type progressReader struct {
	r    io.Reader
	log  *slog.Logger
	what string
	n    int64
	last time.Time
}

func (p *progressReader) Read(b []byte) (int, error) {
	m, err := p.r.Read(b)
	p.n += int64(m)
	if now := time.Now(); p.last.IsZero() {
		p.last = now
	} else if now.Sub(p.last) >= progressEvery {
		p.last = now
		p.log.Info(p.what, "bytes", p.n)
	}
	return m, err
}

// DataDirRestore is a plain value: what RestoreDataDir needs, the snapshot file and the new member.
type DataDirRestore struct {
	Snapshot string       // path of the snapshot file
	DataDir  string       // the new member's data dir: must not exist or be empty
	Name     string       // the new member's name; one of Peers
	Peers    []Peer       // the new cluster's members, as --initial-cluster names them
	Store    store.Config // checks the state as the daemon will load it (zero: store.DefaultConfig())
}

// RestoreDataDir creates a new cluster member's data dir from a snapshot file, offline: the file is
// verified completely first (a refused file wraps ErrInvalidSnapshot), a data dir that holds
// anything is refused (ErrDataDirNotEmpty), and on any failure the data dir is left as it was
// found. The data dir gets what BootstrapCluster writes for Peers (Raft term 1, the configuration
// at index 1) and the snapshot in the file snapshot store at the file's index (at least 1) with that
// configuration, so `metad` started on it comes up with the snapshot's state whatever
// --initial-cluster-state says. The file's member records describe the cluster it came from and
// are left out; each leader records its own addresses. Run it with the same file for every member.
func RestoreDataDir(o DataDirRestore, log *slog.Logger) (*metadv1.SnapshotHeader, error) {
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
		return nil, fmt.Errorf("ha: snapshot file: %w", err)
	}
	defer f.Close()
	log.Info("restore: verifying the snapshot", "file", o.Snapshot)
	// The format first (a damaged file is reported as such), then the state it describes.
	if _, err := snapshot.Inspect(bufio.NewReaderSize(f, 1<<20)); err != nil {
		return nil, invalid(err)
	}
	h, err := verifySpool(f, o.Store.LeaseTTL)
	if err != nil {
		return nil, err
	}
	log.Info("restore: verified", "index", h.GetIndex(), "term", h.GetTerm(), "objects", h.GetObjects(),
		"tenants", h.GetTenants(), "took", time.Since(start))

	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(o.DataDir, raftDBFile)})
	if err != nil {
		return nil, fmt.Errorf("ha: create %s: %w", raftDBFile, err)
	}
	defer bolt.Close()
	hlog := newRaftLogger(log)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(o.DataDir, snapshotsDir), DefaultConfig().SnapshotRetain, hlog)
	if err != nil {
		return nil, fmt.Errorf("ha: snapshot store: %w", err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(self.PeerAddr))
	defer trans.Close()
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(o.Name)
	rc.Logger = hlog
	if err := raft.BootstrapCluster(rc, bolt, bolt, snaps, trans, configuration); err != nil {
		return nil, fmt.Errorf("ha: bootstrap: %w", err)
	}
	index := max(h.GetIndex(), 1)
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, 1, configuration, 1, trans)
	if err != nil {
		return nil, fmt.Errorf("ha: create snapshot: %w", err)
	}
	// A new cluster: no command was ever prepared against any state of it, so the file's epoch stays.
	if _, _, err := rewriteSnapshot(sink, bufio.NewReaderSize(f, 1<<20), nil, h.GetStateEpoch()); err != nil {
		_ = sink.Cancel()
		return nil, err
	}
	if err := sink.Close(); err != nil {
		return nil, fmt.Errorf("ha: write snapshot: %w", err)
	}
	if err := bolt.Close(); err != nil {
		return nil, fmt.Errorf("ha: close %s: %w", raftDBFile, err)
	}
	if err := syncDir(o.DataDir); err != nil {
		return nil, err
	}
	ok = true
	log.Info("restore: data dir ready", "data_dir", o.DataDir, "name", o.Name, "members", len(configuration.Servers),
		"raft_index", index, "took", time.Since(start))
	return h, nil
}

func restoreConfiguration(o DataDirRestore) (raft.Configuration, Peer, error) {
	var self Peer
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

// emptyDataDir makes sure dir exists and is empty, and reports whether it created it.
func emptyDataDir(dir string) (created bool, err error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return false, fmt.Errorf("ha: data dir: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("ha: data dir: %w", err)
	case len(entries) > 0:
		what := entries[0].Name()
		if len(entries) > 1 {
			what += " and more"
		}
		return false, fmt.Errorf("%w: %s holds %s; restore makes a new member's data dir, so give it an empty or new one",
			ErrDataDirNotEmpty, dir, what)
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
	_ = os.RemoveAll(filepath.Join(dir, raftDBFile))
	_ = os.RemoveAll(filepath.Join(dir, snapshotsDir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ha: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("ha: sync %s: %w", dir, err)
	}
	return nil
}

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

// RecoverDataDir rewrites the Raft configuration of a stopped node's data dir to peers, for when a
// cluster has lost its quorum for good (raft.RecoverCluster): it replays the newest snapshot and
// every log entry after it into a fresh state machine, writes that state as a new snapshot carrying
// the new configuration, and compacts the log. Start metad on the data dir afterwards; every
// member of peers must be recovered with the same file (or, better, recover one node and add the
// others as new members). A data dir with no Raft state gives ErrNoRaftState; one that a running
// metad holds gives ErrDataDirInUse.
func RecoverDataDir(dataDir string, peers []RecoveryPeer, cfg store.Config, log *slog.Logger) (*RecoveryResult, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.LeaseTTL == 0 {
		cfg = store.DefaultConfig()
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("%w: the list is empty", ErrBadPeers)
	}
	dbPath := filepath.Join(dataDir, raftDBFile)
	if _, err := os.Stat(dbPath); err != nil { // opening it would create it
		return nil, fmt.Errorf("%w: %s: %v", ErrNoRaftState, dbPath, err)
	}
	start := time.Now()
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: dbPath, BoltOptions: &bbolt.Options{Timeout: 2 * time.Second}})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s is locked", ErrDataDirInUse, dbPath)
		}
		return nil, fmt.Errorf("ha: open %s: %w", dbPath, err)
	}
	defer bolt.Close()
	hlog := newRaftLogger(log)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dataDir, snapshotsDir), DefaultConfig().SnapshotRetain, hlog)
	if err != nil {
		return nil, fmt.Errorf("ha: snapshot store: %w", err)
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
	if has, err := raft.HasExistingState(bolt, bolt, snaps); err != nil {
		return nil, fmt.Errorf("ha: read raft state: %w", err)
	} else if !has {
		return nil, fmt.Errorf("%w: %s", ErrNoRaftState, dataDir)
	}
	log.Info("recover: replaying the snapshot and the log", "data_dir", dataDir, "members", len(peers))
	if err := raft.RecoverCluster(rc, f, bolt, bolt, snaps, trans, configuration); err != nil {
		return nil, fmt.Errorf("ha: recover: %w", err)
	}
	if err := bolt.Close(); err != nil {
		return nil, fmt.Errorf("ha: close %s: %w", dbPath, err)
	}
	res := &RecoveryResult{Members: len(peers)}
	if metas, err := snaps.List(); err == nil && len(metas) > 0 {
		res.Index, res.Term = metas[0].Index, metas[0].Term
	}
	st := f.Store()
	for _, t := range st.Tenants().List() {
		if t.Life() != store.TenantRemoved {
			res.Objects += t.Directory().Objects()
			res.Tenants++
		}
	}
	log.Info("recover: done", "index", res.Index, "term", res.Term, "objects", res.Objects, "took", time.Since(start))
	return res, nil
}
