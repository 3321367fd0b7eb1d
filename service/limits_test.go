package service_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
	"metad/wire"
)

// TestHugeSegmentsRefused: four MEMORY mounts of 2^62 bytes, which together would wrap the tier's
// capacity back to its old value and let a 2^40-byte put fit a "1 MiB" tier, are each refused with
// nothing proposed; the tier stays what it was and the put finds no space.
func TestHugeSegmentsRefused(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	before := h.b.Proposals.Load()
	for i := range 4 {
		id := alloc.MustParseID("6e000000-0000-4000-8000-00000000000" + string(rune('1'+i)))
		_, err := h.svc.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA),
			Segment: segDesc(id, uint64(i+1)<<40, 1<<62)})
		wantInvalid(t, err, "segment.size")
	}
	if d := h.b.Proposals.Load() - before; d != 0 {
		t.Fatalf("%d commands proposed for refused mounts", d)
	}
	q, err := h.svc.GetQuota(ctx, &metadv1.GetQuotaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetCapacityBytes() != 1<<20 {
		t.Fatalf("capacity %d, want %d", q.GetCapacityBytes(), 1<<20)
	}
	_, err = h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("big"), Size: 1 << 40})
	wantReason(t, err, store.NoAvailableHandle)
}

// TestMountOverflowRefusedBeforeProposing: a mount that would take the tier's capacity past 2^64-1
// is refused by the leader from its applied state (no log entry), and by apply when proposed
// anyway (a mount committed meanwhile), with nothing changed.
func TestMountOverflowRefusedBeforeProposing(t *testing.T) {
	h := newHarness(t, nil)
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
	_, err := h.svc.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: desc})
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

// TestBatchRepeatedKeyRefusedWhole: every batch call whose keys repeat is INVALID_PARAMS naming
// the repeat and the item it repeats, with nothing proposed and nothing changed: a BatchPutStart
// [new, other, new] leaves no "new", a BatchRemove [.., k, .., k] leaves k.
func TestBatchRepeatedKeyRefusedWhole(t *testing.T) {
	h := newHarness(t, nil)
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
			_, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: cl, Items: []*metadv1.BatchPutStartRequest_Item{
				{Key: []byte("new"), Size: 64}, {Key: []byte("other"), Size: 64}, {Key: []byte("new"), Size: 64}}})
			return err
		}},
		{"BatchPutEnd", "keys[3]: repeats keys[1]", func() error {
			_, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: cl, Keys: keys})
			return err
		}},
		{"BatchPutRevoke", "keys[3]: repeats keys[1]", func() error {
			_, err := h.svc.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: cl, Keys: keys})
			return err
		}},
		{"BatchGet", "keys[3]: repeats keys[1]", func() error {
			_, err := h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: keys})
			return err
		}},
		{"BatchExist", "keys[3]: repeats keys[1]", func() error {
			_, err := h.svc.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: keys})
			return err
		}},
		{"BatchRemove", "keys[3]: repeats keys[1]", func() error {
			_, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: keys, Force: true})
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

