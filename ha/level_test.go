package ha_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"metad/fsm"
	"metad/ha"
	"metad/ha/hatest"
	metadv1 "metad/proto/metadv1"
)

// TestClusterLevelGatesCommands: the cluster's level is the lowest its members record (none
// recorded: 1); a command above it is refused with ErrFeatureLevel and no log entry, and proposed
// again once every member records the level.
func TestClusterLevelGatesCommands(t *testing.T) {
	c := hatest.New(t, 1, hatest.Options{})
	lm := c.WaitLeader()
	l, name := lm.Node(), lm.Name
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.WaitFor("the leader to record itself", 5*time.Second, l.SelfRecorded)
	if lvl, m := l.ClusterLevel(); lvl != fsm.FeatureLevel || m != name {
		t.Fatalf("ClusterLevel = %d, %q; want %d, %q", lvl, m, fsm.FeatureLevel, name)
	}
	if ms, err := l.Members(); err != nil || len(ms) != 1 || ms[0].Level != fsm.FeatureLevel {
		t.Fatalf("Members = %+v, %v; want the leader at level %d", ms, err, fsm.FeatureLevel)
	}
	retire := &metadv1.Command{Op: &metadv1.Command_ArenaRetire{ArenaRetire: &metadv1.ArenaRetire{}}}
	if fsm.LevelOf(retire) != fsm.LevelArenas || fsm.LevelArenas < 2 {
		t.Fatalf("ArenaRetire at level %d", fsm.LevelOf(retire))
	}
	if _, err := l.Propose(ctx, retire); err != nil {
		t.Fatalf("ArenaRetire at the cluster's level: %v", err)
	}
	// The member's record as an older binary writes it: no level.
	old := l.Self()
	old.Level = 0
	if err := l.RecordMember(ctx, old); err != nil {
		t.Fatal(err)
	}
	if lvl, m := l.ClusterLevel(); lvl != 1 || m != name {
		t.Fatalf("ClusterLevel with a member of no recorded level = %d, %q; want 1", lvl, m)
	}
	last := l.Raft().LastIndex()
	_, err := l.Propose(ctx, retire)
	var fe *ha.FeatureLevelError
	if !errors.Is(err, ha.ErrFeatureLevel) || !errors.As(err, &fe) || fe.Need != fsm.LevelArenas || fe.Have != 1 || fe.Member != name {
		t.Fatalf("ArenaRetire above the cluster's level: %v", err)
	}
	if l.Raft().LastIndex() != last {
		t.Fatal("a refused command reached the log")
	}
	if _, err := l.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "t"}}}); err != nil {
		t.Fatalf("a level-1 command: %v", err)
	}
	if l.SelfRecorded() {
		t.Fatal("SelfRecorded with the level missing from the record")
	}
	if err := l.RecordMember(ctx, l.Self()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Propose(ctx, retire); err != nil {
		t.Fatalf("ArenaRetire once the member records its level: %v", err)
	}
}
