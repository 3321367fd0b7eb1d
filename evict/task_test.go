package evict

import (
	"testing"

	"metad/store"
	"metad/store/alloc"
)

// TestEvictionSkipsReplicaTasks: the oldest object, which a copy is reading, is passed over by a
// memory round (the next oldest go instead) and stays with its source replica.
func TestEvictionSkipsReplicaTasks(t *testing.T) {
	x := newFixture(t, nil)
	nof := alloc.ID{0x5e, 15: 9}
	x.mount(nof, alloc.TierNOF, 4*slot)
	fill95(x, nil)
	if _, err := x.s.StartReplicaTask(x.clock.Load(), 1, store.ReplicaTaskRequest{Client: client, Key: key(0), Kind: store.TaskCopy,
		Source: memSeg, Targets: []alloc.ID{nof}}); err != nil {
		t.Fatal(err)
	}
	if out := x.memoryRound(); out.objects == 0 {
		t.Fatal("nothing evicted")
	}
	if !x.exists("", key(0)) {
		t.Fatal("the object being copied was evicted")
	}
	if x.exists("", key(1)) {
		t.Fatal("the next oldest object was kept")
	}
	x.check()
}
