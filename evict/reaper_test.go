package evict

import (
	"context"
	"testing"
	"time"

	"metad/store"
)

// TestReaperRevokesStaleWrites: writes PROCESSING longer than put_release_timeout are revoked;
// younger ones and completed objects stay.
func TestReaperRevokesStaleWrites(t *testing.T) {
	x := newFixture(t, nil)
	x.start("stale")  // PutStart at t0
	x.put("complete") // COMPLETE at t0
	young := store.PutStartRequest{Client: client, Key: "young", Size: slot, Config: store.ReplicaConfig{Memory: 1}}
	x.clock.Store(t0 + int64(10*time.Minute) + 1) // just past 600 s after t0
	if _, err := x.s.PutStart(t0+int64(5*time.Minute), 1, young); err != nil {
		t.Fatal(err)
	}
	n, err := x.ev.reap(context.Background(), x.s)
	if err != nil || n != 1 {
		t.Fatalf("reap revoked %d, %v; want 1", n, err)
	}
	if x.exists("", "stale") || !x.exists("", "complete") || !x.exists("", "young") {
		t.Fatalf("after reaping: %v", x.keys(""))
	}
	x.check()
}

// The reaper runs every interval, but waits up to three of them while a drain is making progress.
func TestReapDue(t *testing.T) {
	e := &Evictor{cfg: Config{ReapInterval: 10 * time.Second}}
	for _, c := range []struct {
		since time.Duration
		busy  bool
		want  bool
	}{
		{9 * time.Second, false, false},
		{10 * time.Second, false, true},
		{10 * time.Second, true, false},
		{29 * time.Second, true, false},
		{30 * time.Second, true, true},
	} {
		if got := e.reapDue(c.since, c.busy); got != c.want {
			t.Errorf("since %s busy %v: due %v, want %v", c.since, c.busy, got, c.want)
		}
	}
}
