package service_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store"
)

// rNotOnSegment is an item's NO_REPLICA_ON_SEGMENT.
const rNotOnSegment = metadv1.Reason_REASON_NO_REPLICA_ON_SEGMENT

// A listing is paged, in byte order, scoped to its tenant, and resumes after the last key of the
// page before: a key added between pages below that key is not listed, one above it is.
func TestListObjectKeysPagedAndScoped(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b/2", "a/1", "b/1", "c/1", "a/2"} {
		h.put(t, "", k, 64)
		h.put(t, "t2", "t2-"+k, 64)
	}
	page1, err := h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := strs(page1.GetKeys()); !slices.Equal(got, []string{"a/1", "a/2"}) || len(page1.GetNextPageToken()) == 0 {
		t.Fatalf("page 1 = %v, token %q", got, page1.GetNextPageToken())
	}
	h.put(t, "", "a/0", 64) // below the resume point: not listed
	h.put(t, "", "b/0", 64) // above it: listed
	var rest []string
	token := page1.GetNextPageToken()
	for len(token) > 0 {
		p, err := h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Limit: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, strs(p.GetKeys())...)
		token = p.GetNextPageToken()
	}
	if !slices.Equal(rest, []string{"b/0", "b/1", "b/2", "c/1"}) {
		t.Fatalf("later pages = %v", rest)
	}
	p, err := h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Tenant: "t2", Prefix: []byte("t2-b/"), Stale: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := strs(p.GetKeys()); !slices.Equal(got, []string{"t2-b/1", "t2-b/2"}) || len(p.GetNextPageToken()) != 0 {
		t.Fatalf("t2 prefix listing = %v, token %q", got, p.GetNextPageToken())
	}
	if p, err := h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Tenant: "nobody"}); err != nil || len(p.GetKeys()) != 0 {
		t.Fatalf("unknown tenant: %v, %v", p.GetKeys(), err)
	}
	_, err = h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{PageToken: []byte("x")})
	wantReason(t, err, store.InvalidParams)
	_, err = h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Limit: 4097})
	wantReason(t, err, store.InvalidParams)
	_, err = h.svc.ListObjectKeys(ctx, &metadv1.ListObjectKeysRequest{Prefix: make([]byte, 4097)})
	wantReason(t, err, store.InvalidParams)
}

func TestGetByRegex(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"blk-1", "blk-2", "blk-3", "meta-1"} {
		h.put(t, "", k, 64)
		h.put(t, "t2", k, 64)
	}
	// Being written: matched, but not readable, so left out.
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("blk-4"), Size: 64}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second) // the new leader's lease floor runs out
	var got []string
	var token []byte
	for range 10 {
		p, err := h.svc.GetByRegex(ctx, &metadv1.GetByRegexRequest{Pattern: `^blk-\d$`, Limit: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.GetItems() {
			got = append(got, string(it.GetKey()))
			if len(it.GetReplicas()) != 1 || it.GetSize() != 64 {
				t.Fatalf("item %q: %v", it.GetKey(), it)
			}
		}
		if len(p.GetItems()) > 0 && p.GetLeaseTtlMs() == 0 {
			t.Fatal("a linearizable GetByRegex granted no lease")
		}
		if token = p.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if !slices.Equal(got, []string{"blk-1", "blk-2", "blk-3"}) {
		t.Fatalf("GetByRegex = %v", got)
	}
	// The read leased what it returned, and only that.
	_, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("blk-1")})
	wantReason(t, err, store.ObjectHasLease)
	if _, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("meta-1")}); err != nil {
		t.Fatalf("meta-1 was leased: %v", err)
	}
	p, err := h.svc.GetByRegex(ctx, &metadv1.GetByRegexRequest{Tenant: "t2", Pattern: "meta", Stale: true})
	if err != nil || len(p.GetItems()) != 1 || string(p.GetItems()[0].GetKey()) != "meta-1" || p.GetLeaseTtlMs() != 0 {
		t.Fatalf("t2 stale GetByRegex = %v, %v", p, err)
	}
	for _, pat := range []string{"a(b", "", strings.Repeat("a", 1025)} {
		_, err = h.svc.GetByRegex(ctx, &metadv1.GetByRegexRequest{Pattern: pat})
		wantReason(t, err, store.InvalidParams)
	}
}

