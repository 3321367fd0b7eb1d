package service_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
)

// Tests of the arena path (docs/design.md, "Allocation arenas"): the backend's leader holds the
// lease, so PutStarts of new keys are answered from the leader's arenas and only their PutEnds
// reach the log, as on a real leader.

// arenaHarness is a harness whose leader holds the leader lease and runs the arena keeper (every
// quarter of the fake lease).
func arenaHarness(t testing.TB) *harness {
	t.Helper()
	b := servicetest.NewBackend(t, nil)
	b.Lease.Store(true)
	cfg := testConfig()
	cfg.NoArenas = false
	return start(t, b, cfg)
}

// awaitArenas puts objects of the default tenant until the leader answers a PutStart from its
// arenas on every one of segs (the keeper asks for arenas once a PutStart reached the leader in
// its term), each preferring one segment.
func (h *harness) awaitArenas(t testing.TB, segs ...alloc.ID) {
	t.Helper()
	ctx := tctx(t)
	deadline := time.Now().Add(10 * time.Second)
	for i, seg := range segs {
		for n := 0; ; n++ {
			key := []byte(fmt.Sprintf("warm-%s-%d", seg, n))
			resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 64,
				Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(seg)}}})
			if err != nil {
				t.Fatalf("PutStart %q: %v", key, err)
			}
			if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: key}); err != nil {
				t.Fatalf("PutEnd %q: %v", key, err)
			}
			if reserved(resp.GetReplicas()) && string(resp.GetReplicas()[0].GetSegmentId()) == string(idb(seg)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no PutStart answered from an arena on segment %d of %d after 10s", i+1, len(segs))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// reserve runs a PutStart of key and fails the test unless the leader answered it from its arenas.
func (h *harness) reserve(t testing.TB, tenant, key string, size uint64, cfg *metadv1.ReplicaConfig) []*metadv1.Replica {
	t.Helper()
	resp, err := h.svc.PutStart(tctx(t), &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size, Config: cfg})
	if err != nil {
		t.Fatalf("PutStart %q: %v", key, err)
	}
	if !reserved(resp.GetReplicas()) {
		t.Fatalf("PutStart %q went through the log; want it answered from the arenas", key)
	}
	return resp.GetReplicas()
}

// reserved reports whether a PutStart's answer came from the arenas: its replicas have no replica
// id yet (PutCommit draws them), where every replica placed through the log has one.
func reserved(reps []*metadv1.Replica) bool {
	for _, r := range reps {
		if r.GetReplicaId() != 0 {
			return false
		}
	}
	return len(reps) > 0
}

// TestGetNeverMissesACommittingWrite: from a reserved PutStart's answer on, the object exists (a
// write in progress, then COMPLETE), so no linearizable read of it may answer OBJECT_NOT_FOUND,
// however its reads interleave with the PutCommit that applies and settles the reservation. Readers
// race Get and BatchGet against each commit, and one of them Remove; once a Remove may have
// succeeded (the object was COMPLETE and not leased yet) absence is the truth and the round ends.
func TestGetNeverMissesACommittingWrite(t *testing.T) {
	h := arenaHarness(t)
	// An arena of 64 KiB holds every round's object: the rounds may run faster than the keeper
	// stocks arenas.
	h.hostSeg(t, segA, 1<<30, 64<<20, "ep-a")
	h.awaitArenas(t, segA)
	const rounds, readers = 300, 3
	var notFound atomic.Int64
	var first atomic.Pointer[string]
	for i := range rounds {
		key := fmt.Sprintf("k-%03d", i)
		h.reserve(t, "", key, 64, nil)
		var wg sync.WaitGroup
		var removed, removing atomic.Bool // a Remove succeeded; one is in flight
		stop := make(chan struct{})
		for r := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := tctx(t)
				for n := 0; n < 10000; n++ {
					select {
					case <-stop:
						return
					default:
					}
					var err error
					what := ""
					op := n % 2
					if r == readers-1 {
						op = 2
					}
					switch op {
					case 0:
						_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte(key)})
						what = "Get"
					case 1:
						var resp *metadv1.BatchGetResponse
						resp, err = h.svc.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: [][]byte{[]byte(key)}})
						if err == nil && resp.Results[0].GetStatus().GetReason() == metadv1.Reason_REASON_OBJECT_NOT_FOUND {
							err = errors.New("OBJECT_NOT_FOUND")
						}
						what = "BatchGet"
					case 2:
						removing.Store(true)
						_, err = h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte(key)})
						what = "Remove"
						if err == nil {
							removed.Store(true)
						}
						removing.Store(false)
						if err == nil {
							return
						}
					}
					if removed.Load() || (what != "Remove" && removing.Load()) {
						return // absence may be the truth now
					}
					if reasonOf(err) == store.ObjectNotFound || (err != nil && err.Error() == "OBJECT_NOT_FOUND") {
						if notFound.Add(1) == 1 {
							msg := fmt.Sprintf("%s %q answered OBJECT_NOT_FOUND during its write: %v", what, key, err)
							first.Store(&msg)
						}
						return
					}
				}
			}()
		}
		_, err := h.svc.PutEnd(tctx(t), &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(key)})
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("PutEnd %q: %v", key, err)
		}
		if m := first.Load(); m != nil {
			t.Fatalf("round %d: %s (%d such answers)", i, *m, notFound.Load())
		}
	}
}

