package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"metad/store/alloc"
)

func TestValidation(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	ok := putReq("", "k", "", 100)
	cases := []struct {
		name  string
		edit  func(r *PutStartRequest)
		field string
	}{
		{"tenant underscore", func(r *PutStartRequest) { r.Tenant = "_x" }, "tenant"},
		{"tenant control", func(r *PutStartRequest) { r.Tenant = "a\x01" }, "tenant"},
		{"tenant del", func(r *PutStartRequest) { r.Tenant = "a\x7f" }, "tenant"},
		{"tenant long", func(r *PutStartRequest) { r.Tenant = strings.Repeat("t", 257) }, "tenant"},
		{"key empty", func(r *PutStartRequest) { r.Key = "" }, "key"},
		{"key long", func(r *PutStartRequest) { r.Key = strings.Repeat("k", 4097) }, "key"},
		{"key nul", func(r *PutStartRequest) { r.Key = "a\x00b" }, "key"},
		{"group long", func(r *PutStartRequest) { r.Group = strings.Repeat("g", 257) }, "group"},
		{"group nul", func(r *PutStartRequest) { r.Group = "\x00" }, "group"},
		{"client zero", func(r *PutStartRequest) { r.Client = alloc.ID{} }, "client_id"},
		{"size zero", func(r *PutStartRequest) { r.Size = 0 }, "size"},
		{"size huge", func(r *PutStartRequest) { r.Size = 1<<40 + 1 }, "size"},
		{"memory zero", func(r *PutStartRequest) { r.Config.Memory = 0 }, "replicas.memory"},
		{"memory nine", func(r *PutStartRequest) { r.Config.Memory = 9 }, "replicas.memory"},
		{"nof nine", func(r *PutStartRequest) { r.Config.NOF = 9 }, "replicas.nof"},
		{"preferred dup", func(r *PutStartRequest) { r.Config.Preferred = []alloc.ID{segID(1), segID(1)} }, "replicas.preferred"},
		{"ttl without enable", func(r *PutStartRequest) { r.Config.SoftPinTTL = time.Second }, "soft_pin.ttl"},
		{"ttl too long", func(r *PutStartRequest) {
			r.Config.SoftPin, r.Config.SoftPinTTL = SoftPinEnable, 25*time.Hour
		}, "soft_pin.ttl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok
			c.edit(&r)
			_, err := s.PutStart(sec, 1, r)
			wantReason(t, err, InvalidParams)
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %q does not name %q", err, c.field)
			}
			if n := s.Tenants().Lookup(DefaultTenant).Directory().Objects(); n != 0 {
				t.Fatalf("bad input changed the store: %d objects", n)
			}
		})
	}
	if _, err := s.PutStart(sec, 1, ok); err != nil {
		t.Fatalf("the valid request fails: %v", err)
	}
	if err := ValidateBatch("keys", 0); ReasonOf(err) != InvalidParams {
		t.Fatal("empty batch accepted")
	}
	if err := ValidateBatch("keys", 4097); ReasonOf(err) != InvalidParams {
		t.Fatal("4097-item batch accepted")
	}
}

func TestPutLifecycle(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	mount(t, s, 2, alloc.TierNOF, 1<<20)
	req := putReq("", "k", "", 100)
	req.Config.NOF = 1
	reps, err := s.PutStart(sec, 7, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Tier != alloc.TierMemory || reps[1].Tier != alloc.TierNOF {
		t.Fatalf("replicas %+v", reps)
	}
	if reps[0].Extent.Size != 128 || reps[0].Status != Processing {
		t.Fatalf("memory replica %+v: want 128 rounded bytes, PROCESSING", reps[0])
	}
	_, err = s.Get(sec, "", "k")
	wantReason(t, err, ReplicaIsNotReady)
	_, err = s.PutStart(sec, 7, req)
	wantReason(t, err, ObjectAlreadyExists)

	end := PutEndRequest{Tenant: "", Client: client2, Key: "k"}
	wantReason(t, s.PutEnd(sec, end), IllegalClient)
	end.Client = client1
	wantReason(t, s.PutEnd(sec, PutEndRequest{Client: client1, Key: "absent"}), ObjectNotFound)
	end.Tier = alloc.TierNOF
	if err := s.PutEnd(sec, end); err != nil {
		t.Fatal(err)
	}
	g, err := s.Get(2*sec, "", "k")
	if err != nil || len(g.Replicas) != 1 || g.Replicas[0].Tier != alloc.TierNOF {
		t.Fatalf("Get after NOF PutEnd: %+v %v", g, err)
	}
	if g.LeaseTTL != 10*time.Second {
		t.Fatalf("lease ttl %s", g.LeaseTTL)
	}
	end.Tier = 0
	if err := s.PutEnd(sec, end); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, end); err != nil {
		t.Fatalf("repeated PutEnd of a complete object: %v", err)
	}
	wantReason(t, s.PutRevoke(sec, end), InvalidWrite)
	if got := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); got != 100 {
		t.Fatalf("charged %d, want 100 (one MEMORY replica)", got)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestPutEndTierWithoutReplicas(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.PutStart(sec, 1, putReq("", "k", "", 10)); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.PutEnd(sec, PutEndRequest{Client: client1, Key: "k", Tier: alloc.TierNOF}), InvalidWrite)
	wantReason(t, s.PutEnd(sec, PutEndRequest{Client: client1, Key: "k", Tier: 9}), InvalidParams)
}

