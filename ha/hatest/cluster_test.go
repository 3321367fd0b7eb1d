package hatest_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"metad/ha/hatest"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

func TestMain(m *testing.M) {
	// As ha's TestMain: hashicorp/raft never answers an Apply future queued for the FSM when Raft
	// shuts down (hashicorp/raft#498), so the proposer's goroutine waiting on it stays blocked.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("metad/ha.(*Proposer).send.func1"))
}

// mount mounts segment i of a test client.
func mount(i int) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: bytes.Repeat([]byte{byte(i + 1)}, 16), Name: fmt.Sprintf("s%d", i), Base: uint64(i+1) << 32, Size: 64 << 20, Endpoint: "e",
		Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: bytes.Repeat([]byte{0xc1}, 16)}}}}
}

func propose(t *testing.T, c *hatest.Cluster, cmd *metadv1.Command) {
	t.Helper()
	if r := c.Propose(cmd); r.Reason != store.OK {
		t.Fatalf("propose: %s %s", r.Reason, r.Message)
	}
}

func segments(m *hatest.Member) int { return len(m.Store().Segments().List()) }

// A partitioned leader loses its office to the others, which go on committing; healed, it follows
// the new leader and catches up.
func TestPartitionAndHeal(t *testing.T) {
	c := hatest.New(t, 3, hatest.Options{})
	propose(t, c, mount(0))
	old := c.WaitLeader()
	c.Partition(old.Name)
	c.WaitFor("another ready leader", hatest.WaitTimeout, func() bool {
		l := c.Leader()
		return l != nil && l != old
	})
	c.WaitFor("the cut-off leader to step down", hatest.WaitTimeout, func() bool { return !old.Node().IsLeader() })
	propose(t, c, mount(1)) // on the majority's leader
	if n := segments(old); n != 1 {
		t.Fatalf("the cut-off member holds %d segments, want 1", n)
	}
	c.Heal(old.Name)
	c.WaitConverged()
	if n := segments(old); n != 2 {
		t.Fatalf("the healed member holds %d segments, want 2", n)
	}
}

// A crashed member restarts over its log and catches up; an added member joins and gets the state;
// a planned stop of the leader hands leadership over.
func TestStopRestartAddShutdown(t *testing.T) {
	c := hatest.New(t, 3, hatest.Options{})
	propose(t, c, mount(0))
	f := c.Followers()[0]
	c.Stop(f.Name)
	if f.Running() || len(c.Running()) != 2 {
		t.Fatalf("%s still running after Stop", f.Name)
	}
	propose(t, c, mount(1))
	before := f.FSM()
	c.Restart(f.Name)
	c.WaitConverged()
	if f.FSM() == before || segments(f) != 2 {
		t.Fatalf("the restarted member holds %d segments (new state machine: %v)", segments(f), f.FSM() != before)
	}

	n4 := c.Add("n4")
	ctx, cancel := context.WithTimeout(context.Background(), hatest.WaitTimeout)
	defer cancel()
	if _, err := c.WaitLeader().Node().AddMember(ctx, n4.Name, n4.PeerAddr); err != nil {
		t.Fatal(err)
	}
	c.WaitConverged()
	if segments(n4) != 2 {
		t.Fatalf("the added member holds %d segments", segments(n4))
	}

	l := c.WaitLeader()
	if err := c.Shutdown(l.Name); err != nil {
		t.Fatal(err)
	}
	nl := c.WaitLeader()
	if nl == l {
		t.Fatal("the stopped leader still leads")
	}
	propose(t, c, mount(2))
	c.WaitConverged()
}
