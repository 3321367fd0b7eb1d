package ha_test

import (
	"bytes"
	"testing"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// TestReplicaTaskSurvivesLeaderChange: a copy started on one leader is still in progress on the
// next after the first is killed (its object protected from removal there), and the new leader
// ends it; a task scheduled on the first is fetched from the next; the old leader catches up to
// the same state.
func TestReplicaTaskSurvivesLeaderChange(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.Propose(ha.MountCmd())
	second := ha.MountCmd()
	second.GetMountSegment().Segment.Id = bytes.Repeat([]byte{0x5f}, 16)
	c.Propose(second)
	s, e := ha.PutCmds("k")
	s.GetPutStart().Config.PreferredSegmentIds = [][]byte{bytes.Repeat([]byte{0x5e}, 16)}
	for _, cmd := range []*metadv1.Command{s, e} {
		if r := c.Propose(cmd); r.Reason != store.OK {
			t.Fatalf("put: %s %s", r.Reason, r.Message)
		}
	}
	start := &metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: &metadv1.ReplicaTaskStart{
		ClientId: ha.TestClient, Key: []byte("k"), Kind: metadv1.TaskKind_TASK_KIND_COPY,
		SourceSegmentId: bytes.Repeat([]byte{0x5e}, 16), TargetSegmentIds: [][]byte{bytes.Repeat([]byte{0x5f}, 16)}}}}
	if r := c.Propose(start); r.Reason != store.OK {
		t.Fatalf("copy start: %s %s", r.Reason, r.Message)
	}
	created := c.Propose(&metadv1.Command{Op: &metadv1.Command_CreateTask{CreateTask: &metadv1.CreateTask{
		Kind: metadv1.TaskKind_TASK_KIND_MOVE, Key: []byte("k")}}})
	if created.Reason != store.OK || len(created.Tasks) != 1 {
		t.Fatalf("create task: %s %s", created.Reason, created.Message)
	}
	old := c.WaitLeader()
	c.Stop(old.Name)
	nl := c.WaitLeader()
	if nl == old {
		t.Fatal("killed node is leader")
	}
	if _, err := nl.Store().PrepareRemove(0, "", "k", true); store.ReasonOf(err) != store.ObjectHasReplicationTask {
		t.Fatalf("Remove on the new leader: %v, want OBJECT_HAS_REPLICATION_TASK", err)
	}
	end := &metadv1.Command{Op: &metadv1.Command_ReplicaTaskEnd{ReplicaTaskEnd: &metadv1.ReplicaTaskEnd{
		ClientId: ha.TestClient, Key: []byte("k"), Kind: metadv1.TaskKind_TASK_KIND_COPY}}}
	if r := c.Propose(end); r.Reason != store.OK {
		t.Fatalf("copy end on the new leader: %s %s", r.Reason, r.Message)
	}
	if g, err := nl.Store().Peek("", "k"); err != nil || len(g.Replicas) != 2 {
		t.Fatalf("after CopyEnd on the new leader: %+v, %v", g, err)
	}
	fetched := c.Propose(&metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: ha.TestClient, Batch: 4}}})
	if fetched.Reason != store.OK || len(fetched.Tasks) != 1 || fetched.Tasks[0].ID != created.Tasks[0].ID {
		t.Fatalf("the scheduled task on the new leader: %+v", fetched)
	}
	c.Restart(old.Name)
	c.WaitConverged()
}
