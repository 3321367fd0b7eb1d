package ha_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"metad/fsm"
	"metad/ha"
	"metad/ha/hatest"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/snapshot/snapshottest"
)

// saveSnapshot streams a fresh snapshot from the leader into memory.
func saveSnapshot(t *testing.T, c *hatest.Cluster) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.WaitLeader().Node().OpenSnapshot(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := io.ReadAll(s)
	if err != nil || int64(len(b)) != s.Size {
		t.Fatalf("read snapshot: %d of %d bytes, %v", len(b), s.Size, err)
	}
	return b
}

// authCmds are auth commands for principal p: a key (id) and each role granted.
func authCmds(p, id string, roles ...string) []*metadv1.Command {
	out := []*metadv1.Command{{Op: &metadv1.Command_CreateKey{CreateKey: &metadv1.CreateKey{
		Id: id, Principal: p, Sha256: bytes.Repeat([]byte{1}, 32), CreatedMs: 1}}}}
	for _, r := range roles {
		out = append(out, &metadv1.Command{Op: &metadv1.Command_GrantRole{GrantRole: &metadv1.GrantRole{Principal: p, Role: r}}})
	}
	return out
}

func TestSnapshotSaveAndOnlineRestore(t *testing.T) {
	// The source's members record other client addresses than the destination's: a restore that
	// kept the file's member records would show.
	src := hatest.New(t, 3, hatest.Options{Config: func(cfg *ha.Config, _ *fsm.FSM) { cfg.ClientAddr = "src-" + cfg.ClientAddr }})
	src.Propose(ha.MountCmd())
	for _, c := range authCmds("src-op", "00000000000000aa", "admin", "reader") { // auth revision 3
		src.Propose(c)
	}
	for i := range 30 {
		put(t, src, fmt.Sprintf("src-%02d", i))
	}
	src.WaitConverged()
	file := saveSnapshot(t, src)
	info, err := snapshot.Inspect(bytes.NewReader(file))
	if err != nil || info.Objects != 30 {
		t.Fatalf("inspect the saved snapshot: %+v %v", info, err)
	}
	// A follower saves its own state only with allowStale.
	for _, f := range src.Followers() {
		n := f.Node()
		if _, err := n.OpenSnapshot(context.Background(), false); !errors.Is(err, ha.ErrNotLeader) {
			t.Fatalf("follower save without allowStale: %v", err)
		}
		s, err := n.OpenSnapshot(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
	}

	dst := newCluster(t, 3, nil)
	dst.Propose(ha.MountCmd())
	for _, c := range authCmds("dst-op", "00000000000000bb", "admin") { // auth revision 2
		dst.Propose(c)
	}
	put(t, dst, "only-in-dst")
	dst.WaitConverged()
	l := dst.WaitLeader()
	membersBefore := l.FSM().Members()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := l.Node().RestoreSnapshot(ctx, bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.GetObjects() != 30 || res.Index == 0 {
		t.Fatalf("restore result %+v", res)
	}
	dst.WaitConverged()
	// The restore advances the state epoch by one on every node (commands prepared against the
	// replaced state are refused), and otherwise installs exactly the saved state.
	want := hatest.DigestAt(src.Running()[0].FSM(), 1)
	if want == nil {
		t.Fatal("no digest of the source's state")
	}
	for _, n := range dst.Running() {
		name := n.Name
		if e := n.Store().Epoch(); e != 1 {
			t.Fatalf("%s: state epoch %d after the first restore, want 1", name, e)
		}
		if !bytes.Equal(hatest.Digest(n.FSM()), want) {
			t.Fatalf("%s holds a state other than the snapshot's", name)
		}
		// The keys and role bindings are this cluster's (a restore must not lock out its
		// operator), at the larger auth revision (it never goes back).
		a := n.FSM().Auth()
		if _, ok := a.Key("00000000000000bb"); !ok || len(a.Keys()) != 1 || len(a.Roles("dst-op")) != 1 || a.Roles("src-op") != nil ||
			a.Revision() != 3 {
			t.Fatalf("%s: auth state after the restore: keys %v, principals %v, revision %d", name, a.Keys(), a.Principals(), a.Revision())
		}
		// The member records are this cluster's, never the source's.
		for mname, m := range n.FSM().Members() {
			if b, ok := membersBefore[mname]; ok && b != m || m.ClientAddr != dst.Member(mname).Config().ClientAddr {
				t.Fatalf("%s: member %s recorded as %+v after the restore", name, mname, m)
			}
		}
	}
	if readable(l, "only-in-dst") {
		t.Fatal("the restore kept an object the snapshot does not have")
	}
	put(t, dst, "after-restore")
	dst.WaitConverged()
	if err := l.Node().ReadBarrier(ctx); err != nil {
		t.Fatalf("read barrier after the restore: %v", err)
	}
	// A leader serves linearizable reads right after a restore, with no write in between.
	if _, err := l.Node().RestoreSnapshot(ctx, bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	if err := dst.WaitLeader().Node().ReadBarrier(rctx); err != nil {
		t.Fatalf("read barrier right after a restore: %v", err)
	}
	dst.WaitConverged()
	for _, n := range dst.Running() {
		if e := n.Store().Epoch(); e != 2 {
			t.Fatalf("%s: state epoch %d after the second restore, want 2", n.Name, e)
		}
	}
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
		"overlapping": {snapshottest.Overlapping(t, good), snapshot.ErrCorrupt},
	}
}

func TestOnlineRestoreRefusesBadFiles(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.Propose(ha.MountCmd())
	for i := range 5 {
		put(t, c, fmt.Sprintf("k%d", i))
	}
	c.WaitConverged()
	good := saveSnapshot(t, c)
	before := hatest.Digest(c.Running()[0].FSM())
	if before == nil {
		t.Fatal("no digest of the state")
	}
	l := c.WaitLeader()
	idx, _ := l.FSM().Applied()
	for name, bad := range badSnapshots(t, good) {
		_, err := l.Node().RestoreSnapshot(context.Background(), bytes.NewReader(bad.file))
		if !errors.Is(err, ha.ErrInvalidSnapshot) || !errors.Is(err, bad.kind) {
			t.Errorf("%s: got %v, want %v", name, err, bad.kind)
		}
		t.Logf("%s: %v", name, err)
	}
	if after, _ := l.FSM().Applied(); after != idx {
		t.Fatalf("a refused restore moved the applied index from %d to %d", idx, after)
	}
	for _, n := range c.Running() {
		if !bytes.Equal(hatest.Digest(n.FSM()), before) {
			t.Fatalf("%s: a refused restore changed the state", n.Name)
		}
	}
	spools, _ := filepath.Glob(filepath.Join(l.DataDir, ha.SpoolPattern))
	if len(spools) > 0 {
		t.Fatalf("spool files left behind: %v", spools)
	}
}
