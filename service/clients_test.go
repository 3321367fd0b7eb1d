package service

import (
	"testing"
	"time"

	"metad/store/alloc"
)

var (
	clientA = alloc.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	clientB = alloc.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
)

func TestLivenessGraceOnLeadership(t *testing.T) {
	const ttl = int64(time.Second)
	l := newLiveness()
	a := []alloc.ID{clientA}
	if got := l.expired(a, 0, ttl); len(got) != 0 {
		t.Fatalf("an owner seen for the first time is expired: %v", got)
	}
	if got := l.expired(a, 2*ttl, ttl); len(got) != 1 {
		t.Fatal("a silent owner is not expired")
	}
	l.leadershipChanged(true, 2*ttl) // a new leader: fresh grace for every known client
	if got := l.expired(a, 2*ttl+ttl/2, ttl); len(got) != 0 {
		t.Fatalf("expired within the new leader's grace: %v", got)
	}
	if got := l.expired(a, 3*ttl, ttl); len(got) != 1 {
		t.Fatal("not expired after the grace")
	}
	l.leadershipChanged(false, 3*ttl)
	if got := l.expired(a, 10*ttl, ttl); len(got) != 0 {
		t.Fatalf("the table survived the loss of leadership: %v", got)
	}
	l.touch(clientB, 10*ttl)
	if got := l.expired(a, 11*ttl, ttl); len(got) != 1 || len(l.last) != 1 {
		t.Fatalf("a client that owns nothing and went silent is kept: %v %v", got, l.last)
	}
}
