package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"metad/client"
)

// TestPausedLeaderKeepsWorkers: SIGSTOP of the leader for longer than client_ttl, with a `metactl
// worker` pinging as `make run` starts it. The other two members form a quorum throughout, so the
// worker must reach the new leader in time: no client is expired, its segment stays mounted, and
// the objects in it survive. Writes resume within a few seconds of the pause, not at its end.
func TestPausedLeaderKeepsWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	const ttl = 4 * time.Second
	c := NewClusterDefaults(t, 3, "--client-ttl", ttl.String())
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	c.StartWorker(1, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var segID []byte
	waitUntil(t, 20*time.Second, "the worker's segment to be mounted", func() bool {
		segs, err := cl.ListSegments(ctx, client.SegmentFilter{})
		if err == nil && len(segs) == 1 {
			segID = segs[0].GetSegment().GetId()
			return true
		}
		return false
	})
	var keys []string
	for i := range 20 {
		k := fmt.Sprintf("paused-%02d", i)
		if _, err := cl.Put(ctx, "", k, 4096, nil); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		keys = append(keys, k)
	}

	// The baseline, in the same run: a client with no attempt watchdog, whose calls go to the
	// leader, waits out the whole pause.
	unwatched, err := client.New(client.Config{Endpoints: []string{leader.Client}, AttemptTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer unwatched.Close()
	baseline := make(chan time.Duration, 1)

	hold := ttl + 3*time.Second
	paused := time.Now()
	c.Pause(leader)
	t.Cleanup(func() { c.Resume(leader) })
	go func() {
		for i := 0; ; i++ {
			wctx, wcancel := context.WithTimeout(ctx, 2*hold)
			_, err := unwatched.Put(wctx, "", fmt.Sprintf("unwatched-%d", i), 4096, nil)
			wcancel()
			if err == nil || ctx.Err() != nil {
				baseline <- time.Since(paused)
				return
			}
		}
	}()
	var firstWrite time.Duration
	for i := 0; time.Since(paused) < hold; i++ {
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cl.Put(wctx, "", fmt.Sprintf("during-pause-%d", i), 4096, nil)
		wcancel()
		if err == nil && firstWrite == 0 {
			firstWrite = time.Since(paused)
		}
		if firstWrite != 0 {
			time.Sleep(100 * time.Millisecond) // pace the writes; the pause's length is what we wait for
		}
	}
	c.Resume(leader)
	t.Logf("leader %s paused for %s (client ttl %s); first successful write after %s; without the attempt watchdog after %s",
		leader.Name, hold, ttl, firstWrite, <-baseline)
	if firstWrite == 0 || firstWrite > 5*time.Second {
		t.Errorf("writes resumed %s after the pause began; want within 5 s", firstWrite)
	}
	// Just after SIGCONT the old leader may still call itself leader until it hears of the new
	// term; it must step down within a few heartbeats.
	waitUntil(t, 10*time.Second, "a leader other than the paused "+leader.Name, func() bool {
		return c.Leader(cl, 20*time.Second) != leader
	})

	var expired float64
	for _, p := range c.Nodes {
		v, err := c.MetricValue(p, "metad_server_clients_expired_total")
		if err != nil {
			t.Fatalf("%s metrics: %v", p.Name, err)
		}
		expired += v
	}
	if expired != 0 {
		t.Errorf("%v clients expired while a quorum was up", expired)
	}
	segs, err := cl.ListSegments(ctx, client.SegmentFilter{})
	if err != nil || len(segs) != 1 || string(segs[0].GetSegment().GetId()) != string(segID) {
		t.Fatalf("the worker's segment after the pause: %v %v, want the same one segment", segs, err)
	}
	for _, k := range keys {
		if _, err := cl.Get(ctx, "", k); err != nil {
			t.Errorf("object %s in the worker's segment: %v", k, err)
		}
	}
}

// waitUntil polls cond every 20 ms until it holds, failing tb after within. Every e2e test and
// benchmark waits through it.
func waitUntil(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
