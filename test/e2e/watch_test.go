package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// watchLog collects one watch's events (safe for the watch's goroutine and the test's).
type watchLog struct {
	mu     sync.Mutex
	events []*metadv1.WatchEvent
}

func (w *watchLog) add(resp *metadv1.WatchResponse) error {
	w.mu.Lock()
	w.events = append(w.events, resp.GetEvents()...)
	w.mu.Unlock()
	return nil
}

func (w *watchLog) snapshot() []*metadv1.WatchEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// TestWatchAcrossFailures: one watch through a kill -9 of the leader, that member's restart, and
// a follower's planned restart, with writes and removals throughout. The events arrive in
// revision order, none twice, and replayed from nothing they give exactly the readable objects.
func TestWatchAcrossFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "30s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	c.StartWorker(2, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if segs, err := cl.ListSegments(ctx, client.SegmentFilter{}); err == nil && len(segs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker segments not mounted")
		}
	}

	var log watchLog
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	opened := make(chan struct{})
	var once sync.Once
	go func() {
		watchDone <- cl.Watch(wctx, client.WatchOptions{Progress: 200 * time.Millisecond}, func(r *metadv1.WatchResponse) error {
			once.Do(func() { close(opened) })
			return log.add(r)
		})
	}()
	select {
	case <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not open")
	}

	put := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			for deadline := time.Now().Add(30 * time.Second); ; {
				pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := cl.Put(pctx, "", fmt.Sprintf("w-%03d", i), 4096, nil)
				pcancel()
				if err == nil || client.IsReason(err, metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("put w-%03d: %v", i, err)
				}
			}
		}
	}
	put(0, 40)
	c.Kill(leader)
	put(40, 80)
	c.Start(leader)
	follower := c.Nodes[0]
	if follower == leader {
		follower = c.Nodes[1]
	}
	if cur := c.Leader(cl, 20*time.Second); cur == follower {
		follower = c.Nodes[2]
		if follower == leader || follower == cur {
			follower = c.Nodes[0]
		}
	}
	if err := c.Stop(follower); err != nil {
		t.Fatalf("stop %s: %v", follower.Name, err)
	}
	c.Start(follower)
	put(80, 120)
	for i := 0; i < 120; i += 3 {
		for deadline := time.Now().Add(30 * time.Second); ; {
			err := cl.Remove(ctx, "", fmt.Sprintf("w-%03d", i), false)
			if err == nil || client.IsReason(err, metadv1.Reason_REASON_OBJECT_NOT_FOUND) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("remove w-%03d: %v", i, err)
			}
		}
	}

	// The readable objects, as a listing gives them.
	want := map[string]bool{}
	for i := range 120 {
		if i%3 != 0 {
			want[fmt.Sprintf("w-%03d", i)] = true
		}
	}
	var got map[string]bool
	var evs []*metadv1.WatchEvent
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		evs = log.snapshot()
		got = map[string]bool{}
		for _, e := range evs {
			switch e.GetKind() {
			case metadv1.WatchEventKind_WATCH_EVENT_KIND_STORED, metadv1.WatchEventKind_WATCH_EVENT_KIND_CHANGED:
				got[string(e.GetKey())] = true
			default:
				delete(got, string(e.GetKey()))
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events replayed give %d objects, want %d (%d events)", len(got), len(want), len(evs))
		}
	}
	stopWatch()
	if err := <-watchDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the watch ended with %v", err)
	}
	seen := map[string]bool{}
	for i, e := range evs {
		r := client.RevisionString(e.GetRevision())
		if seen[r] {
			t.Fatalf("revision %s delivered twice", r)
		}
		seen[r] = true
		if i > 0 {
			p := evs[i-1].GetRevision()
			if e.GetRevision().GetIndex() < p.GetIndex() || (e.GetRevision().GetIndex() == p.GetIndex() && e.GetRevision().GetPosition() <= p.GetPosition()) {
				t.Fatalf("revision %s after %s", r, client.RevisionString(p))
			}
		}
	}
	if len(evs) != 120+40 {
		t.Errorf("%d events, want 160 (120 stored, 40 removed)", len(evs))
	}
	listed, err := cl.ListObjectKeys(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range listed {
		if !got[k] {
			t.Errorf("listed %s, which the events do not hold", k)
		}
	}
	if len(listed) != len(got) {
		t.Errorf("listed %d objects, events give %d", len(listed), len(got))
	}
}

