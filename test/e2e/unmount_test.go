package e2e

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"metad/client"
	"metad/proto/metadv1"
)

// TestGracefulUnmountAcrossLeaderKill: a worker's segment under a graceful unmount takes no new
// replica while its objects stay readable; the leader is killed with the unmount pending, and the
// new leader (which read the deadline from the replicated state) unmounts it when the grace ends,
// dropping the replicas that lived there.
func TestGracefulUnmountAcrossLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "30s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	c.StartWorker(2, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var segs []*metadv1.SegmentInfo
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		segs, err = cl.ListSegments(ctx, client.SegmentFilter{})
		if err == nil && len(segs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker segments not mounted: %v %v", segs, err)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	closing := segs[0].GetSegment()
	onClosing := func(reps []*metadv1.Replica) bool {
		for _, r := range reps {
			if bytes.Equal(r.GetSegmentId(), closing.GetId()) {
				return true
			}
		}
		return false
	}
	var there, elsewhere []string
	for i := range 60 {
		k := fmt.Sprintf("gu-%03d", i)
		reps, err := cl.Put(ctx, "", k, 4096, nil)
		if err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		if onClosing(reps) {
			there = append(there, k)
		} else {
			elsewhere = append(elsewhere, k)
		}
	}
	if len(there) == 0 || len(elsewhere) == 0 {
		t.Fatalf("placement put %d objects on one segment and %d on the other; want some on each", len(there), len(elsewhere))
	}

	owner, err := client.UUIDFromBytes(closing.GetOwnerClientId())
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.UUIDFromBytes(closing.GetId())
	if err != nil {
		t.Fatal(err)
	}
	const grace = 8 * time.Second
	resp, err := cl.UnmountSegmentGraceful(ctx, owner, id, grace)
	if err != nil || !resp.GetClosing() || resp.GetUnmountAtUnixNano() == 0 {
		t.Fatalf("graceful unmount: %v %v", resp, err)
	}
	at := resp.GetUnmountAtUnixNano()
	for i := range 20 {
		k := fmt.Sprintf("gu-new-%03d", i)
		reps, err := cl.Put(ctx, "", k, 4096, &client.PutOptions{PreferredSegments: []client.UUID{id}})
		if err != nil {
			t.Fatalf("put %s while closing: %v", k, err)
		}
		if onClosing(reps) {
			t.Fatalf("put %s placed a replica on the closing segment", k)
		}
	}
	for _, k := range there {
		if _, err := cl.Get(ctx, "", k); err != nil {
			t.Fatalf("get %s on the closing segment: %v", k, err)
		}
	}

	c.Kill(leader)
	if nl := c.Leader(cl, 20*time.Second); nl == leader {
		t.Fatal("the killed node is still leader")
	}
	// The worker remounts a segment the cluster dropped, as an empty open one: the unmount shows in
	// the objects that lived there.
	end := time.Now().Add(grace + 30*time.Second)
	for {
		_, err := cl.Get(ctx, "", there[0])
		if client.ReasonOf(err) == metadv1.Reason_REASON_OBJECT_NOT_FOUND {
			break
		}
		if err != nil && time.Now().After(end) {
			t.Fatalf("get %s: %v", there[0], err)
		}
		if segs, lerr := cl.ListSegments(ctx, client.SegmentFilter{}); lerr == nil {
			for _, s := range segs {
				if bytes.Equal(s.GetSegment().GetId(), closing.GetId()) && (!s.GetClosing() || s.GetUnmountAtUnixNano() != at) {
					// Unmounted (and remounted by the worker) since the Get above, or a wrong state.
					if _, err := cl.Get(ctx, "", there[0]); client.ReasonOf(err) != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
						t.Fatalf("before its unmount, after the leader change, the segment reads %v; want closing until %d", s, at)
					}
				}
			}
		}
		if time.Now().After(end) {
			t.Fatal("the closing segment was not unmounted after its grace")
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	if time.Now().UnixNano() < at {
		t.Fatalf("unmounted before its deadline %d", at)
	}
	for _, k := range there {
		if _, err := cl.Get(ctx, "", k); client.ReasonOf(err) != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
			t.Fatalf("get %s after the unmount: %v; want OBJECT_NOT_FOUND", k, err)
		}
	}
	for _, k := range elsewhere {
		if _, err := cl.Get(ctx, "", k); err != nil {
			t.Fatalf("get %s, never on the unmounted segment: %v", k, err)
		}
	}
}