// TestReadBatchLimits: BatchExist and BatchGet take 65,536 keys (one read barrier for the whole
// call, every key answered in order) and refuse 65,537 as INVALID_PARAMS naming keys, with
// nothing read; every other batch still refuses 4,097 items.
func TestReadBatchLimits(t *testing.T) {
	b := servicetest.NewBackend(t, nil)
	h := start(t, b, testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k000007", 64)
	h.put(t, "", "k065535", 64)
	keys := keysN(65536)

	barriers := b.Barriers.Load()
	ex, err := h.svc.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: keys})
	if err != nil {
		t.Fatalf("BatchExist of 65,536 keys: %v", err)
	}
	if d := b.Barriers.Load() - barriers; d != 1 {
		t.Fatalf("BatchExist of 65,536 keys ran %d read barriers, want 1", d)
	}
	if len(ex.GetExists()) != len(keys) {
		t.Fatalf("%d answers for %d keys", len(ex.GetExists()), len(keys))
	}
	for i, e := range ex.GetExists() {
		if want := i == 7 || i == 65535; e != want {
			t.Fatalf("exists[%d] = %v, want %v", i, e, want)
		}
	}
	st, err := h.svc.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: keys, Stale: true})
	if err != nil || !st.GetExists()[7] || !st.GetExists()[65535] || st.GetExists()[8] {
		t.Fatalf("stale BatchExist of 65,536 keys: %v, %v", err, err == nil && st.GetExists()[7])
	}
	get, err := h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: keys})
	if err != nil {
		t.Fatalf("BatchGet of 65,536 keys: %v", err)
	}
	if n := len(get.GetResults()); n != len(keys) {
		t.Fatalf("%d results for %d keys", n, len(keys))
	}
	if r := get.GetResults()[65535]; r.GetStatus().GetReason() != metadv1.Reason_REASON_UNSPECIFIED || len(r.GetReplicas()) != 1 {
		t.Fatalf("BatchGet result of the last key: %v", r)
	}
	if r := get.GetResults()[65534]; r.GetStatus().GetReason() != metadv1.Reason_REASON_OBJECT_NOT_FOUND {
		t.Fatalf("BatchGet result of a missing key: %v", r)
	}

	over := keysN(65537)
	proposals := b.Proposals.Load()
	_, err = h.svc.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: over})
	wantInvalid(t, err, "keys: 65537 items not in 1..65536")
	_, err = h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: over})
	wantInvalid(t, err, "keys: 65537 items not in 1..65536")

	four := keysN(4097)
	items := make([]*metadv1.BatchPutStartRequest_Item, len(four))
	for i, k := range four {
		items[i] = &metadv1.BatchPutStartRequest_Item{Key: k, Size: 64}
	}
	_, err = h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: items})
	wantInvalid(t, err, "items: 4097 items not in 1..4096")
	_, err = h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: four})
	wantInvalid(t, err, "keys: 4097 items not in 1..4096")
	_, err = h.svc.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: idb(clientA), Keys: four})
	wantInvalid(t, err, "keys: 4097 items not in 1..4096")
	_, err = h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: four, Force: true})
	wantInvalid(t, err, "keys: 4097 items not in 1..4096")
	if d := b.Proposals.Load() - proposals; d != 0 {
		t.Fatalf("%d commands proposed for refused batches", d)
	}
}

// TestBatchGetResponseBounded: objects with 8 replicas on segments whose endpoints are 1000 bytes
// make a result of about 8.5 KB, so 4,500 keys would answer about 38 MB; the response stops at
// its bound, answering every later key RESPONSE_LIMIT_REACHED, and stays under 33 MiB.
func TestBatchGetResponseBounded(t *testing.T) {
	h := newHarness(t, nil)
	ctx := tctx(t)
	for i := range 8 {
		id := alloc.ID{0x73, byte(i + 1)}
		h.hostSeg(t, id, uint64(i+1)<<30, 1<<20, strings.Repeat(string(rune('a'+i)), 995)+":7000")
	}
	const n = 4500
	keys := keysN(n)
	for lo := 0; lo < n; lo += 500 {
		chunk := keys[lo:min(lo+500, n)]
		items := make([]*metadv1.BatchPutStartRequest_Item, len(chunk))
		for i, k := range chunk {
			items[i] = &metadv1.BatchPutStartRequest_Item{Key: k, Size: 64}
		}
		if _, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: items,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 8}}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: chunk}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	first := -1
	for i, r := range resp.GetResults() {
		reason := r.GetStatus().GetReason()
		switch {
		case first < 0 && reason == metadv1.Reason_REASON_UNSPECIFIED && len(r.GetReplicas()) == 8:
		case first < 0 && reason == metadv1.Reason_REASON_RESPONSE_LIMIT_REACHED && i > 0:
			first = i
		case first >= 0 && reason == metadv1.Reason_REASON_RESPONSE_LIMIT_REACHED && len(r.GetReplicas()) == 0:
		default:
			t.Fatalf("result %d (bound reached at %d): %v", i, first, r.GetStatus())
		}
	}
	if first < 0 {
		t.Fatalf("all %d results answered in %d bytes: the bound never applied", n, proto.Size(resp))
	}
	if size := proto.Size(resp); size > service.MaxBatchGetResponseBytes+1<<20 {
		t.Fatalf("response of %d bytes, over the bound %d", size, service.MaxBatchGetResponseBytes)
	}
	t.Logf("%d of %d keys answered in %d bytes", first, n, proto.Size(resp))
}