// TestPreferredSegmentRightAfterMount: a PutStart that prefers a segment mounted a moment ago,
// before the keeper has stocked an arena there, is placed on it (through the log) rather than on
// another segment the arenas cover; once the keeper has granted one, such puts are answered from
// it.
func TestPreferredSegmentRightAfterMount(t *testing.T) {
	h := arenaHarness(t)
	ctx := tctx(t)
	h.hostSeg(t, segA, 1<<30, 64<<20, "ep-a")
	h.awaitArenas(t, segA)
	h.hostSeg(t, segB, 2<<30, 64<<20, "ep-b")
	pref := &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(segB)}}
	for i := range 4 {
		key := []byte(fmt.Sprintf("p-%d", i))
		resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 4096, Config: pref})
		if err != nil {
			t.Fatalf("PutStart %q: %v", key, err)
		}
		if got := resp.GetReplicas()[0].GetSegmentId(); string(got) != string(idb(segB)) {
			t.Fatalf("PutStart %q preferring the new segment placed on %x (reserved %v); want it on the preferred one", key, got, reserved(resp.GetReplicas()))
		}
	}
	h.awaitArenas(t, segB) // the keeper stocks the new segment: preferring it is answered from its arena
}

// TestIdleArenaMakesRoom: on a small segment an arena's bytes can be the room a put needs. A
// PutStart that finds no span large enough has the leader retire its idle arenas (no reservation
// in them) and is placed; the segment listing says what arenas hold before and after.
func TestIdleArenaMakesRoom(t *testing.T) {
	h := arenaHarness(t)
	ctx := tctx(t)
	const segSize = 64 << 10 // arenas of 1 KiB (1/64 of it)
	// onlyArenas stocks h's segment with arenas and removes the objects that did it: what the
	// segment uses is then its arenas' free bytes alone.
	onlyArenas := func(h *harness) {
		t.Helper()
		h.hostSeg(t, segA, 1<<30, segSize, "ep-a")
		h.awaitArenas(t, segA)
		if _, err := h.svc.RemoveAll(ctx, &metadv1.RemoveAllRequest{Force: true}); err != nil {
			t.Fatal(err)
		}
		ls, err := h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if info := ls.GetSegments()[0]; info.GetArenaFreeBytes() == 0 || info.GetArenaFreeBytes() != info.GetUsedBytes() {
			t.Fatalf("segment with no object: used %d, arena free %d; want the arenas' free bytes listed as all it uses", info.GetUsedBytes(), info.GetArenaFreeBytes())
		}
	}
	onlyArenas(h)
	const size = segSize // the whole segment: it fits only once the idle arenas are retired
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("big"), Size: size}); err != nil {
		t.Fatalf("PutStart of the whole segment, whose only other bytes are idle arenas': %v", err)
	}
	ls, err := h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ls.GetSegments()[0]; got.GetArenaFreeBytes() != 0 || got.GetUsedBytes() != segSize {
		t.Fatalf("segment after the put: used %d, arena free %d; want it full and no arena", got.GetUsedBytes(), got.GetArenaFreeBytes())
	}

	// A BatchPutStart is one command, answered as it applied: its item that found no span is
	// refused, the idle arena is retired, and the retry is placed.
	b := arenaHarness(t)
	onlyArenas(b)
	batch := &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: []*metadv1.BatchPutStartRequest_Item{{Key: []byte("big"), Size: size}}}
	first, err := b.svc.BatchPutStart(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if got := first.GetResults()[0].GetStatus().GetReason(); got != metadv1.Reason_REASON_NO_AVAILABLE_HANDLE {
		t.Fatalf("BatchPutStart of the bytes no object holds, with the arena idle: %v; want NO_AVAILABLE_HANDLE", first.GetResults()[0].GetStatus())
	}
	again, err := b.svc.BatchPutStart(ctx, batch)
	if err != nil || again.GetResults()[0].GetStatus().GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
		t.Fatalf("BatchPutStart again after the idle arena was retired: %v, %v; want it placed", again, err)
	}
}

