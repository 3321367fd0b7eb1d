package store

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"metad/store/alloc"
)

// The model-based property test (TestStoreMatchesModel): it draws random operation sequences, runs
// each step against the store and the reference model (model_test.go) and checks the state after
// it (model_check_test.go).

// ---- the test ------------------------------------------------------------------------------------

var mOps = []struct {
	name   string
	weight int
}{
	{"register", 2}, {"unregister", 1}, {"setQuota", 2}, {"mount", 2}, {"unmount", 2}, {"unmountClient", 1},
	{"put", 6}, {"putStart", 10}, {"putEnd", 10}, {"putRevoke", 3}, {"upsertStart", 4}, {"upsertEnd", 3},
	{"get", 8}, {"exist", 4}, {"remove", 5}, {"removeAll", 1}, {"removeGroup", 3}, {"listGroup", 1},
	{"batchPutStart", 3}, {"batchPutEnd", 3}, {"batchPutRevoke", 1}, {"batchGet", 2}, {"batchRemove", 2},
	{"prepareRemove", 2}, {"resetSoftState", 1},
}

func TestStoreMatchesModel(t *testing.T) {
	var opNames []string
	for _, op := range mOps {
		for range op.weight {
			opNames = append(opNames, op.name)
		}
	}
	stats := map[string]int{}
	defer func() {
		if testing.Verbose() {
			for _, k := range slices.Sorted(maps.Keys(stats)) {
				t.Logf("%6d  %s", stats[k], k)
			}
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		s := newTestStore(t)
		h := &modelHarness{rt: rt, s: s, m: newRefModel(), now: mStartNow, stats: stats}
		// Initial world: tenants a (small quota) and b; 2-4 segments.
		for _, tn := range []struct {
			name  string
			quota uint64
		}{{"a", mQuotaA}, {"b", 0}} {
			id, err := s.RegisterTenant(tn.name, tn.quota)
			h.want("register "+tn.name, err, OK)
			if want := h.m.register(tn.name, tn.quota); id != want {
				h.fatalf("register %s: instance %d, model %d", tn.name, id, want)
			}
		}
		nseg := rapid.IntRange(2, 4).Draw(rt, "segments")
		for _, d := range mSegDefs[:nseg] {
			if _, err := s.MountSegment(mSegment(d, client1)); err != nil {
				h.fatalf("mount: %v", err)
			}
			h.m.mounted[segID(d.n)] = d
		}
		h.checkState()

		steps := rapid.IntRange(100, 300).Draw(rt, "steps")
		for h.step = 1; h.step <= steps; h.step++ {
			h.advance()
			op := pickUniform(rt, "op", opNames)
			h.run(op)
			h.checkState()
		}
	})
}

// advance moves time forward: mostly a little, sometimes past half a lease, a lease, or the discard
// timeout. Times stay whole milliseconds (the lease is kept in milliseconds).
func (h *modelHarness) advance() {
	small := []int64{0, 1, 50, 200, 1000, 2000}
	jumps := []int64{5000, 6000, 10000, 11000, 30000, 31000}
	if rapid.IntRange(0, 15).Draw(h.rt, "jump") == 15 {
		h.now += pickUniform(h.rt, "jump_ms", jumps) * int64(time.Millisecond)
	} else {
		h.now += pickUniform(h.rt, "advance_ms", small) * int64(time.Millisecond)
	}
}

func (h *modelHarness) drawTenant() string {
	return pickUniform(h.rt, "tenant", []string{"", "default", "a", "a", "b", "b"})
}

// drawKey draws a key of the tenant: half the time one the model holds (so that writes and reads
// find their objects often), else any key.
func (h *modelHarness) drawKey(tenant string) string {
	if t := h.m.tenants[NormalizeTenant(tenant)]; t != nil && len(t.objects) > 0 && rapid.Bool().Draw(h.rt, "existing") {
		return pickUniform(h.rt, "key", slices.Sorted(maps.Keys(t.objects)))
	}
	return pickUniform(h.rt, "key", mKeys)
}

// pickUniform draws an element of xs uniformly (rapid's SampledFrom favours the first elements); it
// shrinks towards the first.
func pickUniform[E any](rt *rapid.T, label string, xs []E) E {
	n := uint(len(xs))
	if n == 1 {
		return xs[0]
	}
	g := rapid.Custom(func(t *rapid.T) uint {
		for {
			var v uint
			for range bits.Len(n - 1) {
				v <<= 1
				if rapid.Bool().Draw(t, "bit") {
					v |= 1
				}
			}
			if v < n {
				return v
			}
		}
	})
	i := g.Draw(rt, label)
	return xs[i]
}

