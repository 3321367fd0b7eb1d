package service_test

import (
	"slices"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
)

// BenchmarkGetDiskOnly: TIERS.md's read target. A linearizable Get through the service (read
// barrier, store, the replicas' conversion) of an object whose only replica is on a client's SSD,
// against one of an object with one memory replica, alternated call by call in this process:
// p50 of each and their ratio (target <= 1.1).
func BenchmarkGetDiskOnly(b *testing.B) {
	h := newHarness(b, nil)
	ctx := tctx(b)
	h.diskOnly(b, "disk")
	h.putOn(b, "mem", clientA, segA)
	get := func(key string, want metadv1.Tier) time.Duration {
		start := time.Now()
		g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte(key)})
		d := time.Since(start)
		if err != nil || len(g.GetReplicas()) != 1 || g.GetReplicas()[0].GetTier() != want {
			b.Fatalf("Get %s: %v %v", key, g, err)
		}
		return d
	}
	var mem, disk []time.Duration
	for b.Loop() {
		mem = append(mem, get("mem", metadv1.Tier_TIER_MEMORY))
		disk = append(disk, get("disk", metadv1.Tier_TIER_LOCAL_DISK))
	}
	slices.Sort(mem)
	slices.Sort(disk)
	m, d := mem[len(mem)/2], disk[len(disk)/2]
	b.ReportMetric(float64(m.Nanoseconds()), "ns/get-memory-p50")
	b.ReportMetric(float64(d.Nanoseconds()), "ns/get-disk-only-p50")
	b.ReportMetric(float64(d)/float64(m), "disk/memory")
}
