package ha

// Snapshots of a running node, for operators. Two tools, each built on what hashicorp/raft offers
// for it:
//
//   - OpenSnapshot (metactl snapshot save): a user snapshot (raft.Snapshot), so that the state
//     machine's Snapshot runs on the apply goroutine as its contract requires and Persist writes the
//     snapshot file into the file snapshot store; the caller streams that file.
//   - RestoreSnapshot (metactl snapshot restore): spool, verify completely, then Raft's user restore
//     (raft.Restore), which installs the file on the leader and, through the hole it leaves in the
//     log, on every follower.
//
// Neither has a fixed deadline: a large state takes as long as it takes, bounded only by the
// caller's context. Each logs its phases. The tools for a stopped node's data dir (metad restore,
// metad recover) are package datadir's.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// ErrInvalidSnapshot is a refused snapshot file. The error also wraps the snapshot package's error
// that names what is wrong with the file (snapshot.ErrBadMagic, ErrFutureVersion, ErrTruncated,
// ErrCorrupt, ErrChecksum).
var ErrInvalidSnapshot = errors.New("snapshot refused")

// Data dir layout, as NewNode opens it (package datadir works on the same files offline).
const (
	RaftDBFile   = "raft.db"            // the raft-boltdb log and stable store
	SnapshotsDir = "snapshots"          // the file snapshot store
	spoolPattern = "restore-*.snap.tmp" // an online restore's spool
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
	n.snapshotsChanged()
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
//     restored one (apply refuses it with STATE_REPLACED and the leader prepares it again); its
//     API keys and role bindings are replaced by this cluster's, at an auth revision that does not
//     go back, so that the restore cannot lock out the operator who runs it;
//  2. have the state machine verify the spooled state completely, as it would restore it
//     (StateMachine.VerifySnapshot: metad's builds it into a new store, which it installs in step
//     3 when Raft hands it the same file, so the state is built once);
//  3. install it with Raft's user restore: the leader takes it on, and the hole the restore leaves
//     in the log makes every follower install it too;
//  4. start leader soft state afresh (StateMachine.ResetSoftState: every object leased for one
//     ttl, no unlink mark) and record this leader's addresses, which also moves the applied index
//     past the restore.
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
	carried := n.sm.Carried()
	carried.Members = n.inConfiguration(carried.Members)
	epoch := carried.Epoch
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
	h, size, err := snapshot.Rewrite(spool, &progressReader{r: r, log: n.log, what: "snapshot restore: receiving"}, carried)
	if err != nil {
		return nil, invalid(err)
	}
	if err := spool.Sync(); err != nil {
		return nil, fmt.Errorf("ha: snapshot restore: spool file: %w", err)
	}
	n.log.Info("snapshot restore: received", "bytes", size, "index", h.GetIndex(), "term", h.GetTerm(),
		"objects", h.GetObjects(), "tenants", h.GetTenants(), "state_epoch", epoch, "took", time.Since(start))

	// 2. Verify the state it describes (the state machine keeps what it built for step 3).
	defer n.sm.ForgetVerified()
	if _, err := n.verifySpool(spool); err != nil {
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
	n.sm.ResetSoftState(time.Now().UnixNano())
	// The state is installed whatever the caller does now; these steps get their own bound.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.ApplyTimeout)
	defer cancel()
	if err := n.raftBarrier(pctx); err != nil {
		n.log.Warn("snapshot restore: installed, but the barrier after it failed", "err", err)
	} else {
		self := n.Self()
		_, err := n.Propose(pctx, &metadv1.Command{Op: &metadv1.Command_SetMember{SetMember: &metadv1.SetMember{
			Name: self.Name, PeerAddress: self.PeerAddr, ClientAddress: self.ClientAddr, FeatureLevel: self.Level}}})
		if err != nil {
			n.log.Warn("snapshot restore: installed, but recording this leader's addresses failed", "err", err)
		}
	}
	n.log.Info("snapshot restore: installed", "index", res.Index, "term", res.Term, "objects", h.GetObjects(),
		"tenants", h.GetTenants(), "segments", h.GetSegments(), "took", time.Since(start))
	return res, nil
}

// inConfiguration keeps the member records of servers of Raft's configuration, in their order.
func (n *Node) inConfiguration(recs []*metadv1.MemberRecord) []*metadv1.MemberRecord {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return slices.DeleteFunc(recs, func(m *metadv1.MemberRecord) bool {
		return !slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return string(s.ID) == m.GetName() })
	})
}

// invalid wraps a snapshot reading error as a refusal (ErrInvalidSnapshot), unless it is a failure
// to read the source or write the copy (the stream broke: nothing is wrong with the file as far as
// anyone knows).
func invalid(err error) error {
	if snapshot.Damaged(err) {
		return fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	return err
}

// verifySpool has the state machine verify the whole file f as it would restore it, and returns
// its header; f is left at its start.
func (n *Node) verifySpool(f *os.File) (*metadv1.SnapshotHeader, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("ha: snapshot file: %w", err)
	}
	h, err := n.sm.VerifySnapshot(bufio.NewReaderSize(f, 1<<20))
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