// drawKeys draws 1-3 keys of the tenant (duplicates allowed).
func (h *modelHarness) drawKeys(tenant string) []string {
	keys := make([]string, rapid.IntRange(1, 3).Draw(h.rt, "nkeys"))
	for i := range keys {
		keys[i] = h.drawKey(tenant)
	}
	return keys
}

func (h *modelHarness) drawClient() alloc.ID {
	if rapid.IntRange(0, 9).Draw(h.rt, "other_client") == 0 {
		return client2
	}
	return client1
}

func (h *modelHarness) drawTier() alloc.Tier {
	return pickUniform(h.rt, "tier", []alloc.Tier{0, 0, alloc.TierMemory, alloc.TierNOF})
}

func (h *modelHarness) drawPutReq(tenant string) PutStartRequest {
	rt := h.rt
	req := putReq(tenant, h.drawKey(tenant), pickUniform(rt, "group", []string{"", "", "G1", "G2", "G3"}),
		pickUniform(rt, "size", mSizes))
	req.Client = h.drawClient()
	req.Config.Memory = rapid.IntRange(1, 2).Draw(rt, "memory")
	req.Config.NOF = pickUniform(rt, "nof", []int{0, 0, 1})
	switch rapid.IntRange(0, 3).Draw(rt, "soft_pin") {
	case 1:
		req.Config.SoftPin = SoftPinEnable
	case 2:
		req.Config.SoftPin, req.Config.SoftPinTTL = SoftPinEnable, time.Minute
	case 3:
		req.Config.SoftPin = SoftPinDisable
	}
	req.Config.HardPin = rapid.IntRange(0, 3).Draw(rt, "hard_pin") == 0
	if rapid.IntRange(0, 3).Draw(rt, "preferred") == 0 {
		req.Config.Preferred = []alloc.ID{segID(pickUniform(rt, "pref_seg", mSegDefs).n)}
	}
	if rapid.Bool().Draw(rt, "free_ratio_first") {
		req.Strategy = alloc.StrategyFreeRatioFirst
	}
	return req
}

func (h *modelHarness) drawEndReq(tenant string) PutEndRequest {
	return PutEndRequest{Tenant: tenant, Client: h.drawClient(), Key: h.drawKey(tenant), Tier: h.drawTier()}
}

