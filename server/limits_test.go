package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// segDesc is a valid MEMORY segment descriptor of size bytes at base (owner set by the server).
func segDesc(id alloc.ID, base, size uint64) *metadv1.SegmentDesc {
	return &metadv1.SegmentDesc{Id: idb(id), Name: "seg-" + id.String()[:8], Base: base, Size: size,
		Endpoint: "10.0.0.1:7000", Tier: metadv1.Tier_TIER_MEMORY}
}

// wantInvalid checks err is InvalidArgument with INVALID_PARAMS and a message that starts with field.
func wantInvalid(t *testing.T, err error, field string) {
	t.Helper()
	wantErr(t, err, codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS)
	if msg := strings.TrimPrefix(status.Convert(err).Message(), "INVALID_PARAMS: "); !strings.HasPrefix(msg, field) {
		t.Fatalf("message %q does not name %q", msg, field)
	}
}

// TestHugeSegmentsRefused: four MEMORY mounts of 2^62 bytes, which together would wrap the tier's
// capacity back to its old value and let a 2^40-byte put fit a "1 MiB" tier, are each refused with
// nothing proposed; the tier stays what it was and the put finds no space.
func TestHugeSegmentsRefused(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	before := h.b.Proposals.Load()
	for i := range 4 {
		id := alloc.MustParseID("6e000000-0000-4000-8000-00000000000" + string(rune('1'+i)))
		_, err := h.meta.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA),
			Segment: segDesc(id, uint64(i+1)<<40, 1<<62)})
		wantInvalid(t, err, "segment.size")
	}
	if d := h.b.Proposals.Load() - before; d != 0 {
		t.Fatalf("%d commands proposed for refused mounts", d)
	}
	q, err := h.admin.GetQuota(ctx, &metadv1.GetQuotaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetCapacityBytes() != 1<<20 {
		t.Fatalf("capacity %d, want %d", q.GetCapacityBytes(), 1<<20)
	}
	_, err = h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("big"), Size: 1 << 40})
	wantErr(t, err, codes.ResourceExhausted, metadv1.Reason_REASON_NO_AVAILABLE_HANDLE)
}

// TestMountOverflowRefusedBeforeProposing: a mount that would take the tier's capacity past 2^64-1
// is refused by the leader from its applied state (no log entry), and by apply when proposed
// anyway (a mount committed meanwhile), with nothing changed.
func TestMountOverflowRefusedBeforeProposing(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	// Segments recorded before the size limit existed (restored from a snapshot) fill the tier to
	// 2^64 - 2^48; no segment the limit allows fits any more.
	st := h.b.Store()
	for i, size := range []uint64{1 << 62, 1 << 62, 1 << 62, 1<<62 - alloc.MaxSegmentSize} {
		seg := wire.SegmentFrom(segDesc(alloc.ID{0x70, byte(i + 1)}, uint64(i+1)<<40, size))
		seg.Owner = clientB
		if _, err := st.MountRecordedSegment(seg); err != nil {
			t.Fatalf("recorded segment %d: %v", i, err)
		}
	}
	capacity := st.Segments().Capacity(alloc.TierMemory)
	desc := segDesc(segA, 1<<20, alloc.MaxSegmentSize)
	before := h.b.Proposals.Load()
	_, err := h.meta.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: desc})
	wantInvalid(t, err, "segment.size")
	if d := h.b.Proposals.Load() - before; d != 0 {
		t.Fatalf("%d commands proposed for a mount the leader can refuse", d)
	}
	desc.OwnerClientId = idb(clientA)
	res, err := h.b.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: desc}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != store.InvalidParams || !strings.HasPrefix(res.Message, "segment.size") {
		t.Fatalf("apply of an overflowing mount: %s %q, want INVALID_PARAMS on segment.size", res.Reason, res.Message)
	}
	if got := st.Segments().Capacity(alloc.TierMemory); got != capacity || st.Segments().Len() != 4 {
		t.Fatalf("refused mount changed the tier: capacity %d (was %d), %d segments", got, capacity, st.Segments().Len())
	}
}

// TestBatchRepeatedKeyRefusedWhole: every batch RPC whose keys repeat is InvalidArgument naming
// the repeat and the item it repeats, with nothing proposed and nothing changed: a BatchPutStart
// [new, other, new] leaves no "new", a BatchRemove [.., k, .., k] leaves k.
func TestBatchRepeatedKeyRefusedWhole(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 64)
	cl := idb(clientA)
	keys := [][]byte{[]byte("a"), []byte("k"), []byte("b"), []byte("k")}
	cases := []struct {
		name, field string
		call        func() error
	}{
		{"BatchPutStart", "items[2]: repeats items[0]", func() error {
			_, err := h.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: cl, Items: []*metadv1.BatchPutStartRequest_Item{
				{Key: []byte("new"), Size: 64}, {Key: []byte("other"), Size: 64}, {Key: []byte("new"), Size: 64}}})
			return err
		}},
		{"BatchPutEnd", "keys[3]: repeats keys[1]", func() error {
			_, err := h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: cl, Keys: keys})
			return err
		}},
		{"BatchPutRevoke", "keys[3]: repeats keys[1]", func() error {
			_, err := h.meta.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: cl, Keys: keys})
			return err
		}},
		{"BatchGet", "keys[3]: repeats keys[1]", func() error {
			_, err := h.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: keys})
			return err
		}},
		{"BatchExist", "keys[3]: repeats keys[1]", func() error {
			_, err := h.meta.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: keys})
			return err
		}},
		{"BatchRemove", "keys[3]: repeats keys[1]", func() error {
			_, err := h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: keys, Force: true})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, reads := h.b.Proposals.Load(), h.b.Barriers.Load()
			wantInvalid(t, tc.call(), tc.field)
			if d := h.b.Proposals.Load() - before; d != 0 {
				t.Fatalf("%d commands proposed", d)
			}
			if d := h.b.Barriers.Load() - reads; d != 0 {
				t.Fatalf("%d reads served", d)
			}
		})
	}
	st := h.b.Store()
	if _, err := st.Peek("default", "new"); err == nil || store.ReasonOf(err) != store.ObjectNotFound {
		t.Fatalf("BatchPutStart with a repeated key left %q: %v", "new", err)
	}
	if _, err := st.Peek("default", "k"); err != nil {
		t.Fatalf("BatchRemove with a repeated key removed %q: %v", "k", err)
	}
}
