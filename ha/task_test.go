package ha

import (
	"bytes"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// TestReplicaTaskSurvivesLeaderChange: a copy started on one leader is still in progress on the
// next after the first is killed (its object protected from removal there), and the new leader
// ends it; a task scheduled on the first is fetched from the next; the old leader catches up to
// the same state.
func TestReplicaTaskSurvivesLeaderChange(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.propose(mountCmd())
	second := mountCmd()
	second.GetMountSegment().Segment.Id = bytes.Repeat([]byte{0x5f}, 16)
	c.propose(second)
	s, e := putCmds("k")
	s.GetPutStart().Config.PreferredSegmentIds = [][]byte{bytes.Repeat([]byte{0x5e}, 16)}
	for _, cmd := range []*metadv1.Command{s, e} {
		if r := c.propose(cmd); r.Reason != store.OK {
			t.Fatalf("put: %s %s", r.Reason, r.Message)
		}
	}
	start := &metadv1.Command{Op: &metadv1.Command_ReplicaTaskStart{ReplicaTaskStart: &metadv1.ReplicaTaskStart{
		ClientId: testClient, Key: []byte("k"), Kind: metadv1.TaskKind_TASK_KIND_COPY,
		SourceSegmentId: bytes.Repeat([]byte{0x5e}, 16), TargetSegmentIds: [][]byte{bytes.Repeat([]byte{0x5f}, 16)}}}}
	if r := c.propose(start); r.Reason != store.OK {
		t.Fatalf("copy start: %s %s", r.Reason, r.Message)
	}
	created := c.propose(&metadv1.Command{Op: &metadv1.Command_CreateTask{CreateTask: &metadv1.CreateTask{
		Kind: metadv1.TaskKind_TASK_KIND_MOVE, Key: []byte("k")}}})
	if created.Reason != store.OK || len(created.Tasks) != 1 {
		t.Fatalf("create task: %s %s", created.Reason, created.Message)
	}
	old := c.waitLeader()
	oldName := old.cfg.Name
	_ = old.Kill()
	delete(c.nodes, oldName)
	nl := c.waitLeader()
	if nl.cfg.Name == oldName {
		t.Fatal("killed node is leader")
	}
	if _, err := storeOf(nl).PrepareRemove(0, "", "k", true); store.ReasonOf(err) != store.ObjectHasReplicationTask {
		t.Fatalf("Remove on the new leader: %v, want OBJECT_HAS_REPLICATION_TASK", err)
	}
	end := &metadv1.Command{Op: &metadv1.Command_ReplicaTaskEnd{ReplicaTaskEnd: &metadv1.ReplicaTaskEnd{
		ClientId: testClient, Key: []byte("k"), Kind: metadv1.TaskKind_TASK_KIND_COPY}}}
	if r := c.propose(end); r.Reason != store.OK {
		t.Fatalf("copy end on the new leader: %s %s", r.Reason, r.Message)
	}
	if g, err := storeOf(nl).Peek("", "k"); err != nil || len(g.Replicas) != 2 {
		t.Fatalf("after CopyEnd on the new leader: %+v, %v", g, err)
	}
	fetched := c.propose(&metadv1.Command{Op: &metadv1.Command_FetchTasks{FetchTasks: &metadv1.FetchTasks{ClientId: testClient, Batch: 4}}})
	if fetched.Reason != store.OK || len(fetched.Tasks) != 1 || fetched.Tasks[0].ID != created.Tasks[0].ID {
		t.Fatalf("the scheduled task on the new leader: %+v", fetched)
	}
	c.start(oldName)
	c.waitConverged()
}