// TestArenaPathAnswersAsTheLog: a write in progress answers the same whether its PutStart was
// reserved in the arenas or went through the log (an UpsertStart always does): an UpsertStart over
// it is INVALID_WRITE (OBJECT_ALREADY_EXISTS from another group), and the removal calls and the
// listing see it, a RemoveAll counting it as skipped.
func TestArenaPathAnswersAsTheLog(t *testing.T) {
	h := arenaHarness(t)
	ctx := tctx(t)
	h.hostSeg(t, segA, 1<<30, 64<<20, "ep-a")
	h.awaitArenas(t, segA)
	const tenant = "t"
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: tenant}); err != nil {
		t.Fatal(err)
	}
	h.put(t, tenant, "done", 4096)
	h.reserve(t, tenant, "reserved", 4096, nil)
	// "logged": a write in progress through the log (an UpsertStart of a new key).
	if _, err := h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte("logged"), Size: 4096}); err != nil {
		t.Fatal(err)
	}
	h.reserve(t, tenant, "member", 4096, nil)
	if _, err := h.svc.PutRevoke(ctx, &metadv1.PutRevokeRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte("member")}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte("member"), Group: []byte("g"), Size: 4096})
	if err != nil || !reserved(resp.GetReplicas()) {
		t.Fatalf("PutStart of a group member: reserved %v, %v", reserved(resp.GetReplicas()), err)
	}

	for _, key := range []string{"reserved", "logged"} {
		_, err := h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{Tenant: tenant, ClientId: idb(clientB), Key: []byte(key), Size: 4096})
		if got := reasonOf(err); got != store.InvalidWrite {
			t.Errorf("UpsertStart over %q in progress: %v; want INVALID_WRITE", key, err)
		}
		_, err = h.svc.UpsertStart(ctx, &metadv1.UpsertStartRequest{Tenant: tenant, ClientId: idb(clientB), Key: []byte(key), Group: []byte("other"), Size: 4096})
		if got := reasonOf(err); got != store.ObjectAlreadyExists {
			t.Errorf("UpsertStart over %q in progress, another group: %v; want OBJECT_ALREADY_EXISTS", key, err)
		}
	}

	br, err := h.svc.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Tenant: tenant, Keys: [][]byte{[]byte("reserved"), []byte("logged")}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range br.GetResults() {
		if st.GetReason() != metadv1.Reason_REASON_REPLICA_IS_NOT_READY {
			t.Errorf("BatchRemove item %d: %v; want REPLICA_IS_NOT_READY", i, st)
		}
	}
	_, err = h.svc.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Tenant: tenant, Group: []byte("g"), Force: true})
	if got := reasonOf(err); got != store.ReplicaIsNotReady {
		t.Errorf("RemoveGroup with a reserved member: %v; want REPLICA_IS_NOT_READY", err)
	}
	lk, err := h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, k := range lk.GetKeys() {
		listed = append(listed, string(k))
	}
	if want := []string{"done", "logged", "member", "reserved"}; fmt.Sprint(listed) != fmt.Sprint(want) {
		t.Errorf("ListObjectKeys: %q; want %q", listed, want)
	}
	if lk, err = h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Tenant: tenant, Limit: 2}); err != nil || len(lk.GetKeys()) != 2 ||
		string(lk.GetKeys()[1]) != "logged" || len(lk.GetNextPageToken()) == 0 {
		t.Errorf("ListObjectKeys limit 2: %q next %q, %v; want done, logged and a next page", lk.GetKeys(), lk.GetNextPageToken(), err)
	} else if lk, err = h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Tenant: tenant, Limit: 2, PageToken: lk.GetNextPageToken()}); err != nil ||
		len(lk.GetKeys()) != 2 || string(lk.GetKeys()[0]) != "member" || len(lk.GetNextPageToken()) != 0 {
		t.Errorf("ListObjectKeys second page: %q next %q, %v; want member, reserved and no next page", lk.GetKeys(), lk.GetNextPageToken(), err)
	}
	rr, err := h.svc.RemoveByRegex(ctx, &metadv1.RemoveByRegexRequest{Tenant: tenant, Pattern: "^res", Force: true})
	if err != nil || len(rr.GetResults()) != 1 || rr.GetResults()[0].GetStatus().GetReason() != metadv1.Reason_REASON_REPLICA_IS_NOT_READY {
		t.Errorf("RemoveByRegex of a reserved key: %v, %v; want it answered REPLICA_IS_NOT_READY", rr, err)
	}
	ra, err := h.svc.RemoveAll(ctx, &metadv1.RemoveAllRequest{Tenant: tenant})
	if err != nil || ra.GetRemoved() != 1 || ra.GetSkipped() != 3 {
		t.Errorf("RemoveAll: %v, %v; want 1 removed and 3 skipped (two reserved, one in progress through the log)", ra, err)
	}
}

