package ha

import (
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