func TestPutRevokeErasesAndRefunds(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.PutStart(sec, 1, putReq("", "k", "G", 1000)); err != nil {
		t.Fatal(err)
	}
	ten := s.Tenants().Lookup(DefaultTenant)
	if ten.Quota().Charged() != 1000 {
		t.Fatal("PutStart did not charge")
	}
	wantReason(t, s.PutRevoke(sec, PutEndRequest{Client: client2, Key: "k"}), IllegalClient)
	if err := s.PutRevoke(sec, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if ten.Quota().Charged() != 0 || ten.Directory().Objects() != 0 || ten.Directory().Groups() != 0 {
		t.Fatalf("after revoke: charged %d objects %d groups %d", ten.Quota().Charged(), ten.Directory().Objects(), ten.Directory().Groups())
	}
	if info, _ := s.Segments().Get(segID(1)); info.Used != 0 {
		t.Fatalf("segment still uses %d bytes", info.Used)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestDiscardStalePut(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.PutStart(sec, 1, putReq("", "k", "", 100)); err != nil {
		t.Fatal(err)
	}
	_, err := s.PutStart(31*sec, 1, putReq("", "k", "", 100)) // exactly 30 s later: not yet stale
	wantReason(t, err, ObjectAlreadyExists)
	r := putReq("", "k", "", 200)
	r.Client = client2
	if _, err := s.PutStart(31*sec+1, 1, r); err != nil {
		t.Fatalf("stale put not discarded: %v", err)
	}
	st := s.Tenants().Lookup(DefaultTenant).Directory().lookup("k").State()
	if st.Size != 200 || st.Writer != client2 || st.ID != 2 {
		t.Fatalf("state after discard %+v", st)
	}
	// A completed object is never discarded.
	if err := s.PutEnd(32*sec, PutEndRequest{Client: client2, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.PutStart(1000*sec, 1, putReq("", "k", "", 100))
	wantReason(t, err, ObjectAlreadyExists)
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestGetExistAndLeases(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	put(t, s, sec, "", "k", "", 100)
	_, err := s.Get(sec, "", "absent")
	wantReason(t, err, ObjectNotFound)
	_, err = s.Get(sec, "nobody", "k")
	wantReason(t, err, ObjectNotFound)
	if got, _ := s.Exist(sec, "", []string{"k", "absent"}); !got[0] || got[1] {
		t.Fatalf("Exist = %v", got)
	}
	if got, _ := s.Exist(sec, "nobody", []string{"k"}); got[0] {
		t.Fatal("Exist found a key of an unknown tenant")
	}
	// Exist at 1s leased until 11s.
	wantReason(t, s.Remove(10*sec, "", "k", false), ObjectHasLease)
	if err := s.Remove(11*sec, "", "k", false); err != nil {
		t.Fatalf("remove after the lease: %v", err)
	}
	// A new leader treats every object as leased for one ttl.
	put(t, s, 20*sec, "", "k", "", 100)
	s.ResetSoftState(20 * sec)
	wantReason(t, s.Remove(29*sec, "", "k", false), ObjectHasLease)
	if err := s.Remove(30*sec, "", "k", false); err != nil {
		t.Fatal(err)
	}
}

// TestPutEndStampsWriteTime: a completed write ranks by its time (lease = max(lease, now), to the
// millisecond below) but protects nothing, not even at the instant of the write; a lease granted
// by a read is kept.
func TestPutEndStampsWriteTime(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	lease := func(key string) int64 {
		var got int64 = -1
		s.VisitHandles(0, func(hs []ObjectHandle) bool {
			for _, h := range hs {
				if h.Key() == key {
					got = h.LeaseDeadline()
				}
			}
			return true
		})
		return got
	}
	const at = 5*sec + 1234567 // 5.001234567 s: the stamp rounds down to 5.001 s
	if _, err := s.PutStart(sec, 1, putReq("", "k", "", 100)); err != nil {
		t.Fatal(err)
	}
	if got := lease("k"); got != 0 {
		t.Fatalf("a PROCESSING object has lease %d, want 0 (never written)", got)
	}
	if err := s.PutEnd(at, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if got, want := lease("k"), int64(5*sec+1_000_000); got != want {
		t.Fatalf("after PutEnd at %d: lease %d, want %d", at, got, want)
	}
	if err := s.PutEnd(at+sec, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatalf("repeated PutEnd: %v", err)
	}
	if got, want := lease("k"), int64(6*sec+1_000_000); got != want {
		t.Fatalf("after a repeated PutEnd: lease %d, want %d", got, want)
	}
	if err := s.Remove(at+sec, "", "k", false); err != nil {
		t.Fatalf("a write's stamp must not protect from Remove: %v", err)
	}
	// A read's lease outlives a later write's stamp: max, not overwrite.
	put(t, s, 10*sec, "", "r", "", 100)
	if _, err := s.Get(10*sec, "", "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertStart(12*sec, 1, putReq("", "r", "", 100)); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertEnd(12*sec, PutEndRequest{Client: client1, Key: "r"}); err != nil {
		t.Fatal(err)
	}
	if got := lease("r"); got != 20*sec {
		t.Fatalf("after an upsert within the read lease: lease %d, want %d", got, 20*sec)
	}
	wantReason(t, s.Remove(19*sec, "", "r", false), ObjectHasLease)
}

func TestRemove(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	wantReason(t, s.Remove(sec, "", "absent", true), ObjectNotFound)
	wantReason(t, s.Remove(sec, "nobody", "k", true), TenantNotRegistered)
	if _, err := s.PutStart(sec, 1, putReq("", "p", "", 10)); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.Remove(sec, "", "p", true), ReplicaIsNotReady)
	r := putReq("", "h", "", 10)
	r.Config.HardPin = true
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: "h"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(sec, "", "h", false); err != nil {
		t.Fatalf("hard pin must not protect from Remove: %v", err)
	}
	errs := s.BatchRemove(sec, "", []string{"h", "p"}, true)
	wantReason(t, errs[0], ObjectNotFound)
	wantReason(t, errs[1], ReplicaIsNotReady)
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveAll(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, s, sec, "", k, "", 10)
	}
	if _, err := s.PutStart(sec, 1, putReq("", "p", "", 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(100*sec, "", "a"); err != nil {
		t.Fatal(err)
	}
	n, err := s.RemoveAll(101*sec, "", false)
	if err != nil || n != 3 {
		t.Fatalf("RemoveAll = %d, %v; want 3 (a leased, p PROCESSING)", n, err)
	}
	n, err = s.RemoveAll(101*sec, "", true)
	if err != nil || n != 1 {
		t.Fatalf("RemoveAll force = %d, %v; want 1", n, err)
	}
	_, err = s.RemoveAll(sec, "nobody", true)
	wantReason(t, err, TenantNotRegistered)
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestGroups(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	put(t, s, sec, "", "m2", "G", 10)
	put(t, s, sec, "", "m1", "G", 10)
	put(t, s, sec, "", "solo", "", 10)
	if keys, err := s.ListGroup("", "G"); err != nil || strings.Join(keys, ",") != "m1,m2" {
		t.Fatalf("ListGroup = %v %v", keys, err)
	}
	_, err := s.ListGroup("", "none")
	wantReason(t, err, ObjectNotFound)
	// Membership is fixed while the object exists.
	_, err = s.PutStart(sec, 1, putReq("", "m1", "H", 10))
	wantReason(t, err, ObjectAlreadyExists)
	// Reading one member leases the whole group.
	if _, err := s.Get(50*sec, "", "m1"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.Remove(55*sec, "", "m2", false), ObjectHasLease)
	_, err = s.RemoveGroup(55*sec, "", "G", false)
	wantReason(t, err, ObjectHasLease)
	// A member that joins after the refresh makes the next read lease the group again.
	put(t, s, 56*sec, "", "m3", "G", 10)
	if _, err := s.Get(57*sec, "", "m1"); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.Remove(58*sec, "", "m3", false), ObjectHasLease)
	n, err := s.RemoveGroup(70*sec, "", "G", false)
	if err != nil || n != 3 {
		t.Fatalf("RemoveGroup = %d %v", n, err)
	}
	_, err = s.RemoveGroup(70*sec, "", "G", true)
	wantReason(t, err, ObjectNotFound)
	if got := s.Tenants().Lookup(DefaultTenant).Directory().Groups(); got != 0 {
		t.Fatalf("%d groups left", got)
	}
	// A group with a PROCESSING member cannot be removed, even with force.
	if _, err := s.PutStart(sec, 1, putReq("", "w", "W", 10)); err != nil {
		t.Fatal(err)
	}
	_, err = s.RemoveGroup(70*sec, "", "W", true)
	wantReason(t, err, ReplicaIsNotReady)
	// The last member leaving drops the group.
	if err := s.PutRevoke(sec, PutEndRequest{Client: client1, Key: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListGroup("", "W"); ReasonOf(err) != ObjectNotFound {
		t.Fatal("empty group still listed")
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestUpsert(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	r := putReq("", "k", "", 100)
	reps, err := s.UpsertStart(sec, 1, r) // absent: a put
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.UpsertStart(sec, 1, r)
	wantReason(t, err, InvalidWrite) // write in progress
	if err := s.UpsertEnd(sec, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	same, err := s.UpsertStart(2*sec, 1, r)
	if err != nil || same[0].Extent != reps[0].Extent || same[0].Status != Processing {
		t.Fatalf("same-size upsert: %+v %v; want the same extent, PROCESSING", same, err)
	}
	_, err = s.Get(2*sec, "", "k")
	wantReason(t, err, ReplicaIsNotReady)
	if err := s.UpsertEnd(2*sec, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	r.Size = 5000
	bigger, err := s.UpsertStart(3*sec, 1, r)
	if err != nil || bigger[0].Extent.Size != 5056 {
		t.Fatalf("resize upsert: %+v %v", bigger, err)
	}
	if c := s.Tenants().Lookup(DefaultTenant).Quota().Charged(); c != 5000 {
		t.Fatalf("charged %d after resize, want 5000", c)
	}
	if err := s.UpsertRevoke(3*sec, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if n := s.Tenants().Lookup(DefaultTenant).Directory().Objects(); n != 0 {
		t.Fatal("revoked upsert left the object")
	}
	put(t, s, sec, "", "g", "G", 10)
	r = putReq("", "g", "H", 10)
	_, err = s.UpsertStart(sec, 1, r)
	wantReason(t, err, ObjectAlreadyExists)
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestSoftPinCommitsOnFirstCompletion(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	mount(t, s, 2, alloc.TierNOF, 1<<20)
	r := putReq("", "k", "", 10)
	r.Config.NOF = 1
	r.Config.SoftPin = SoftPinEnable
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	e := s.Tenants().Lookup(DefaultTenant).Directory().lookup("k")
	if st := e.State(); st.SoftPinTTL != int64(DefaultSoftPin) || st.SoftPinDeadline != 0 {
		t.Fatalf("staged soft pin %+v", st)
	}
	if err := s.PutEnd(5*sec, PutEndRequest{Client: client1, Key: "k", Tier: alloc.TierMemory}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(9*sec, PutEndRequest{Client: client1, Key: "k", Tier: alloc.TierNOF}); err != nil {
		t.Fatal(err)
	}
	st := e.State()
	if st.SoftPinDeadline != 5*sec+int64(DefaultSoftPin) || !st.SoftPinned(6*sec) || st.Version != 3 {
		t.Fatalf("soft pin after completion %+v", st)
	}
}

func TestBatches(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	mount(t, s, 2, alloc.TierMemory, 1<<20)
	reqs := []PutStartRequest{putReq("", "a", "", 10), putReq("", "a", "", 10), putReq("", "b", "G", 10)}
	res := s.BatchPutStart(sec, 42, reqs, nil)
	if res[0].Err != nil || ReasonOf(res[1].Err) != ObjectAlreadyExists || res[2].Err != nil {
		t.Fatalf("BatchPutStart %+v", res)
	}
	ends := []PutEndRequest{{Client: client1, Key: "a"}, {Client: client1, Key: "zz"}, {Client: client1, Key: "b"}}
	errs := s.BatchPutEnd(sec, ends)
	if errs[0] != nil || ReasonOf(errs[1]) != ObjectNotFound || errs[2] != nil {
		t.Fatalf("BatchPutEnd %v", errs)
	}
	got, gerrs := s.BatchGet(sec, "", []string{"b", "zz", "a"})
	if gerrs[0] != nil || ReasonOf(gerrs[1]) != ObjectNotFound || gerrs[2] != nil || len(got[2].Replicas) != 1 {
		t.Fatalf("BatchGet %+v %v", got, gerrs)
	}
	errs = s.BatchPutRevoke(sec, ends)
	if ReasonOf(errs[0]) != InvalidWrite {
		t.Fatalf("BatchPutRevoke %v", errs)
	}
	if ItemSeed(42, 0) == ItemSeed(42, 1) || ItemSeed(42, 0) == 42 {
		t.Fatal("item seeds are not distinct")
	}
}

func TestErrorsAreMatchable(t *testing.T) {
	err := error(objErr(ObjectNotFound, "t", "k", "object not found"))
	if !errors.Is(err, ErrObjectNotFound) || errors.Is(err, ErrObjectHasLease) {
		t.Fatal("errors.Is does not match on reason")
	}
	if !strings.Contains(err.Error(), `tenant "t" key "k"`) || !strings.HasPrefix(err.Error(), "OBJECT_NOT_FOUND") {
		t.Fatalf("message %q", err)
	}
	for _, r := range Reasons() {
		if strings.HasPrefix(r.String(), "REASON(") {
			t.Fatalf("reason %d has no name", r)
		}
	}
}

func TestReadPathLockWaitsAreSampled(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	put(t, s, sec, "", "k", "", 100)
	const reads = 64 * 200
	for range reads {
		if _, err := s.Get(2*sec, "", "k"); err != nil {
			t.Fatal(err)
		}
	}
	for name, h := range map[string]*WaitHist{"route": &s.LockWaits().Route, "object": &s.LockWaits().Object} {
		n, sum, buckets := h.Read()
		// One read in 64 is timed: 200 expected; the bounds are many standard deviations wide.
		if n < 100 || n > 400 || sum <= 0 || buckets[LockWaitBuckets[len(LockWaitBuckets)-1]] > n {
			t.Fatalf("%s lock waits: %d samples, %g s, buckets %v", name, n, sum, buckets)
		}
	}
}

// WithHandle reaches a census handle's entry only while it is live: not once the object is erased
// (even when the key is written again), nor once its tenant was registered again.
func TestWithHandleOnlyReachesTheLiveEntry(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.RegisterTenant("a", 0); err != nil {
		t.Fatal(err)
	}
	put(t, s, 1, "a", "k", "", 64)
	put(t, s, 1, "a", "other", "", 64)
	handle := func(key string) ObjectHandle {
		t.Helper()
		var out ObjectHandle
		s.VisitTenantHandles("a", 0, func(hs []ObjectHandle) bool {
			for _, h := range hs {
				if h.Key() == key {
					out = h
				}
			}
			return true
		})
		if out.Entry == nil {
			t.Fatalf("no handle for %q", key)
		}
		return out
	}
	h := handle("k")
	reached := 0
	visit := func(o *LockedObject) error {
		reached++
		if o.Key() != "k" || o.State().ID != h.State().ID {
			t.Fatalf("reached %s id %d", o.Key(), o.State().ID)
		}
		return nil
	}
	if err := s.WithHandle(h, visit); err != nil || reached != 1 {
		t.Fatalf("live handle: %v, reached %d", err, reached)
	}
	if err := s.Remove(1, "a", "k", true); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.WithHandle(h, visit), ObjectNotFound)
	put(t, s, 2, "a", "k", "", 64) // the key again, as another entry
	wantReason(t, s.WithHandle(h, visit), ObjectNotFound)
	if reached != 1 {
		t.Fatalf("a stale handle reached the object %d times", reached-1)
	}
	o := handle("other")
	if _, err := s.UnregisterTenant("a", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegisterTenant("a", 0); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.WithHandle(o, func(*LockedObject) error { t.Fatal("reached"); return nil }), ObjectNotFound)
}

// TestListGroupOfAGroupErasedMeanwhile: ListGroup finds the group in the catalog, then takes its
// lock; an EraseGroup applied between the two steps leaves it a removed, empty entry. ListGroup must
// answer not found, never a group with no members, a state the group never had (it goes from three
// members to not found).
func TestListGroupOfAGroupErasedMeanwhile(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	for _, k := range []string{"a", "b", "c"} {
		put(t, s, 1, DefaultTenant, k, "G", 64)
	}
	tn := s.tenants.Lookup(DefaultTenant)
	g := tn.dir.group("G") // the catalog lookup of a ListGroup racing the erase
	if n, err := s.EraseGroup(GroupToken{Tenant: DefaultTenant, Group: "G"}); err != nil || n != 3 {
		t.Fatalf("EraseGroup = %d, %v", n, err)
	}
	keys, err := groupKeys(DefaultTenant, "G", g)
	if ReasonOf(err) != ObjectNotFound {
		t.Fatalf("listing the erased group's entry = %q, %v; want OBJECT_NOT_FOUND", keys, err)
	}
}