// TestReservedEndOfAnotherTier: a PutEnd or PutRevoke of a reserved write that names a tier it has
// no range of is INVALID_WRITE with nothing proposed, as through the log, and the write can still
// be ended on its own tier.
func TestReservedEndOfAnotherTier(t *testing.T) {
	h := arenaHarness(t)
	ctx := tctx(t)
	h.hostSeg(t, segA, 1<<30, 64<<20, "ep-a")
	h.awaitArenas(t, segA)
	h.reserve(t, "", "k", 4096, nil)
	h.reserve(t, "", "b", 4096, nil)
	before := h.b.AppliedIndex()
	nof := metadv1.Tier_TIER_NOF
	_, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte("k"), Tier: nof})
	if got := reasonOf(err); got != store.InvalidWrite {
		t.Errorf("PutEnd NOF of a memory-only reserved write: %v; want INVALID_WRITE", err)
	}
	_, err = h.svc.PutRevoke(ctx, &metadv1.PutRevokeRequest{ClientId: idb(clientA), Key: []byte("k"), Tier: nof})
	if got := reasonOf(err); got != store.InvalidWrite {
		t.Errorf("PutRevoke NOF of a memory-only reserved write: %v; want INVALID_WRITE", err)
	}
	be, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: [][]byte{[]byte("k"), []byte("b")}, Tier: nof})
	if err != nil || be.GetResults()[0].GetReason() != metadv1.Reason_REASON_INVALID_WRITE || be.GetResults()[1].GetReason() != metadv1.Reason_REASON_INVALID_WRITE {
		t.Errorf("BatchPutEnd NOF of memory-only reserved writes: %v, %v; want INVALID_WRITE for each", be, err)
	}
	if got := h.b.AppliedIndex(); got != before {
		t.Errorf("the refused ends moved the applied index %d -> %d", before, got)
	}
	for _, k := range []string{"k", "b"} {
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(k), Tier: metadv1.Tier_TIER_MEMORY}); err != nil {
			t.Fatalf("PutEnd MEMORY of %q after the refusals: %v", k, err)
		}
		if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte(k)}); err != nil {
			t.Fatalf("Get %q: %v", k, err)
		}
	}
}

// TestArenasFollowDemand: the keeper sizes arenas by the bytes puts ask of them in a round, so a
// steady stream of batches larger than arenaObjects replicas of their size is answered from the
// arenas whole, batch after batch, once the keeper has seen a round of it (a batch four times the
// fixed 256-replica arena could never fit one), and the idle bytes the arenas hold stay within two
// arenas of the cap (1/64 of the segment, here far above the stream's demand).
func TestArenasFollowDemand(t *testing.T) {
	h := arenaHarness(t)
	ctx := tctx(t)
	const segSize, size, items, inARow = 64 << 30, 4096, 1024, 8
	h.hostSeg(t, segA, 1<<40, segSize, "ep-a")
	h.awaitArenas(t, segA)
	deadline := time.Now().Add(5 * time.Second) // within the calls' context (tctx)
	for n, row := 0, 0; row < inARow; n++ {
		batch := &metadv1.BatchPutStartRequest{ClientId: idb(clientA)}
		end := &metadv1.BatchPutEndRequest{ClientId: idb(clientA)}
		for i := range items {
			key := []byte(fmt.Sprintf("b%d-%d", n, i))
			batch.Items = append(batch.Items, &metadv1.BatchPutStartRequest_Item{Key: key, Size: size})
			end.Keys = append(end.Keys, key)
		}
		resp, err := h.svc.BatchPutStart(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		whole := true
		for i, r := range resp.GetResults() {
			if st := r.GetStatus(); st.GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
				t.Fatalf("item %d of batch %d: %v", i, n, st)
			}
			whole = whole && reserved(r.GetReplicas())
		}
		if _, err := h.svc.BatchPutEnd(ctx, end); err != nil {
			t.Fatal(err)
		}
		if whole {
			row++
		} else {
			row = 0
		}
		if row < inARow && (n >= 1023 || time.Now().After(deadline)) { // 1024 batches fill 1/16 of the segment
			t.Fatalf("after %d batches of %d puts of %d bytes, never %d in a row answered from the arenas whole", n+1, items, size, inARow)
		}
		time.Sleep(5 * time.Millisecond) // a steady stream: about ten batches a keeper round
	}
	ls, err := h.svc.ListSegments(ctx, &metadv1.ListSegmentsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if free := ls.GetSegments()[0].GetArenaFreeBytes(); free > 2*segSize/64 {
		t.Fatalf("arenas hold %d idle bytes of a %d-byte segment; want at most two arenas of 1/64 of it", free, segSize)
	}
}
