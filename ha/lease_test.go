package ha

import (
	"context"
	"testing"
	"time"
)

// TestLeaseRules: a lease holds from the start of the round that confirmed it for its duration, in
// its term only; a round that started before a transfer began or ended counts for nothing; none
// holds while a transfer runs.
func TestLeaseRules(t *testing.T) {
	l := &leaderLease{dur: 100 * time.Millisecond}
	t0 := time.Now()
	if l.holds(1, t0) {
		t.Fatal("a lease before any round")
	}
	l.confirmed(1, t0)
	switch {
	case !l.holds(1, t0.Add(99*time.Millisecond)):
		t.Fatal("no lease within its duration")
	case l.holds(1, t0.Add(100*time.Millisecond)):
		t.Fatal("a lease at its end")
	case l.holds(2, t0.Add(time.Millisecond)):
		t.Fatal("a lease in another term")
	case l.holds(0, t0.Add(time.Millisecond)):
		t.Fatal("a lease in no term")
	}
	l.confirmed(1, t0.Add(-time.Second)) // an older round changes nothing
	if !l.holds(1, t0.Add(50*time.Millisecond)) {
		t.Fatal("an older round shortened the lease")
	}
	l.transfer(true)
	if l.holds(1, t0.Add(time.Millisecond)) {
		t.Fatal("a lease while a transfer runs")
	}
	l.confirmed(1, time.Now()) // a round during the transfer
	if l.holds(1, time.Now()) {
		t.Fatal("a lease taken while a transfer runs")
	}
	before := time.Now()
	l.transfer(false)
	l.confirmed(1, before) // started before the transfer ended
	if l.holds(1, time.Now()) {
		t.Fatal("a round that started before the transfer ended gave a lease")
	}
	after := time.Now()
	l.confirmed(1, after)
	if !l.holds(1, after.Add(time.Millisecond)) {
		t.Fatal("no lease from a round after the transfer")
	}
}

// TestLeaseOnlyOnTheLeader: the leader holds a lease after a read barrier, a follower never does,
// and the old leader holds none once it starts a transfer.
func TestLeaseOnlyOnTheLeader(t *testing.T) {
	// A longer lease than the fixture's 75 ms, so that a slow round under the race detector
	// still leaves some of it.
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.HeartbeatTimeout, cfg.ElectionTimeout = time.Second, time.Second })
	l := c.waitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if term := l.LeaseTerm(); term == 0 || term != l.Status().Term {
		t.Fatalf("leader's lease term %d, status term %d", term, l.Status().Term)
	}
	var target string
	for name, n := range c.nodes {
		if n != l {
			if n.LeaseTerm() != 0 {
				t.Fatalf("follower %s holds a lease", name)
			}
			target = name
		}
	}
	if _, err := l.TransferLeader(ctx, target); err != nil {
		t.Fatal(err)
	}
	if l.LeaseTerm() != 0 {
		t.Fatal("the old leader still holds a lease after the transfer")
	}
	nl := c.waitLeader()
	if err := nl.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if nl.LeaseTerm() == 0 {
		t.Fatal("the new leader holds no lease after a read barrier")
	}
}