// TestWatchAcrossARestore: an online snapshot restore ends a watch on every member with
// STATE_REPLACED (the events do not describe the replacement), and the resync the error asks for
// works: a watch from now, a listing, and the events after it give the state.
func TestWatchAcrossARestore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "30s")
	cl := c.Client()
	c.Leader(cl, 20*time.Second)
	c.StartWorker(1, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if segs, err := cl.ListSegments(ctx, client.SegmentFilter{}); err == nil && len(segs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("worker segment not mounted")
		}
	}
	put := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if _, err := cl.Put(ctx, "", k, 4096, nil); err != nil {
				t.Fatalf("put %s: %v", k, err)
			}
		}
	}
	put("before-1", "before-2", "before-3")
	saved := t.TempDir() + "/state.snap"
	if out, err := c.Metactl("snapshot", "save", saved); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}

	var log watchLog
	var lastNext atomic.Value
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- cl.Watch(ctx, client.WatchOptions{Progress: 200 * time.Millisecond}, func(r *metadv1.WatchResponse) error {
			lastNext.Store(fmt.Sprintf("%s applied %d commit %d", client.RevisionString(r.GetNext()), r.GetAppliedIndex(), r.GetCommitIndex()))
			return log.add(r)
		})
	}()
	put("after-1", "after-2")
	for deadline := time.Now().Add(20 * time.Second); len(log.snapshot()) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watch saw %d events of 2", len(log.snapshot()))
		}
	}
	if out, err := c.Metactl("snapshot", "restore", saved); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	select {
	case err := <-watchDone:
		if r := client.ReasonOf(err); r != metadv1.Reason_REASON_STATE_REPLACED && r != metadv1.Reason_REASON_WATCH_COMPACTED {
			t.Fatalf("the watch across the restore ended with %v, want STATE_REPLACED (or, from a member restored earlier, WATCH_COMPACTED)", err)
		}
	case <-time.After(30 * time.Second):
		var m []string
		for _, p := range c.Nodes {
			cut, _ := c.MetricValue(p, "metad_watch_streams_cut_off_total")
			subs, _ := c.MetricValue(p, "metad_watch_subscribers")
			comp, _ := c.MetricValue(p, "metad_watch_compacted_total")
			m = append(m, fmt.Sprintf("%s cut %v subs %v compacted %v", p.Name, cut, subs, comp))
		}
		t.Fatalf("the watch went on across the restore: %v; last next %v", m, lastNext.Load())
	}

	// Resync: watch from now, list, then apply the events over the listing.
	var after watchLog
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	opened := make(chan struct{})
	var once sync.Once
	go func() {
		_ = cl.Watch(wctx, client.WatchOptions{Progress: 200 * time.Millisecond}, func(r *metadv1.WatchResponse) error {
			once.Do(func() { close(opened) })
			return after.add(r)
		})
	}()
	select {
	case <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("the resync watch did not open")
	}
	listed, err := cl.ListObjectKeys(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(listed) != "[before-1 before-2 before-3]" {
		t.Fatalf("after the restore the listing is %v", listed)
	}
	put("resync-1")
	if err := cl.Remove(ctx, "", "before-2", true); err != nil {
		t.Fatal(err)
	}
	state := map[string]bool{}
	for _, k := range listed {
		state[k] = true
	}
	for deadline := time.Now().Add(20 * time.Second); len(after.snapshot()) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the resync watch saw %d events of 2", len(after.snapshot()))
		}
	}
	for _, e := range after.snapshot() {
		if e.GetKind() == metadv1.WatchEventKind_WATCH_EVENT_KIND_STORED {
			state[string(e.GetKey())] = true
		} else {
			delete(state, string(e.GetKey()))
		}
	}
	final, err := cl.ListObjectKeys(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for k := range state {
		got = append(got, k)
	}
	slices.Sort(got)
	if fmt.Sprint(got) != fmt.Sprint(final) {
		t.Fatalf("listing plus events give %v, the state is %v", got, final)
	}
}
