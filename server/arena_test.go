package server

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
	"metad/store/alloc"
)

// Tests of the arena path (docs/design.md, "Allocation arenas") over the fake backend: its leader
// holds the lease, so PutStarts of new keys are answered from the leader's arenas and only their
// PutEnds reach the log, as on a real leader.

// arenaHarness is a harness whose leader holds the leader lease and runs the arena keeper (every
// quarter of the fake lease).
func arenaHarness(t testing.TB, mut func(*config)) *harness {
	t.Helper()
	b := newFakeBackend(t, nil)
	b.lease.Store(true)
	cfg := testConfig()
	cfg.NoArenas = false
	if mut != nil {
		mut(&cfg)
	}
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
			key := []byte(fmt.Sprintf("warm-%d-%d", i, n))
			resp, err := h.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: key, Size: 64,
				Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(seg)}}})
			if err != nil {
				t.Fatalf("PutStart %q: %v", key, err)
			}
			if _, err := h.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: key}); err != nil {
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
	resp, err := h.meta.PutStart(tctx(t), &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size, Config: cfg})
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

// reasonOf is the reason of a call's error (REASON_UNSPECIFIED for none or one without a reason).
func reasonOf(err error) metadv1.Reason {
	if err == nil {
		return metadv1.Reason_REASON_UNSPECIFIED
	}
	st, ok := status.FromError(err)
	if !ok {
		return metadv1.Reason_REASON_UNSPECIFIED
	}
	for _, d := range st.Details() {
		if ei, ok := d.(interface{ GetReason() string }); ok {
			if v, found := metadv1.Reason_value["REASON_"+ei.GetReason()]; found {
				return metadv1.Reason(v)
			}
		}
	}
	return metadv1.Reason_REASON_UNSPECIFIED
}

// TestGetNeverMissesACommittingWrite: from a reserved PutStart's answer on, the object exists (a
// write in progress, then COMPLETE), so no linearizable read of it may answer OBJECT_NOT_FOUND,
// however its reads interleave with the PutCommit that applies and settles the reservation. Readers
// race Get and BatchGet against each commit, and one of them Remove; once a Remove may have
// succeeded (the object was COMPLETE and not leased yet) absence is the truth and the round ends.
func TestGetNeverMissesACommittingWrite(t *testing.T) {
	h := arenaHarness(t, nil)
	h.mount(t, clientA, segA)
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
						_, err = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte(key)})
						what = "Get"
					case 1:
						var resp *metadv1.BatchGetResponse
						resp, err = h.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Keys: [][]byte{[]byte(key)}})
						if err == nil && resp.Results[0].GetStatus().GetReason() == metadv1.Reason_REASON_OBJECT_NOT_FOUND {
							err = errors.New("OBJECT_NOT_FOUND")
						}
						what = "BatchGet"
					case 2:
						removing.Store(true)
						_, err = h.meta.Remove(ctx, &metadv1.RemoveRequest{Key: []byte(key)})
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
					if reasonOf(err) == metadv1.Reason_REASON_OBJECT_NOT_FOUND || (err != nil && err.Error() == "OBJECT_NOT_FOUND") {
						if notFound.Add(1) == 1 {
							msg := fmt.Sprintf("%s %q answered OBJECT_NOT_FOUND during its write: %v", what, key, err)
							first.Store(&msg)
						}
						return
					}
				}
			}()
		}
		_, err := h.meta.PutEnd(tctx(t), &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(key)})
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
