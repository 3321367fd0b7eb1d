package wire

import (
	"testing"

	"metad/store"
	"metad/store/alloc"
)

// The conversions on every Get and PutStart answer (ReplicasTo) and on every command a client
// session keeps an answer for, on every node (ResultTo): one MEMORY replica, as most objects have.
func benchReplicas(b *testing.B) (*alloc.Registry, []store.Replica) {
	segs := alloc.NewRegistry()
	seg := alloc.Segment{ID: alloc.ID{1}, Name: "s", Base: 1 << 32, Size: 1 << 30, Endpoint: "127.0.0.1:7000",
		Tier: alloc.TierMemory, Owner: alloc.ID{2}}
	if _, err := segs.Mount(seg); err != nil {
		b.Fatal(err)
	}
	return segs, []store.Replica{{ID: 7, Extent: alloc.Extent{Segment: seg.ID, Offset: 4096, Size: 4096},
		Tier: alloc.TierMemory, Status: store.Complete}}
}

func BenchmarkReplicasTo(b *testing.B) {
	segs, reps := benchReplicas(b)
	b.ReportAllocs()
	for b.Loop() {
		if out := ReplicasTo(segs, reps, 4096); len(out) != 1 {
			b.Fatal(len(out))
		}
	}
}

func BenchmarkResultTo(b *testing.B) {
	_, reps := benchReplicas(b)
	r := store.Result{Replicas: reps, Bytes: 4096}
	b.ReportAllocs()
	for b.Loop() {
		if out := ResultTo(r); len(out.Replicas) != 1 {
			b.Fatal(len(out.Replicas))
		}
	}
}