func TestRemoveByRegexLeasesForceAndPages(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	if _, err := h.svc.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "t2"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x1", "x2", "x3", "x4", "y1"} {
		h.put(t, "", k, 64)
		h.put(t, "t2", k, 64)
	}
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("x5"), Size: 64}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("x2")}); err != nil {
		t.Fatal(err)
	}
	type res struct {
		key    string
		reason metadv1.Reason
	}
	var got []res
	var token []byte
	for range 10 {
		p, err := h.svc.RemoveByRegex(ctx, &metadv1.RemoveByRegexRequest{Pattern: "^x", Limit: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.GetResults() {
			got = append(got, res{string(r.GetKey()), r.GetStatus().GetReason()})
		}
		if token = p.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	want := []res{{"x1", rOK}, {"x2", rHasLease}, {"x3", rOK}, {"x4", rOK}, {"x5", rNotReady}}
	if !slices.Equal(got, want) {
		t.Fatalf("RemoveByRegex = %v, want %v", got, want)
	}
	p, err := h.svc.RemoveByRegex(ctx, &metadv1.RemoveByRegexRequest{Pattern: "^x", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, r := range p.GetResults() {
		got = append(got, res{string(r.GetKey()), r.GetStatus().GetReason()})
	}
	if want := []res{{"x2", rOK}, {"x5", rNotReady}}; !slices.Equal(got, want) {
		t.Fatalf("forced RemoveByRegex = %v, want %v", got, want)
	}
	// The other tenant's keys are untouched, and so is the key that did not match.
	for _, tk := range [][2]string{{"t2", "x1"}, {"t2", "x2"}, {"", "y1"}} {
		if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Tenant: tk[0], Key: []byte(tk[1])}); err != nil {
			t.Fatalf("%s/%s: %v", tk[0], tk[1], err)
		}
	}
	// A page that matches nothing proposes nothing.
	p, err = h.svc.RemoveByRegex(ctx, &metadv1.RemoveByRegexRequest{Pattern: "^zzz"})
	if err != nil || len(p.GetResults()) != 0 || len(p.GetNextPageToken()) != 0 {
		t.Fatalf("empty RemoveByRegex = %v, %v", p, err)
	}
	_, err = h.svc.RemoveByRegex(ctx, &metadv1.RemoveByRegexRequest{Pattern: "(("})
	wantReason(t, err, store.InvalidParams)
	_, err = h.svc.RemoveByRegex(ctx, &metadv1.RemoveByRegexRequest{Tenant: "nobody", Pattern: "x"})
	wantReason(t, err, store.TenantNotRegistered)
}

// A retry of a RemoveByRegex page with the session header of an attempt that applied gets that
// attempt's answer, keys included, though the state no longer holds them.
func TestRemoveByRegexRetryInSession(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	for _, k := range []string{"r1", "r2", "r3"} {
		h.put(t, "", k, 64)
	}
	clk.Advance(11 * time.Second)
	sess, err := h.svc.OpenSession(ctx, &metadv1.OpenSessionRequest{ClientId: idb(clientA)})
	if err != nil {
		t.Fatal(err)
	}
	req := &metadv1.RemoveByRegexRequest{Pattern: "^r", Limit: 2,
		Session: &metadv1.SessionHeader{SessionId: sess.GetSessionId(), Seq: 1, FirstUnackedSeq: 1}}
	first, err := h.svc.RemoveByRegex(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.svc.RemoveByRegex(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.GetResults()) != 2 || string(again.GetResults()[0].GetKey()) != "r1" || string(again.GetResults()[1].GetKey()) != "r2" ||
		again.GetResults()[1].GetStatus().GetReason() != rOK || string(again.GetNextPageToken()) != string(first.GetNextPageToken()) {
		t.Fatalf("retry answered %v, first %v", again, first)
	}
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("r3")}); err != nil {
		t.Fatalf("the retry removed more: %v", err)
	}
}

func TestBatchReplicaClear(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mount(t, clientB, segB)
	put2 := func(key string) { // a replica on segA and one on segB
		t.Helper()
		if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte(key), Size: 64,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 2}}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: idb(clientA), Key: []byte(key)}); err != nil {
			t.Fatal(err)
		}
	}
	put2("two")
	put2("leased")
	h.put(t, "", "one", 64) // one replica, on segA or segB
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("writing"), Size: 64,
		Config: &metadv1.ReplicaConfig{PreferredSegmentIds: [][]byte{idb(segA)}}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	if _, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("leased")}); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("two"), []byte("leased"), []byte("writing"), []byte("none")}
	resp, err := h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientA), Keys: keys, SegmentId: idb(segA)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reasons(resp.GetResults()), []metadv1.Reason{rOK, rHasLease, rNotReady, rNotFound}; !slices.Equal(got, want) {
		t.Fatalf("clear segA = %v, want %v", got, want)
	}
	g, err := h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("two")})
	if err != nil || len(g.GetReplicas()) != 1 || string(g.GetReplicas()[0].GetSegmentId()) != string(idb(segB)) {
		t.Fatalf("two after clearing segA: %v, %v", g, err)
	}
	// Again on segA: nothing of "two" is left there.
	resp, err = h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientA), Keys: keys[:1], SegmentId: idb(segA)})
	if err != nil || !slices.Equal(reasons(resp.GetResults()), []metadv1.Reason{rNotOnSegment}) {
		t.Fatalf("clear segA again = %v, %v", resp, err)
	}
	// Only the owner clears a segment.
	_, err = h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientA), Keys: keys[:1], SegmentId: idb(segB)})
	wantReason(t, err, store.SegmentOwnedByOtherClient)
	_, err = h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientA), Keys: keys[:1],
		SegmentId: idb(clientA)})
	wantReason(t, err, store.SegmentNotFound)
	// All of clientB's segments: the last replica of "two" goes, so "two" is erased.
	clk.Advance(11 * time.Second)
	resp, err = h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientB), Keys: keys[:1]})
	if err != nil || !slices.Equal(reasons(resp.GetResults()), []metadv1.Reason{rOK}) {
		t.Fatalf("clear clientB = %v, %v", resp, err)
	}
	_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("two")})
	wantReason(t, err, store.ObjectNotFound)
	_, err = h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientB), Keys: [][]byte{[]byte("a"), []byte("a")}})
	wantReason(t, err, store.InvalidParams)
	_, err = h.svc.BatchReplicaClear(ctx, &metadv1.BatchReplicaClearRequest{ClientId: idb(clientB), Keys: keys[:1], SegmentId: []byte{1}})
	wantReason(t, err, store.InvalidParams)
}

// A retry of a BatchReplicaClear that applied gets its first answer, not the state's refusal.
func TestBatchReplicaClearRetryInSession(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 64)
	clk.Advance(11 * time.Second)
	sess, err := h.svc.OpenSession(ctx, &metadv1.OpenSessionRequest{ClientId: idb(clientA)})
	if err != nil {
		t.Fatal(err)
	}
	req := &metadv1.BatchReplicaClearRequest{ClientId: idb(clientA), Keys: [][]byte{[]byte("k")},
		Session: &metadv1.SessionHeader{SessionId: sess.GetSessionId(), Seq: 1, FirstUnackedSeq: 1}}
	for i := range 2 {
		resp, err := h.svc.BatchReplicaClear(ctx, req)
		if err != nil || !slices.Equal(reasons(resp.GetResults()), []metadv1.Reason{rOK}) {
			t.Fatalf("attempt %d: %v, %v", i, resp, err)
		}
	}
	_, err = h.svc.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	wantReason(t, err, store.ObjectNotFound)
}
