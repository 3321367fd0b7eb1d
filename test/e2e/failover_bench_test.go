package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"metad/client"
)

// Failover figures of docs/performance.md (make bench-failover): real processes, default timeouts.
//
//	go test -run '^$' -bench 'FailoverLeaderKill|PlannedTransfer' -benchtime 1x -timeout 20m ./test/e2e/

// firstWrite keeps writing fresh keys until one succeeds and returns how long that took.
func firstWrite(tb testing.TB, cl *client.Client, from time.Time, tag string) time.Duration {
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := cl.Put(ctx, "", fmt.Sprintf("%s-%d", tag, i), 64, nil)
		cancel()
		if err == nil {
			return time.Since(from)
		}
		if time.Since(from) > 30*time.Second {
			tb.Fatalf("no write within 30s: %v", err)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// waitCaughtUp polls until node p has applied what the leader has committed.
func waitCaughtUp(tb testing.TB, c *Cluster, cl *client.Client, p, leader *Proc) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cl.Status(ctx, p.Client)
		lst, lerr := cl.Status(ctx, leader.Client)
		cancel()
		if err == nil && lerr == nil && st.GetAppliedIndex() >= lst.GetCommitIndex() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s did not catch up", p.Name)
}

// BenchmarkFailoverLeaderKill: kill -9 of the leader to the first successful write, 10 times,
// default timeouts (heartbeat and election 400 ms); reports the median and the maximum.
func BenchmarkFailoverLeaderKill(b *testing.B) {
	c := NewClusterDefaults(b, 3)
	cl := c.Client()
	c.StartWorker(1, "64MiB")
	var ds []time.Duration
	for range b.N {
		for round := range 10 {
			leader := c.Leader(cl, 30*time.Second)
			firstWrite(b, cl, time.Now(), fmt.Sprintf("warm-%d", round))
			killed := time.Now()
			c.Kill(leader)
			ds = append(ds, firstWrite(b, cl, killed, fmt.Sprintf("kill-%d", round)))
			c.Start(leader)
			waitCaughtUp(b, c, cl, leader, c.Leader(cl, 30*time.Second))
		}
	}
	b.ReportMetric(float64(median(ds).Milliseconds()), "median-ms")
	b.ReportMetric(float64(slices.Max(ds).Milliseconds()), "max-ms")
	b.Logf("kill -9 to first write: %v", ds)
}

// BenchmarkPlannedTransfer: leadership transfer to the first successful write, 10 times.
func BenchmarkPlannedTransfer(b *testing.B) {
	c := NewClusterDefaults(b, 3)
	cl := c.Client()
	c.StartWorker(1, "64MiB")
	var ds []time.Duration
	for range b.N {
		for round := range 10 {
			c.Leader(cl, 30*time.Second)
			firstWrite(b, cl, time.Now(), fmt.Sprintf("warm-%d", round))
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := cl.TransferLeader(ctx, ""); err != nil {
				b.Fatal(err)
			}
			cancel()
			ds = append(ds, firstWrite(b, cl, start, fmt.Sprintf("xfer-%d", round)))
		}
	}
	b.ReportMetric(float64(median(ds).Milliseconds()), "median-ms")
	b.ReportMetric(float64(slices.Max(ds).Milliseconds()), "max-ms")
	b.Logf("transfer to first write: %v", ds)
}
