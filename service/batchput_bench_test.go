package service_test

import (
	"fmt"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
)

// BenchmarkBatchPut: the service's cost per object of a batch put on the leader, arenas on, as
// `metactl bench --batch 256` drives it: one BatchPutStart of 256 new keys of 4 KiB (answered from
// the arenas), then their BatchPutEnd (one PutCommit through the test backend's log, applied to
// the state). It reports ns and allocations per object (building the requests included: about
// what gRPC's decoding allocates for them); gRPC and Raft are not in it.
func BenchmarkBatchPut(b *testing.B) {
	const items, size = 256, 4096
	h := arenaHarness(b)
	ctx := tctx(b)
	h.hostSeg(b, segA, 1<<40, 64<<30, "ep-a")
	h.awaitArenas(b, segA)
	n, logged := 0, 0
	// batch puts the next 256 keys and reports whether the arenas answered every one.
	batch := func() bool {
		start := &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: make([]*metadv1.BatchPutStartRequest_Item, items)}
		end := &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: make([][]byte, items)}
		buf := make([]byte, 0, items*16) // the keys, in one allocation
		slab := make([]metadv1.BatchPutStartRequest_Item, items)
		for i := range items {
			off := len(buf)
			buf = fmt.Appendf(buf, "bench-%09d", n*items+i)
			key := buf[off:len(buf):len(buf)]
			slab[i].Key, slab[i].Size = key, size
			start.Items[i], end.Keys[i] = &slab[i], key
		}
		n++
		whole := true
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
				whole = false
			}
		}
		if _, err := h.svc.BatchPutEnd(ctx, end); err != nil {
			b.Fatal(err)
		}
		return whole
	}
	// Warm up until the keeper has seen the demand: a keeper round's worth of batches answered
	// whole in a row (bounded; the measured loop reports what still goes through the log).
	deadline := time.Now().Add(10 * time.Second)
	for row := 0; row < 32 && time.Now().Before(deadline); {
		if batch() {
			row++
		} else {
			row = 0
		}
	}
	n0 := n
	logged = 0 // the measured loop's alone
	b.ReportAllocs()
	for b.Loop() {
		batch()
	}
	objects := float64((n - n0) * items)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/objects, "ns/object")
	b.ReportMetric(float64(logged)/objects, "logged/object")
}
