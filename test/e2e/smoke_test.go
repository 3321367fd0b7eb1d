package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"metad/client"
)

// TestProcessSmoke: three metad processes, a metactl worker, puts through the Go client and
// metactl, kill -9 of the leader, and every acknowledged put readable through the new leader; the
// killed node restarts from its data dir and catches up; SIGTERM stops every node cleanly.
func TestProcessSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewCluster(t, 3, "--client-ttl", "30s")
	cl := c.Client()
	leader := c.Leader(cl, 20*time.Second)
	c.StartWorker(2, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Wait until the worker's segments are mounted.
	deadline := time.Now().Add(20 * time.Second)
	for {
		segs, err := cl.ListSegments(ctx, client.SegmentFilter{})
		if err == nil && len(segs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker segments not mounted: %v %v", segs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var acked []string
	for i := range 100 {
		k := fmt.Sprintf("smoke-%03d", i)
		if _, err := cl.Put(ctx, "", k, 4096, nil); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		acked = append(acked, k)
	}
	if out, err := c.Metactl("put", "via-metactl", "--size", "4KiB"); err != nil {
		t.Fatalf("metactl put: %v\n%s", err, out)
	}
	acked = append(acked, "via-metactl")

	killed := time.Now()
	c.Kill(leader)
	var firstWrite time.Duration
	for i := 0; ; i++ {
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cl.Put(wctx, "", fmt.Sprintf("after-kill-%d", i), 4096, nil)
		wcancel()
		if err == nil {
			firstWrite = time.Since(killed)
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no successful write within 30s of killing the leader: %v", err)
		}
	}
	t.Logf("kill -9 of leader %s to the first successful write: %s", leader.Name, firstWrite)
	newLeader := c.Leader(cl, 20*time.Second)
	if newLeader == leader {
		t.Fatal("the killed node is still leader")
	}
	for _, k := range acked {
		if _, err := cl.Get(ctx, "", k); err != nil {
			t.Fatalf("acknowledged %s lost after the leader died: %v", k, err)
		}
	}
	out, err := c.Metactl("get", "smoke-042")
	if err != nil || !strings.Contains(out, "COMPLETE") {
		t.Fatalf("metactl get through the new leader: %v\n%s", err, out)
	}

	c.Start(leader)
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, err := cl.Status(ctx, leader.Client)
		nst, nerr := cl.Status(ctx, newLeader.Client)
		if err == nil && nerr == nil && st.GetAppliedIndex() >= nst.GetCommitIndex() && st.GetObjects() == nst.GetObjects() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted %s did not catch up: %v %v", leader.Name, st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out, err := c.Metactl("status"); err != nil || strings.Count(out, "follower") != 2 || !strings.Contains(out, " leader ") {
		t.Fatalf("metactl status: %v\n%s", err, out)
	}
	for _, p := range c.Nodes {
		if err := c.Stop(p); err != nil {
			t.Errorf("%s did not stop cleanly on SIGTERM: %v\n%s", p.Name, err, p.log)
		}
	}
}
