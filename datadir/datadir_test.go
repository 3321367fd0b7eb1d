package datadir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"metad/ha"
	"metad/store"
)

func TestRestoreStartsWithTheState(t *testing.T) {
	src := newCluster(t, 1, nil)
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
	var peers []ha.Peer
	for i, a := range addrs {
		peers = append(peers, ha.Peer{Name: fmt.Sprintf("n%d", i+1), PeerAddr: a})
	}
	c := emptyCluster(t)
	for _, p := range peers {
		dir := filepath.Join(t.TempDir(), p.Name)
		if _, err := Restore(RestoreOptions{Snapshot: file, DataDir: dir, Name: p.Name, Peers: peers}, nil); err != nil {
			t.Fatal(err)
		}
		// A second restore into the same dir is refused and leaves it alone.
		if _, err := Restore(RestoreOptions{Snapshot: file, DataDir: dir, Name: p.Name, Peers: peers}, nil); !errors.Is(err, ErrNotEmpty) {
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

func TestRestoreRefusesBadFiles(t *testing.T) {
	src := newCluster(t, 1, nil)
	src.propose(mountCmd())
	src.put("k1")
	src.put("k2")
	good := src.saveSnapshot()
	src.stopAll()
	peers := []ha.Peer{{Name: "n1", PeerAddr: "127.0.0.1:1"}}
	for name, bad := range badSnapshots(t, good) {
		file := filepath.Join(t.TempDir(), name+".snap")
		if err := os.WriteFile(file, bad.file, 0o600); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "new")
		_, err := Restore(RestoreOptions{Snapshot: file, DataDir: dir, Name: "n1", Peers: peers}, nil)
		if !errors.Is(err, ha.ErrInvalidSnapshot) || !errors.Is(err, bad.kind) {
			t.Errorf("%s: got %v, want %v", name, err, bad.kind)
		}
		if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the refused restore left %s behind", name, dir)
		}
		// An empty dir that exists stays, empty.
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		_, _ = Restore(RestoreOptions{Snapshot: file, DataDir: dir, Name: "n1", Peers: peers}, nil)
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("%s: the refused restore left %v in the data dir (%v)", name, ents, err)
		}
	}
	if _, err := Restore(RestoreOptions{Snapshot: "x", DataDir: t.TempDir(), Name: "n9", Peers: peers}, nil); !errors.Is(err, ErrBadPeers) {
		t.Fatalf("a member not in the initial cluster: %v", err)
	}
}

func TestRecoverAfterQuorumLoss(t *testing.T) {
	c := newCluster(t, 3, func(cfg *ha.Config) {
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
	if _, err := Recover(t.TempDir(), []RecoveryPeer{{ID: "n1", Address: survivor.PeerAddr}}, store.DefaultConfig(), nil); !errors.Is(err, ErrNoRaftState) {
		t.Fatalf("recover an empty dir: %v", err)
	}
	res, err := Recover(survivor.DataDir, []RecoveryPeer{{ID: "n1", Address: survivor.PeerAddr}}, store.DefaultConfig(), nil)
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
	if ms, err := n1.n.Members(); err != nil || len(ms) != 1 {
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
	if _, err := n1.n.AddMember(ctx, "n4", n4.n.PeerAddr()); err != nil {
		t.Fatal(err)
	}
	c.waitConverged()
	if !c.readable(n4, "q39") || !c.readable(n4, "after-recovery") {
		t.Fatal("the new member lacks data")
	}
}

func TestRecoverInUse(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.propose(mountCmd())
	_, err := Recover(c.cfgs["n1"].DataDir, []RecoveryPeer{{ID: "n1", Address: "127.0.0.1:1"}}, store.DefaultConfig(), nil)
	if !errors.Is(err, ErrInUse) {
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
