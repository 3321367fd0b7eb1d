package ha_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"metad/ha"
)

// voterOf reports whether the configuration as node l sees it has name as a voter, and whether it
// has name at all.
func voterOf(t *testing.T, l *ha.Node, name string) (voter, member bool) {
	t.Helper()
	ms, err := l.Members()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m ha.Member) bool { return m.Name == name })
	if i < 0 {
		return false, false
	}
	return ms[i].Voter, true
}

// TestLearnerReplicatesWithoutVoting: a learner gets the log and applies it, but neither votes
// nor stands: two voters and a learner have no leader once one voter is down. Promoted, it
// votes: then one voter down of three leaves a leader.
func TestLearnerReplicatesWithoutVoting(t *testing.T) {
	c := newCluster(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.Propose(ha.MountCmd())
	n3 := c.Add("n3")
	if _, err := c.WaitLeader().Node().AddLearner(ctx, "n3", n3.PeerAddr); err != nil {
		t.Fatal(err)
	}
	if voter, member := voterOf(t, c.WaitLeader().Node(), "n3"); !member || voter {
		t.Fatalf("n3 after AddLearner: member %v voter %v, want a non-voter", member, voter)
	}
	put(t, c, "before")
	c.WaitFor("the learner to apply the log", 5*time.Second, func() bool { return readable(n3, "before") })

	// One of the two voters down: the other cannot win an election, the learner gives no vote.
	leader := c.WaitLeader().Name
	c.Stop(leader)
	// Watched for 2 s, several election timeouts of this cluster's configuration: what must not
	// happen has had its chances.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); <-tick.C {
		for _, m := range c.Running() {
			if m.Node().IsLeader() {
				t.Fatalf("%s leads with one voter of two down: the learner voted", m.Name)
			}
		}
	}
	c.Restart(leader)
	l := c.WaitLeader().Node()
	idx, err := l.PromoteMember(ctx, "n3")
	if err != nil || idx == 0 {
		t.Fatalf("promote: index %d, %v", idx, err)
	}
	if voter, _ := voterOf(t, l, "n3"); !voter {
		t.Fatal("n3 is no voter after PromoteMember")
	}
	if again, err := l.PromoteMember(ctx, "n3"); err != nil || again != 0 {
		t.Fatalf("promoting a voter: index %d, %v; want a no-op", again, err)
	}
	// Now a quorum of three: one voter down leaves a leader, and writes go on.
	other := c.Followers()[0].Name
	if other == "n3" {
		other = c.Followers()[1].Name
	}
	c.Stop(other)
	put(t, c, "after")
	c.WaitFor("n3 to apply the write made with its vote", 5*time.Second, func() bool { return readable(n3, "after") })
	if _, err := c.WaitLeader().Node().PromoteMember(ctx, "ghost"); err == nil {
		t.Fatal("promoted a member that is not in the configuration")
	}
}
