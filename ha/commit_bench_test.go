package ha

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkCommitRound is one commit round as a single writer sees it: three nodes in this process
// on loopback (real TCP transport, log stores on this machine's disk), one proposer, a PutEnd at a
// time after its PutStart, on each log store kind and with the logs in memory (the floor of what
// is not the disk). It reports the p50 and p99 of the PutEnd's
// Propose, the round that every object put pays: the leader's log write, the follower's, the
// network between them, commit and apply (docs/performance.md, "Cluster").
//
//	go test -run '^$' -bench CommitRound -benchtime 1500x ./ha/
func BenchmarkCommitRound(b *testing.B) {
	for _, kind := range []string{LogStoreInmem, LogStoreWAL, LogStoreBolt} {
		b.Run(kind, func(b *testing.B) {
			c := newTestCluster(b, 3, func(cfg *Config) {
				if kind == LogStoreInmem { // the floor: nothing on disk
					cfg.LogStores = InmemLogStores()
				} else {
					cfg.LogStore = kind
				}
				// The daemon's timeouts, not the tests' fast ones.
				cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 400*time.Millisecond, 400*time.Millisecond, 200*time.Millisecond
				cfg.CommitTimeout = DefaultConfig().CommitTimeout
			})
			c.propose(mountCmd())
			l := c.waitLeader()
			ds := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				s, e := putCmds(fmt.Sprintf("k%d", i))
				if _, err := l.Propose(context.Background(), s); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if _, err := l.Propose(context.Background(), e); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-us")
		})
	}
}
