package server

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/store/alloc"
)

// keysN returns n distinct keys "k000000"...
func keysN(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("k%06d", i))
	}
	return out
}

// hostSeg mounts a MEMORY segment of size bytes for clientA at endpoint.
func (h *harness) hostSeg(t *testing.T, id alloc.ID, base, size uint64, endpoint string) {
	t.Helper()
	_, err := h.meta.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: &metadv1.SegmentDesc{
		Id: idb(id), Name: "seg-" + id.String()[:8], Base: base, Size: size, Endpoint: endpoint, Tier: metadv1.Tier_TIER_MEMORY}})
	if err != nil {
		t.Fatalf("mount %s at %s: %v", id, endpoint, err)
	}
}

// bigRecv lets a test's call receive a response of up to 64 MiB, as the clients do.
var bigRecv = grpc.MaxCallRecvMsgSize(64 << 20)

// TestReadBatchLimits: BatchExist and BatchGet take 65,536 keys (one read barrier for the whole
// call, every key answered in order) and refuse 65,537 as InvalidArgument naming keys, with
// nothing read; every other batch still refuses 4,097 items.
func TestReadBatchLimits(t *testing.T) {
	b := newFakeBackend(t, nil)
	h := start(t, b, testConfig())
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k000007", 64)
	h.put(t, "", "k065535", 64)
	keys := keysN(65536)

	barriers := b.Barriers.Load()
	ex, err := h.meta.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: keys}, bigRecv)
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
	st, err := h.meta.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: keys, Stale: true}, bigRecv)
	if err != nil || !st.GetExists()[7] || !st.GetExists()[65535] || st.GetExists()[8] {
		t.Fatalf("stale BatchExist of 65,536 keys: %v, %v", err, err == nil && st.GetExists()[7])
	}
	get, err := h.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: keys}, bigRecv)
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
	_, err = h.meta.BatchExist(ctx, &metadv1.BatchExistRequest{Keys: over}, bigRecv)
	wantInvalid(t, err, "keys: 65537 items not in 1..65536")
	_, err = h.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: over}, bigRecv)
	wantInvalid(t, err, "keys: 65537 items not in 1..65536")

	four := keysN(4097)
	items := make([]*metadv1.BatchPutStartRequest_Item, len(four))
	for i, k := range four {
		items[i] = &metadv1.BatchPutStartRequest_Item{Key: k, Size: 64}
	}
	_, err = h.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: items})
	wantInvalid(t, err, "items: 4097 items not in 1..4096")
	_, err = h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: four})
	wantInvalid(t, err, "keys: 4097 items not in 1..4096")
	_, err = h.meta.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{ClientId: idb(clientA), Keys: four})
	wantInvalid(t, err, "keys: 4097 items not in 1..4096")
	_, err = h.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Keys: four, Force: true})
	wantInvalid(t, err, "keys: 4097 items not in 1..4096")
	if d := b.Proposals.Load() - proposals; d != 0 {
		t.Fatalf("%d commands proposed for refused batches", d)
	}
}

// TestBatchGetResponseBounded: objects with 8 replicas on segments whose endpoints are 1000 bytes
// make a result of about 8.5 KB, so 4,500 keys would answer about 38 MB; the response stops at
// its bound, answering every later key RESPONSE_LIMIT_REACHED, and stays under 33 MiB.
func TestBatchGetResponseBounded(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
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
		if _, err := h.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: items,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 8}}, bigRecv); err != nil {
			t.Fatal(err)
		}
		if _, err := h.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: chunk}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := h.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: keys}, bigRecv)
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
