package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// TestDrainAcrossLeaderKill: a drain of one of a worker's segments (the worker runs the moves the
// cluster assigns it) closes the segment at once, survives a leader kill in the middle, waits for
// an object a reader keeps leased, and completes: no object is left on the drained segment, and
// every object is readable with the replica count it had, groups included. metactl's drain verbs
// start it and show its progress.
func TestDrainAcrossLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "30s", "--lease-ttl", "2s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	c.StartWorker(2, "64MiB", "--run-tasks", "--task-interval", "50ms")
	c.StartWorker(1, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	var segs []*metadv1.SegmentInfo
	waitUntil(t, 20*time.Second, "three worker segments mounted", func() bool {
		var err error
		segs, err = cl.ListSegments(ctx, client.SegmentFilter{})
		return err == nil && len(segs) == 3
	})
	owners := map[string]int{}
	for _, s := range segs {
		owners[string(s.GetSegment().GetOwnerClientId())]++
	}
	var drained []byte // a segment of the worker that runs tasks (the one with two segments)
	for _, s := range segs {
		if owners[string(s.GetSegment().GetOwnerClientId())] == 2 {
			drained = s.GetSegment().GetId()
			break
		}
	}
	onDrained := func(reps []*metadv1.Replica) bool {
		for _, r := range reps {
			if bytes.Equal(r.GetSegmentId(), drained) {
				return true
			}
		}
		return false
	}

	want := map[string]int{} // key -> replicas
	var there []string
	for i := range 60 {
		k, opts := fmt.Sprintf("dr-%03d", i), &client.PutOptions{}
		switch {
		case i%6 == 0:
			opts.MemoryReplicas = 2
		case i%6 == 1:
			opts.Group = "dr-group"
		}
		reps, err := cl.Put(ctx, "", k, 4096, opts)
		if err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		want[k] = len(reps)
		if onDrained(reps) {
			there = append(there, k)
		}
	}
	if len(there) < 12 {
		t.Fatalf("placement put %d of 60 objects on the drained segment; want at least 12", len(there))
	}
	leased := there[0]
	stopLease := make(chan struct{})
	leaseDone := make(chan struct{})
	go func() { // keeps leased under a read lease until stopLease closes
		defer close(leaseDone)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			_, _ = cl.Get(ctx, "", leased)
			select {
			case <-stopLease:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		select {
		case <-stopLease:
		default:
			close(stopLease)
		}
		<-leaseDone
	}()

	out, err := c.Metactl("-o", "json", "drain", "start", "--segments", uuidOf(t, drained), "--max-concurrency", "4")
	if err != nil {
		t.Fatalf("drain start: %v\n%s", err, out)
	}
	var started struct {
		ID          uint64 `json:"drain_id"`
		State       string `json:"state"`
		ObjectsLeft uint64 `json:"objects_left"`
	}
	if err := json.Unmarshal([]byte(out), &started); err != nil || started.ID == 0 || started.State != "RUNNING" {
		t.Fatalf("drain start answered %q: %v", out, err)
	}
	for i := range 5 {
		reps, err := cl.Put(ctx, "", fmt.Sprintf("dr-new-%d", i), 4096, &client.PutOptions{PreferredSegments: []client.UUID{mustUUID(t, drained)}})
		if err != nil || onDrained(reps) {
			t.Fatalf("a put during the drain: %v %v; want no replica on the drained segment", reps, err)
		}
	}
	status := func() *metadv1.DrainJob {
		jobs, err := cl.DrainStatus(ctx, started.ID)
		if err != nil || len(jobs) != 1 {
			t.Logf("drain status: %v %v", jobs, err)
			return nil
		}
		return jobs[0]
	}
	waitUntil(t, 30*time.Second, "the first moves", func() bool { j := status(); return j != nil && j.GetMoved() >= 6 })
	c.Kill(leader)
	if nl := c.Leader(cl, 20*time.Second); nl == leader {
		t.Fatal("the killed node is still leader")
	}
	waitUntil(t, 60*time.Second, "every object but the leased one moved", func() bool {
		j := status()
		return j != nil && j.GetObjectsLeft() == 1
	})
	g, err := cl.Get(ctx, "", leased)
	if err != nil || !onDrained(g.GetReplicas()) {
		t.Fatalf("the leased object left its source while leased: %v %v", g, err)
	}
	close(stopLease)
	<-leaseDone
	waitUntil(t, 60*time.Second, "the drain done", func() bool {
		j := status()
		return j != nil && j.GetState() == metadv1.DrainState_DRAIN_STATE_DONE
	})
	for k, n := range want {
		g, err := cl.Get(ctx, "", k)
		if reps := g.GetReplicas(); err != nil || len(reps) != n || onDrained(reps) {
			t.Fatalf("get %s after the drain: %v %v; want %d replicas, none on the drained segment", k, reps, err, n)
		}
	}
	text, err := c.Metactl("drain", "status", fmt.Sprint(started.ID))
	if err != nil || !strings.Contains(text, "DONE") || !strings.Contains(text, "LEFT") {
		t.Fatalf("drain status: %v\n%s", err, text)
	}
	text, err = c.Metactl("drain", "status", fmt.Sprint(started.ID), "--wait")
	if err != nil || !strings.Contains(text, "0 objects left") {
		t.Fatalf("drain status --wait: %v\n%s", err, text)
	}
	if segs, err := cl.ListSegments(ctx, client.SegmentFilter{}); err == nil {
		for _, s := range segs {
			if bytes.Equal(s.GetSegment().GetId(), drained) && !s.GetClosing() {
				t.Fatalf("the drained segment takes allocations: %v", s)
			}
		}
	}
}

func mustUUID(t *testing.T, b []byte) client.UUID {
	t.Helper()
	u, err := client.UUIDFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func uuidOf(t *testing.T, b []byte) string { return mustUUID(t, b).String() }
