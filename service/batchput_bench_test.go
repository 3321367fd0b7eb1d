package service_test

import (
	"fmt"
	"testing"

	metadv1 "metad/proto/metadv1"
)

// BenchmarkBatchPut: the service's cost per object of a batch put on the leader, arenas on, as
// `metactl bench --batch 256` drives it: one BatchPutStart of 256 new keys of 4 KiB (answered from
// the arenas), then their BatchPutEnd (one PutCommit through the test backend's log, applied to
// the state). It reports ns and allocations per object; gRPC and Raft are not in it.
func BenchmarkBatchPut(b *testing.B) {
	const items, size = 256, 4096
	h := arenaHarness(b)
	ctx := tctx(b)
	h.hostSeg(b, segA, 1<<40, 64<<30, "ep-a")
	h.awaitArenas(b, segA)
	n, logged := 0, 0
	batch := func() {
		start := &metadv1.BatchPutStartRequest{ClientId: idb(clientA)}
		end := &metadv1.BatchPutEndRequest{ClientId: idb(clientA)}
		for i := range items {
			key := []byte(fmt.Sprintf("bench-%09d", n*items+i))
			start.Items = append(start.Items, &metadv1.BatchPutStartRequest_Item{Key: key, Size: size})
			end.Keys = append(end.Keys, key)
		}
		n++
		resp, err := h.svc.BatchPutStart(ctx, start)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range resp.GetResults() {
			if r.GetStatus().GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				b.Fatalf("BatchPutStart item: %v", r.GetStatus())
			}
			if !reserved(r.GetReplicas()) {
				logged++
			}
		}
		if _, err := h.svc.BatchPutEnd(ctx, end); err != nil {
			b.Fatal(err)
		}
	}
	for range 8 { // the keeper sees the demand and sizes the arenas for it
		batch()
	}
	n0, logged := n, 0
	b.ReportAllocs()
	for b.Loop() {
		batch()
	}
	objects := float64((n - n0) * items)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/objects, "ns/object")
	b.ReportMetric(float64(logged)/objects, "logged/object")
}
