package ha

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// saveSnapshot streams a fresh snapshot from the leader into memory.
func (c *testCluster) saveSnapshot() []byte {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.waitLeader().OpenSnapshot(ctx, false)
	if err != nil {
		c.t.Fatal(err)
	}
	defer s.Close()
	b, err := io.ReadAll(s)
	if err != nil || int64(len(b)) != s.Size {
		c.t.Fatalf("read snapshot: %d of %d bytes, %v", len(b), s.Size, err)
	}
	return b
}

// anyNode returns some node of the cluster.
func (c *testCluster) anyNode() *Node {
	for _, n := range c.nodes {
		return n
	}
	return nil
}

func TestSnapshotSaveAndOnlineRestore(t *testing.T) {
	src := newTestCluster(t, 3, nil)
	src.propose(mountCmd())
	for i := range 30 {
		src.put(fmt.Sprintf("src-%02d", i))
	}
	src.waitConverged()
	file := src.saveSnapshot()
	info, err := snapshot.Inspect(bytes.NewReader(file))
	if err != nil || info.Objects != 30 {
		t.Fatalf("inspect the saved snapshot: %+v %v", info, err)
	}
	// A follower saves its own state only with allowStale.
	for _, n := range src.nodes {
		if n.IsLeader() {
			continue
		}
		if _, err := n.OpenSnapshot(context.Background(), false); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("follower save without allowStale: %v", err)
		}
		s, err := n.OpenSnapshot(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
	}

	dst := newTestCluster(t, 3, nil)
	dst.propose(mountCmd())
	dst.put("only-in-dst")
	dst.waitConverged()
	l := dst.waitLeader()
	membersBefore := l.fsm.Members()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := l.RestoreSnapshot(ctx, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.GetObjects() != 30 || res.Index == 0 {
		t.Fatalf("restore result %+v", res)
	}
	dst.waitConverged()
	// The restore advances the state epoch by one on every node (commands prepared against the
	// replaced state are refused), and otherwise installs exactly the saved state.
	want := digestAt(src.anyNode(), 1)
	for name, n := range dst.nodes {
		if e := n.Store().Epoch(); e != 1 {
			t.Fatalf("%s: state epoch %d after the first restore, want 1", name, e)
		}
		if !bytes.Equal(digest(n), want) {
			t.Fatalf("%s holds a state other than the snapshot's", name)
		}
		// The member records are this cluster's, never the source's.
		for mname, m := range n.fsm.Members() {
			if b, ok := membersBefore[mname]; ok && b != m || m.ClientAddr != "client-of-"+mname {
				t.Fatalf("%s: member %s recorded as %+v after the restore", name, mname, m)
			}
		}
	}
	if dst.readable(l, "only-in-dst") {
		t.Fatal("the restore kept an object the snapshot does not have")
	}
	dst.put("after-restore")
	dst.waitConverged()
	if err := l.ReadBarrier(ctx); err != nil {
		t.Fatalf("read barrier after the restore: %v", err)
	}
	// A leader serves linearizable reads right after a restore, with no write in between.
	if _, err := l.RestoreSnapshot(ctx, bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	if err := dst.waitLeader().ReadBarrier(rctx); err != nil {
		t.Fatalf("read barrier right after a restore: %v", err)
	}
	dst.waitConverged()
	for name, n := range dst.nodes {
		if e := n.Store().Epoch(); e != 2 {
			t.Fatalf("%s: state epoch %d after the second restore, want 2", name, e)
		}
	}
}

// overlapping returns a snapshot that passes every format check (so Inspect accepts it) but
// describes an impossible state: two objects on the same extent.
func overlapping(t *testing.T, good []byte) []byte {
	t.Helper()
	sr, err := snapshot.NewReader(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sw, err := snapshot.NewWriter(&out, sr.Header())
	if err != nil {
		t.Fatal(err)
	}
	var first *metadv1.ReplicaRecord
	rec := &metadv1.Record{}
	for {
		err := sr.Next(rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := rec.Record.(*metadv1.Record_Object); ok && len(o.Object.GetReplicas()) > 0 {
			if first == nil {
				first = o.Object.GetReplicas()[0]
			} else {
				o.Object.GetReplicas()[0].Offset = first.GetOffset()
			}
		}
		if err := sw.WriteRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.Inspect(bytes.NewReader(out.Bytes())); err != nil {
		t.Fatalf("the overlapping snapshot should pass Inspect: %v", err)
	}
	return out.Bytes()
}

// badSnapshots are broken versions of good, each with the error it must be refused with.
func badSnapshots(t *testing.T, good []byte) map[string]struct {
	file []byte
	kind error
} {
	future := bytes.Clone(good)
	binary.BigEndian.PutUint32(future[8:], snapshot.FormatVersion+1)
	checksum := bytes.Clone(good)
	checksum[len(checksum)-1] ^= 0xff
	return map[string]struct {
		file []byte
		kind error
	}{
		"empty":       {nil, snapshot.ErrTruncated},
		"truncated":   {good[:len(good)/2], snapshot.ErrTruncated},
		"foreign":     {[]byte(`{"this": "is a JSON file, not a snapshot"}`), snapshot.ErrBadMagic},
		"future":      {future, snapshot.ErrFutureVersion},
		"checksum":    {checksum, snapshot.ErrChecksum},
		"overlapping": {overlapping(t, good), snapshot.ErrCorrupt},
	}
}

func TestOnlineRestoreRefusesBadFiles(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose(mountCmd())
	for i := range 5 {
		c.put(fmt.Sprintf("k%d", i))
	}
	c.waitConverged()
	good := c.saveSnapshot()
	before := digest(c.anyNode())
	l := c.waitLeader()
	idx, _ := l.fsm.Applied()
	for name, bad := range badSnapshots(t, good) {
		_, err := l.RestoreSnapshot(context.Background(), bytes.NewReader(bad.file))
		if !errors.Is(err, ErrInvalidSnapshot) || !errors.Is(err, bad.kind) {
			t.Errorf("%s: got %v, want %v", name, err, bad.kind)
		}
		t.Logf("%s: %v", name, err)
	}
	if after, _ := l.fsm.Applied(); after != idx {
		t.Fatalf("a refused restore moved the applied index from %d to %d", idx, after)
	}
	for name, n := range c.nodes {
		if !bytes.Equal(digest(n), before) {
			t.Fatalf("%s: a refused restore changed the state", name)
		}
	}
	spools, _ := filepath.Glob(filepath.Join(l.cfg.DataDir, spoolPattern))
	if len(spools) > 0 {
		t.Fatalf("spool files left behind: %v", spools)
	}
}

// freeAddrs returns n loopback addresses that were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Addr().String())
		defer l.Close()
	}
	return out
}

func TestRestoreDataDirStartsWithTheState(t *testing.T) {
	src := newTestCluster(t, 1, nil)
	src.propose(mountCmd())
	for i := range 10 {
		src.put(fmt.Sprintf("r%d", i))
	}
	file := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(file, src.saveSnapshot(), 0o600); err != nil {
		t.Fatal(err)
	}
	want := digest(src.anyNode())
	src.stopAll()

	addrs := freeAddrs(t, 3)
	var peers []Peer
	for i, a := range addrs {
		peers = append(peers, Peer{Name: fmt.Sprintf("n%d", i+1), PeerAddr: a})
	}
	c := &testCluster{t: t, nodes: map[string]*Node{}, dirs: map[string]string{}, cfgs: map[string]Config{}}
	t.Cleanup(c.stopAll)
	for _, p := range peers {
		dir := filepath.Join(t.TempDir(), p.Name)
		if _, err := RestoreDataDir(DataDirRestore{Snapshot: file, DataDir: dir, Name: p.Name, Peers: peers}, nil); err != nil {
			t.Fatal(err)
		}
		// A second restore into the same dir is refused and leaves it alone.
		if _, err := RestoreDataDir(DataDirRestore{Snapshot: file, DataDir: dir, Name: p.Name, Peers: peers}, nil); !errors.Is(err, ErrDataDirNotEmpty) {
			t.Fatalf("restore into a non-empty dir: %v", err)
		}
		cfg := testConfig(p.Name, dir)
		cfg.PeerListen, cfg.PeerAddr = p.PeerAddr, p.PeerAddr
		cfg.Bootstrap, cfg.InitialCluster = true, peers // as `metad` runs it: bootstrap skipped, state exists
		c.cfgs[p.Name] = cfg
	}
	for _, p := range peers {
		c.start(p.Name)
	}
	c.waitLeader()
	c.waitConverged()
	for name, n := range c.nodes {
		if !bytes.Equal(digest(n), want) {
			t.Fatalf("%s did not come up with the snapshot's state", name)
		}
	}
	c.put("new-write")
	c.waitConverged()
}

func TestRestoreDataDirRefusesBadFiles(t *testing.T) {
	src := newTestCluster(t, 1, nil)
	src.propose(mountCmd())
	src.put("k1")
	src.put("k2")
	good := src.saveSnapshot()
	src.stopAll()
	peers := []Peer{{Name: "n1", PeerAddr: "127.0.0.1:1"}}
	for name, bad := range badSnapshots(t, good) {
		file := filepath.Join(t.TempDir(), name+".snap")
		if err := os.WriteFile(file, bad.file, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "new")
		_, err := RestoreDataDir(DataDirRestore{Snapshot: file, DataDir: dir, Name: "n1", Peers: peers}, nil)
		if !errors.Is(err, ErrInvalidSnapshot) || !errors.Is(err, bad.kind) {
			t.Errorf("%s: got %v, want %v", name, err, bad.kind)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the refused restore left %s behind", name, dir)
		}
		// An empty dir that exists stays, empty.
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		_, _ = RestoreDataDir(DataDirRestore{Snapshot: file, DataDir: dir, Name: "n1", Peers: peers}, nil)
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("%s: the refused restore left %v in the data dir (%v)", name, ents, err)
		}
	}
	if _, err := RestoreDataDir(DataDirRestore{Snapshot: "x", DataDir: t.TempDir(), Name: "n9", Peers: peers}, nil); !errors.Is(err, ErrBadPeers) {
		t.Fatalf("a member not in the initial cluster: %v", err)
	}
}

func TestRecoverDataDirAfterQuorumLoss(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = 20, 5, 50*time.Millisecond
	})
	c.propose(mountCmd())
	for i := range 40 {
		c.put(fmt.Sprintf("q%02d", i)) // enough for a snapshot plus a log tail after it
	}
	c.waitConverged()
	want := digest(c.anyNode())
	c.stopAll()

	survivor := c.cfgs["n1"]
	if _, err := RecoverDataDir(t.TempDir(), []RecoveryPeer{{ID: "n1", Address: survivor.PeerAddr}}, store.DefaultConfig(), nil); !errors.Is(err, ErrNoRaftState) {
		t.Fatalf("recover an empty dir: %v", err)
	}
	res, err := RecoverDataDir(survivor.DataDir, []RecoveryPeer{{ID: "n1", Address: survivor.PeerAddr}}, store.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects != 40 {
		t.Fatalf("recovered %+v, want 40 objects", res)
	}
	survivor.Bootstrap = false
	c.cfgs["n1"] = survivor
	n1 := c.start("n1")
	c.waitLeader()
	if ms, err := n1.Members(); err != nil || len(ms) != 1 {
		t.Fatalf("members after recovery: %v %v", ms, err)
	}
	if !bytes.Equal(digest(n1), want) {
		t.Fatal("the recovered node lost state")
	}
	c.put("after-recovery")
	// A new member joins the recovered cluster and catches up.
	c.cfgs["n4"] = testConfig("n4", t.TempDir())
	n4 := c.start("n4")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n1.AddMember(ctx, "n4", n4.PeerAddr()); err != nil {
		t.Fatal(err)
	}
	c.waitConverged()
	if !c.readable(n4, "q39") || !c.readable(n4, "after-recovery") {
		t.Fatal("the new member lacks data")
	}
}

func TestRecoverDataDirInUse(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	c.propose(mountCmd())
	_, err := RecoverDataDir(c.cfgs["n1"].DataDir, []RecoveryPeer{{ID: "n1", Address: "127.0.0.1:1"}}, store.DefaultConfig(), nil)
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("recover the data dir of a running node: %v", err)
	}
}

func TestParsePeersFile(t *testing.T) {
	good := `[{"id":"n1","address":"127.0.0.1:6101"},{"id":"n2","address":"127.0.0.1:6102","non_voter":true}]`
	ps, err := ParsePeersFile([]byte(good))
	if err != nil || len(ps) != 2 || !ps[1].NonVoter {
		t.Fatalf("%v %v", ps, err)
	}
	for _, bad := range []string{
		``, `{}`, `[]`, `[{"id":"","address":"127.0.0.1:1"}]`, `[{"id":"n1","address":"nope"}]`,
		`[{"id":"n1","address":"127.0.0.1:1"},{"id":"n1","address":"127.0.0.1:2"}]`,
		`[{"id":"n1","address":"127.0.0.1:1","non_voter":true}]`, `[{"id":"n1","address":"127.0.0.1:1","suffrage":1}]`,
	} {
		if _, err := ParsePeersFile([]byte(bad)); !errors.Is(err, ErrBadPeers) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