func (h *modelHarness) run(op string) {
	rt, s, m := h.rt, h.s, h.m
	now := h.now
	switch op {
	case "register":
		name := pickUniform(rt, "tenant", mTenantNames)
		quota := pickUniform(rt, "quota", []uint64{0, 0, mQuotaA, 3000})
		id, err := s.RegisterTenant(name, quota)
		rt.Logf("%d: RegisterTenant(%s, %d) = %d, %v", h.step, name, quota, id, err)
		if m.tenants[name] != nil {
			h.want(op, err, TenantAlreadyExists)
			return
		}
		h.want(op, err, OK)
		if want := m.register(name, quota); id != want {
			h.fatalf("register %s: instance %d, model %d", name, id, want)
		}

	case "unregister":
		name := h.drawTenant()
		force := rapid.Bool().Draw(rt, "force")
		n, err := s.UnregisterTenant(name, force)
		rt.Logf("%d: UnregisterTenant(%q, force=%v) = %d, %v", h.step, name, force, n, err)
		t := m.tenants[NormalizeTenant(name)]
		switch {
		case t == nil:
			h.want(op, err, TenantNotRegistered)
		case len(t.objects) > 0 && !force:
			h.want(op, err, TenantNotEmpty)
		default:
			h.want(op, err, OK)
			if n != len(t.objects) {
				h.fatalf("unregister %q erased %d, model %d", name, n, len(t.objects))
			}
			delete(m.tenants, NormalizeTenant(name))
		}

	case "setQuota":
		name := h.drawTenant()
		quota := pickUniform(rt, "quota", []uint64{0, 500, mQuotaA, 3000, 10000})
		err := s.SetQuota(name, quota)
		rt.Logf("%d: SetQuota(%q, %d) = %v", h.step, name, quota, err)
		if t := m.tenants[NormalizeTenant(name)]; t == nil {
			h.want(op, err, TenantNotRegistered)
		} else {
			h.want(op, err, OK)
			t.requested = quota
		}

	case "mount":
		d := pickUniform(rt, "segment", mSegDefs)
		owner := h.drawClient()
		_, mounted := m.mounted[segID(d.n)]
		if !mounted && owner != client1 {
			owner = client1 // the model's segments all belong to client1
		}
		created, err := s.MountSegment(mSegment(d, owner))
		rt.Logf("%d: MountSegment(%d, owner %s) = %v, %v", h.step, d.n, owner, created, err)
		switch {
		case mounted && owner != client1:
			h.want(op, err, SegmentOwnedByOtherClient)
		case mounted:
			h.want(op, err, OK)
			if created {
				h.fatalf("remount of segment %d by its owner: created", d.n)
			}
		default:
			h.want(op, err, OK)
			if !created {
				h.fatalf("mount of segment %d: not created", d.n)
			}
			m.mounted[segID(d.n)] = d
		}

	case "unmount":
		d := pickUniform(rt, "segment", mSegDefs)
		res, err := s.UnmountSegment(segID(d.n))
		rt.Logf("%d: UnmountSegment(%d) = %+v, %v", h.step, d.n, res, err)
		if _, ok := m.mounted[segID(d.n)]; !ok {
			h.want(op, err, SegmentNotFound)
			return
		}
		h.want(op, err, OK)
		want := h.modelUnmount(map[alloc.ID]bool{segID(d.n): true})
		want.Segments = 1
		if res != want {
			h.fatalf("unmount %d: %+v, model %+v", d.n, res, want)
		}

	case "unmountClient":
		res := s.UnmountClient(client1, false)
		rt.Logf("%d: UnmountClient = %+v", h.step, res)
		gone := map[alloc.ID]bool{}
		for id := range m.mounted {
			gone[id] = true
		}
		want := UnmountResult{}
		if len(gone) > 0 {
			want = h.modelUnmount(gone)
			want.Segments = len(gone)
		}
		if res != want {
			h.fatalf("unmount client: %+v, model %+v", res, want)
		}

	case "putStart", "upsertStart":
		req := h.drawPutReq(h.drawTenant())
		seed := rapid.Uint64().Draw(rt, "seed")
		sim := s.Segments().Clone()
		var reps []Replica
		var err error
		if op == "putStart" {
			reps, err = s.PutStart(now, seed, req)
		} else {
			reps, err = s.UpsertStart(now, seed, req)
		}
		rt.Logf("%d: %s(%q, %s, group %q, size %d, mem %d nof %d, client %d, pref %v) = %d replicas, %v", h.step, op,
			req.Tenant, req.Key, req.Group, req.Size, req.Config.Memory, req.Config.NOF, req.Client[15], req.Config.Preferred, len(reps), err)
		h.modelPutStart(op, sim, req, op == "upsertStart", reps, err)

	case "put":
		// PutStart and at once PutEnd by the same client (the common case).
		req := h.drawPutReq(h.drawTenant())
		seed := rapid.Uint64().Draw(rt, "seed")
		sim := s.Segments().Clone()
		reps, err := s.PutStart(now, seed, req)
		rt.Logf("%d: put(%q, %s, group %q, size %d, mem %d nof %d, client %d) = %d replicas, %v", h.step,
			req.Tenant, req.Key, req.Group, req.Size, req.Config.Memory, req.Config.NOF, req.Client[15], len(reps), err)
		h.modelPutStart("put start", sim, req, false, reps, err)
		end := PutEndRequest{Tenant: req.Tenant, Client: req.Client, Key: req.Key}
		err = s.PutEnd(now, end)
		rt.Logf("%d: put end = %v", h.step, err)
		h.modelPutEnd("put end", end, false, err)

	case "batchPutStart":
		n := rapid.IntRange(1, 3).Draw(rt, "batch")
		tenant := h.drawTenant()
		reqs := make([]PutStartRequest, n)
		for i := range reqs {
			reqs[i] = h.drawPutReq(tenant)
		}
		seed := rapid.Uint64().Draw(rt, "seed")
		sim := s.Segments().Clone()
		res := s.BatchPutStart(now, seed, reqs, nil)
		if len(res) != n {
			h.fatalf("batch put start: %d results for %d items", len(res), n)
		}
		for i, r := range res {
			rt.Logf("%d: BatchPutStart[%d](%q, %s, group %q, size %d, mem %d nof %d) = %d replicas, %v", h.step, i,
				reqs[i].Tenant, reqs[i].Key, reqs[i].Group, reqs[i].Size, reqs[i].Config.Memory, reqs[i].Config.NOF, len(r.Replicas), r.Err)
			h.modelPutStart(fmt.Sprintf("batch put start [%d]", i), sim, reqs[i], false, r.Replicas, r.Err)
		}

	case "putEnd", "upsertEnd", "putRevoke":
		req := h.drawEndReq(h.drawTenant())
		var err error
		switch op {
		case "putEnd":
			err = s.PutEnd(now, req)
		case "upsertEnd":
			err = s.UpsertEnd(now, req)
		default:
			err = s.PutRevoke(now, req)
		}
		rt.Logf("%d: %s(%q, %s, client %d, tier %s) = %v", h.step, op, req.Tenant, req.Key, req.Client[15], req.Tier, err)
		h.modelPutEnd(op, req, op == "putRevoke", err)

	case "batchPutEnd", "batchPutRevoke":
		n := rapid.IntRange(1, 3).Draw(rt, "batch")
		tenant := h.drawTenant()
		reqs := make([]PutEndRequest, n)
		for i := range reqs {
			reqs[i] = h.drawEndReq(tenant)
		}
		var errs []error
		if op == "batchPutEnd" {
			errs = s.BatchPutEnd(now, reqs)
		} else {
			errs = s.BatchPutRevoke(now, reqs)
		}
		for i, err := range errs {
			rt.Logf("%d: %s[%d](%q, %s, client %d, tier %s) = %v", h.step, op, i, reqs[i].Tenant, reqs[i].Key, reqs[i].Client[15], reqs[i].Tier, err)
			h.modelPutEnd(fmt.Sprintf("%s [%d]", op, i), reqs[i], op == "batchPutRevoke", err)
		}

	case "get":
		tenant := h.drawTenant()
		key := h.drawKey(tenant)
		res, err := s.Get(now, tenant, key)
		rt.Logf("%d: Get(%q, %s) = %d replicas, %v", h.step, tenant, key, len(res.Replicas), err)
		h.modelGet(op, tenant, key, res, err)

	case "batchGet":
		tenant := h.drawTenant()
		keys := h.drawKeys(tenant)
		res, errs := s.BatchGet(now, tenant, keys)
		for i := range keys {
			rt.Logf("%d: BatchGet[%d](%q, %s) = %d replicas, %v", h.step, i, tenant, keys[i], len(res[i].Replicas), errs[i])
			h.modelGet(fmt.Sprintf("batch get [%d]", i), tenant, keys[i], res[i], errs[i])
		}

	case "exist":
		tenant := h.drawTenant()
		keys := h.drawKeys(tenant)
		got, err := s.Exist(now, tenant, keys)
		if err != nil {
			h.fatalf("exist: %v", err)
		}
		rt.Logf("%d: Exist(%q, %q) = %v", h.step, tenant, keys, got)
		for i, k := range keys {
			r, _ := h.modelRead(tenant, k)
			if got[i] != (r == OK) {
				h.fatalf("exist %q: %v, model %v", k, got[i], r == OK)
			}
		}

	case "remove":
		tenant := h.drawTenant()
		key := h.drawKey(tenant)
		force := rapid.Bool().Draw(rt, "force")
		err := s.Remove(now, tenant, key, force)
		rt.Logf("%d: Remove(%q, %s, force=%v) = %v", h.step, tenant, key, force, err)
		h.modelRemove(op, tenant, key, force, err)

	case "batchRemove":
		tenant := h.drawTenant()
		keys := h.drawKeys(tenant)
		force := rapid.Bool().Draw(rt, "force")
		errs := s.BatchRemove(now, tenant, keys, force)
		for i, k := range keys {
			rt.Logf("%d: BatchRemove[%d](%q, %s, force=%v) = %v", h.step, i, tenant, k, force, errs[i])
			h.modelRemove(fmt.Sprintf("batch remove [%d]", i), tenant, k, force, errs[i])
		}

	case "removeAll":
		tenant := h.drawTenant()
		force := rapid.Bool().Draw(rt, "force")
		n, err := s.RemoveAll(now, tenant, force)
		rt.Logf("%d: RemoveAll(%q, force=%v) = %d, %v", h.step, tenant, force, n, err)
		t := m.tenants[NormalizeTenant(tenant)]
		if t == nil {
			h.want(op, err, TenantNotRegistered)
			return
		}
		h.want(op, err, OK)
		want := 0
		for _, k := range slices.Sorted(maps.Keys(t.objects)) {
			if h.removable(t.objects[k], force) == OK {
				m.erase(t, k)
				want++
			}
		}
		if n != want {
			h.fatalf("remove all %q: %d, model %d", tenant, n, want)
		}

	case "removeGroup":
		tenant := h.drawTenant()
		group := pickUniform(rt, "group", mGroupNames)
		force := rapid.Bool().Draw(rt, "force")
		n, err := s.RemoveGroup(now, tenant, group, force)
		rt.Logf("%d: RemoveGroup(%q, %s, force=%v) = %d, %v", h.step, tenant, group, force, n, err)
		t := m.tenants[NormalizeTenant(tenant)]
		if t == nil {
			h.want(op, err, TenantNotRegistered)
			return
		}
		members := t.members(group)
		if len(members) == 0 {
			h.want(op, err, ObjectNotFound)
			return
		}
		for _, k := range members {
			if r := h.removable(t.objects[k], force); r != OK {
				h.want(op, err, r)
				return
			}
		}
		h.want(op, err, OK)
		if n != len(members) {
			h.fatalf("remove group %s: %d, model %d", group, n, len(members))
		}
		for _, k := range members {
			m.erase(t, k)
		}

	case "listGroup":
		tenant := h.drawTenant()
		group := pickUniform(rt, "group", append([]string{"nope"}, mGroupNames...))
		keys, err := s.ListGroup(tenant, group)
		rt.Logf("%d: ListGroup(%q, %s) = %q, %v", h.step, tenant, group, keys, err)
		var want []string
		if t := m.tenants[NormalizeTenant(tenant)]; t != nil {
			want = t.members(group)
		}
		if len(want) == 0 {
			h.want(op, err, ObjectNotFound)
			return
		}
		h.want(op, err, OK)
		if !slices.Equal(keys, want) {
			h.fatalf("list group: %q, model %q", keys, want)
		}

	case "prepareRemove":
		// The two-step removal by hand: prepare (marks), then either abort (ClearMarks) or commit
		// (EraseTokens with the version). While marked, the leader's linearizable reads and removals
		// are told to ask again (ErrUnlinkPending); stale reads still see the object.
		tenant := h.drawTenant()
		key := h.drawKey(tenant)
		force := rapid.Bool().Draw(rt, "force")
		commit := rapid.Bool().Draw(rt, "commit")
		tok, err := s.PrepareRemove(now, tenant, key, force)
		rt.Logf("%d: PrepareRemove(%q, %s, force=%v) = %+v, %v; commit=%v", h.step, tenant, key, force, tok, err, commit)
		t := m.tenants[NormalizeTenant(tenant)]
		want := TenantNotRegistered
		if t != nil {
			want = ObjectNotFound
			if o := t.objects[key]; o != nil {
				want = h.removable(o, force)
			}
		}
		h.want(op, err, want)
		if want != OK {
			return
		}
		o := t.objects[key]
		if tok.Tenant != NormalizeTenant(tenant) || tok.Instance != t.instance || tok.Key != key || tok.Version != o.version {
			h.fatalf("prepare remove: token %+v, model instance %d version %d", tok, t.instance, o.version)
		}
		if _, err := s.Get(now, tenant, key); !errors.Is(err, ErrUnlinkPending) {
			h.fatalf("Get of a marked object: %v, want ErrUnlinkPending", err)
		}
		if _, err := s.Exist(now, tenant, []string{key}); !errors.Is(err, ErrUnlinkPending) {
			h.fatalf("Exist of a marked object: %v, want ErrUnlinkPending", err)
		}
		if _, err := s.Peek(tenant, key); err != nil {
			h.fatalf("Peek of a marked object: %v", err)
		}
		if err := s.Remove(now, tenant, key, true); !errors.Is(err, ErrUnlinkPending) {
			h.fatalf("Remove of a marked object: %v, want ErrUnlinkPending", err)
		}
		if commit {
			errs := s.EraseTokens([]ObjectToken{tok}, true)
			h.want("EraseTokens", errs[0], OK)
			m.erase(t, key)
		} else {
			s.ClearMarks([]ObjectToken{tok})
		}

	case "resetSoftState":
		s.ResetSoftState(now)
		rt.Logf("%d: ResetSoftState", h.step)
		m.floor = now + mTTL

	default:
		h.fatalf("unknown op %q", op)
	}
}
