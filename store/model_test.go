package store

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"math/bits"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"metad/store/alloc"
)

// Model-based property test: random operation sequences run against the store and against a small
// reference model written from SEMANTICS sections 1-7 in plain maps. After every step the store's
// reason must be the model's, and the visible state (tenants, objects, replicas, groups, leases,
// quotas, segment usage) must be the model's.
//
// The model does not predict placement offsets. It learns each replica's extent from the store's
// answer and checks it independently: the count of replicas per tier is min(asked, segments of the
// tier with a free span large enough before the placement), every replica is on a distinct segment
// that could hold it, a preferred segment that could hold it comes first, and NO_AVAILABLE_HANDLE is
// accepted only when no segment of a tier asked for has a large enough free span. The segments'
// free spans "before the placement" come from a clone of the segment registry, replayed with the
// model's own frees and the store's reported extents.

var (
	mTenantNames = []string{"default", "a", "b"} // "a" has a small quota
	mKeys        = []string{"k1", "k2", "k3", "k4", "k5"}
	mGroupNames  = []string{"G1", "G2", "G3"}
	mSizes       = []uint64{1, 64, 65, 100, 200, 500, 700, 1500}
)

const (
	mQuotaA   = 1500
	mTTL      = int64(10 * time.Second)
	mDiscard  = int64(DefaultDiscardAfter)
	mStartNow = 1000 * sec
)

type mSegDef struct {
	n    byte
	tier alloc.Tier
	size uint64
}

// Segments: three MEMORY (one small) and one NOF; sizes chosen so that placements fail sometimes.
var mSegDefs = []mSegDef{
	{1, alloc.TierMemory, 4096},
	{2, alloc.TierMemory, 2048},
	{3, alloc.TierMemory, 512},
	{4, alloc.TierNOF, 2048},
}

func mSegment(d mSegDef, owner alloc.ID) alloc.Segment {
	return alloc.Segment{ID: segID(d.n), Name: "seg", Base: 1 << 30 * uint64(d.n), Size: d.size,
		Endpoint: "127.0.0.1:7000", Tier: d.tier, Owner: owner}
}

// ---- the reference model -------------------------------------------------------------------------

type mReplica struct {
	id     uint64
	tier   alloc.Tier
	ext    alloc.Extent // learned from the store's answer
	status ReplicaStatus
}

type mObject struct {
	id, version  uint64 // id 0: not learned yet (learned at the next state check)
	group        string
	size         uint64
	writer       alloc.ID
	putStart     int64
	softTTL      int64 // staged soft pin
	softDeadline int64
	hardPin      bool
	reps         []mReplica
	lease        int64 // leader soft state
}

func (o *mObject) hasComplete() bool {
	return slices.ContainsFunc(o.reps, func(r mReplica) bool { return r.status == Complete })
}

func (o *mObject) hasProcessing() bool {
	return slices.ContainsFunc(o.reps, func(r mReplica) bool { return r.status == Processing })
}

func (o *mObject) memBytes() uint64 {
	n := uint64(0)
	for _, r := range o.reps {
		if r.tier == alloc.TierMemory {
			n++
		}
	}
	return n * o.size
}

type mGroup struct {
	joined bool // gained a member since the last group-wide lease refresh
}

type mTenant struct {
	instance  uint64
	requested uint64
	objects   map[string]*mObject
	groups    map[string]*mGroup
	seenIDs   map[uint64]bool // object ids handed out to this instance
	maxRepID  uint64
}

func (t *mTenant) charged() uint64 {
	var c uint64
	for _, o := range t.objects {
		c += o.memBytes()
	}
	return c
}

func (t *mTenant) members(g string) []string {
	var ks []string
	for k, o := range t.objects {
		if o.group == g {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

type refModel struct {
	tenants      map[string]*mTenant
	nextInstance uint64
	mounted      map[alloc.ID]mSegDef
	floor        int64 // lease floor set by ResetSoftState
}

func newRefModel() *refModel {
	m := &refModel{tenants: map[string]*mTenant{}, mounted: map[alloc.ID]mSegDef{}}
	m.register("default", 0)
	return m
}

func (m *refModel) register(name string, quota uint64) uint64 {
	m.nextInstance++
	m.tenants[name] = &mTenant{instance: m.nextInstance, requested: quota,
		objects: map[string]*mObject{}, groups: map[string]*mGroup{}, seenIDs: map[uint64]bool{}}
	return m.nextInstance
}

// erase drops an object and, with its last member, its group.
func (m *refModel) erase(t *mTenant, key string) {
	o := t.objects[key]
	delete(t.objects, key)
	if o.group != "" && len(t.members(o.group)) == 0 {
		delete(t.groups, o.group)
	}
}

func (m *refModel) leased(o *mObject, now int64) bool { return now < max(o.lease, m.floor) }

func (m *refModel) capacity(tier alloc.Tier) uint64 {
	var c uint64
	for _, d := range m.mounted {
		if d.tier == tier {
			c += d.size
		}
	}
	return c
}

// effective computes SEMANTICS section 6 independently of alloc.EffectiveQuotas.
func (m *refModel) effective() map[string]uint64 {
	capacity := m.capacity(alloc.TierMemory)
	names := slices.Sorted(maps.Keys(m.tenants))
	out := map[string]uint64{}
	sum := new(big.Int)
	for _, n := range names {
		sum.Add(sum, new(big.Int).SetUint64(m.tenants[n].requested))
	}
	if sum.Cmp(new(big.Int).SetUint64(capacity)) <= 0 {
		for _, n := range names {
			out[n] = m.tenants[n].requested
		}
		return out
	}
	type share struct {
		name string
		rem  *big.Int
	}
	var shares []share
	given := uint64(0)
	for _, n := range names {
		r := m.tenants[n].requested
		if r == 0 {
			out[n] = 0
			continue
		}
		num := new(big.Int).Mul(new(big.Int).SetUint64(capacity), new(big.Int).SetUint64(r))
		q, rem := new(big.Int).QuoRem(num, sum, new(big.Int))
		out[n] = q.Uint64()
		given += out[n]
		shares = append(shares, share{n, rem})
	}
	slices.SortStableFunc(shares, func(a, b share) int {
		if c := b.rem.Cmp(a.rem); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for i := uint64(0); i < capacity-given; i++ {
		out[shares[i].name]++
	}
	return out
}

// ---- modelHarness -------------------------------------------------------------------------------------

type modelHarness struct {
	rt    *rapid.T
	s     *Store
	m     *refModel
	now   int64
	evict bool // a MEMORY placement that eviction could help failed this step (the store's eviction flag must say so)
	step  int
	stats map[string]int // outcomes seen, per operation (logged with -v)
}

func (h *modelHarness) fatalf(format string, args ...any) {
	h.rt.Helper()
	h.rt.Fatalf("step %d (now %ds): %s", h.step, (h.now-mStartNow)/sec, fmt.Sprintf(format, args...))
}

func (h *modelHarness) want(what string, err error, r Reason) {
	h.rt.Helper()
	if h.stats != nil {
		h.stats[strings.SplitN(what, " [", 2)[0]+" "+r.String()]++
	}
	if got := ReasonOf(err); got != r {
		h.fatalf("%s: reason %s (%v), model says %s", what, got, err, r)
	}
}

// segmentsThatFit returns the segments of tier in reg with a free span that holds size.
func segmentsThatFit(reg *alloc.Registry, tier alloc.Tier, size uint64) map[alloc.ID]bool {
	out := map[alloc.ID]bool{}
	need := alloc.RoundUp(size)
	for _, info := range reg.List() {
		if info.Tier != tier {
			continue
		}
		spans, _ := reg.FreeSpans(info.ID)
		for _, sp := range spans {
			if sp.Size >= need {
				out[info.ID] = true
				break
			}
		}
	}
	return out
}

// segmentLargeEnough reports whether some segment of tier is at least size bytes (rounded) in all.
func segmentLargeEnough(reg *alloc.Registry, tier alloc.Tier, size uint64) bool {
	return slices.ContainsFunc(reg.List(), func(s alloc.SegmentInfo) bool {
		return s.Tier == tier && s.Size >= alloc.RoundUp(size)
	})
}

func (h *modelHarness) softTTL(c ReplicaConfig) int64 {
	if c.SoftPin != SoftPinEnable {
		return 0
	}
	if c.SoftPinTTL == 0 {
		return int64(DefaultSoftPin)
	}
	return int64(c.SoftPinTTL)
}

// checkPlacement checks a successful placement against sim (the segments just before it) and
// reserves its extents in sim. It returns the model replicas.
func (h *modelHarness) checkPlacement(what string, sim *alloc.Registry, t *mTenant, req PutStartRequest, reps []Replica) []mReplica {
	h.rt.Helper()
	memFit := segmentsThatFit(sim, alloc.TierMemory, req.Size)
	nofFit := segmentsThatFit(sim, alloc.TierNOF, req.Size)
	wantMem := min(req.Config.Memory, len(memFit))
	wantNOF := min(req.Config.NOF, len(nofFit))
	if len(reps) != wantMem+wantNOF {
		h.fatalf("%s: %d replicas, model expects %d MEMORY + %d NOF (fit: %d MEMORY, %d NOF segments)",
			what, len(reps), wantMem, wantNOF, len(memFit), len(nofFit))
	}
	seen := map[alloc.ID]bool{}
	var out []mReplica
	for i, r := range reps {
		tier, fit := alloc.TierMemory, memFit
		if i >= wantMem {
			tier, fit = alloc.TierNOF, nofFit
		}
		if r.Tier != tier || r.Status != Processing {
			h.fatalf("%s: replica %d is %s/%s, want %s/PROCESSING", what, i, r.Tier, r.Status, tier)
		}
		if !fit[r.Extent.Segment] || seen[r.Extent.Segment] {
			h.fatalf("%s: replica %d on segment %s: not a distinct segment that could hold it", what, i, r.Extent.Segment)
		}
		seen[r.Extent.Segment] = true
		if r.Extent.Size != alloc.RoundUp(req.Size) {
			h.fatalf("%s: replica %d extent size %d, want %d", what, i, r.Extent.Size, alloc.RoundUp(req.Size))
		}
		if r.ID <= t.maxRepID {
			h.fatalf("%s: replica id %d not fresh (last %d)", what, r.ID, t.maxRepID)
		}
		t.maxRepID = r.ID
		if err := sim.Reserve(r.Extent); err != nil {
			h.fatalf("%s: replica %d extent %+v was not free: %v", what, i, r.Extent, err)
		}
		out = append(out, mReplica{id: r.ID, tier: r.Tier, ext: r.Extent, status: Processing})
	}
	// A preferred segment that could hold the replica is used first.
	if len(req.Config.Preferred) > 0 {
		p := req.Config.Preferred[0]
		for i, r := range reps {
			first := i == 0 || (i == wantMem && r.Tier == alloc.TierNOF)
			if first && (r.Tier == alloc.TierMemory && memFit[p] || r.Tier == alloc.TierNOF && nofFit[p]) && r.Extent.Segment != p {
				h.fatalf("%s: first %s replica on %s, preferred %s could hold it", what, r.Tier, r.Extent.Segment, p)
			}
		}
	}
	return out
}

// modelPutStart applies a PutStart (or UpsertStart) to the model and checks the store's answer.
// sim holds the segments' state just before this request and is kept up to date.
func (h *modelHarness) modelPutStart(what string, sim *alloc.Registry, req PutStartRequest, upsert bool, reps []Replica, err error) {
	h.rt.Helper()
	name := NormalizeTenant(req.Tenant)
	t := h.m.tenants[name]
	if t == nil {
		h.want(what, err, TenantNotRegistered)
		return
	}
	o := t.objects[req.Key]
	replace := false
	if o != nil {
		if upsert {
			switch {
			case o.group != req.Group:
				h.want(what, err, ObjectAlreadyExists)
				return
			case o.hasProcessing():
				h.want(what, err, InvalidWrite)
				return
			case o.size == req.Size:
				h.want(what, err, OK)
				if len(reps) != len(o.reps) {
					h.fatalf("%s: same-size upsert returned %d replicas, object has %d", what, len(reps), len(o.reps))
				}
				for i := range o.reps {
					o.reps[i].status = Processing
					r := reps[i]
					if r.ID != o.reps[i].id || r.Extent != o.reps[i].ext || r.Tier != o.reps[i].tier || r.Status != Processing {
						h.fatalf("%s: same-size upsert replica %d = %+v, want the old extent %+v PROCESSING", what, i, r, o.reps[i])
					}
				}
				h.restart(o, req)
				return
			}
			replace = true
		} else {
			if o.hasComplete() || h.now-o.putStart <= mDiscard {
				h.want(what, err, ObjectAlreadyExists)
				return
			}
			// A stale attempt: discarded, then the put proceeds (whatever its outcome).
			for _, r := range o.reps {
				if err := sim.Free(r.ext); err != nil {
					h.fatalf("%s: model discard: free %+v: %v", what, r.ext, err)
				}
			}
			h.m.erase(t, req.Key)
			o = nil
		}
	}
	wantCharge := uint64(req.Config.Memory) * req.Size
	if t.requested != 0 && t.charged()+wantCharge > h.m.effective()[name] {
		h.want(what, err, TenantQuotaExceeded)
		return
	}
	memFit := segmentsThatFit(sim, alloc.TierMemory, req.Size)
	nofFit := segmentsThatFit(sim, alloc.TierNOF, req.Size)
	if len(memFit) == 0 || (req.Config.NOF > 0 && len(nofFit) == 0) {
		h.want(what, err, NoAvailableHandle)
		// Memory eviction is wanted only when MEMORY had no room and freeing some could help.
		h.evict = h.evict || (len(memFit) == 0 && segmentLargeEnough(sim, alloc.TierMemory, req.Size))
		return
	}
	h.want(what, err, OK)
	nr := h.checkPlacement(what, sim, t, req, reps)
	if replace {
		for _, r := range o.reps {
			if err := sim.Free(r.ext); err != nil {
				h.fatalf("%s: model upsert: free %+v: %v", what, r.ext, err)
			}
		}
		o.size = req.Size
		o.reps = nr
		h.restart(o, req)
		return
	}
	o = &mObject{group: req.Group, size: req.Size, version: 1, reps: nr}
	h.restart(o, req)
	o.version = 1
	t.objects[req.Key] = o
	if req.Group != "" {
		g := t.groups[req.Group]
		if g == nil {
			g = &mGroup{}
			t.groups[req.Group] = g
		}
		g.joined = true
	}
}

// restart sets the fields a write (re)start sets and bumps the version.
func (h *modelHarness) restart(o *mObject, req PutStartRequest) {
	o.writer = req.Client
	o.putStart = h.now
	o.hardPin = req.Config.HardPin
	o.softTTL = h.softTTL(req.Config)
	o.softDeadline = 0
	o.version++
}

func (h *modelHarness) modelPutEnd(what string, req PutEndRequest, revoke bool, err error) {
	h.rt.Helper()
	t := h.m.tenants[NormalizeTenant(req.Tenant)]
	if t == nil {
		h.want(what, err, TenantNotRegistered)
		return
	}
	o := t.objects[req.Key]
	if o == nil {
		h.want(what, err, ObjectNotFound)
		return
	}
	if o.writer != req.Client {
		h.want(what, err, IllegalClient)
		return
	}
	selected, processing := 0, 0
	for _, r := range o.reps {
		if req.Tier == 0 || r.tier == req.Tier {
			selected++
			if r.status == Processing {
				processing++
			}
		}
	}
	if revoke {
		if processing == 0 {
			h.want(what, err, InvalidWrite)
			return
		}
		h.want(what, err, OK)
		var keep []mReplica
		for _, r := range o.reps {
			if !((req.Tier == 0 || r.tier == req.Tier) && r.status == Processing) {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			h.m.erase(t, req.Key)
			return
		}
		o.reps = keep
		o.version++
		return
	}
	if processing == 0 {
		if selected > 0 {
			h.want(what, err, OK) // repeated PutEnd
			o.lease = max(o.lease, h.now)
		} else {
			h.want(what, err, InvalidWrite)
		}
		return
	}
	h.want(what, err, OK)
	had := o.hasComplete()
	for i := range o.reps {
		if req.Tier == 0 || o.reps[i].tier == req.Tier {
			o.reps[i].status = Complete
		}
	}
	if !had && o.softTTL > 0 {
		o.softDeadline = h.now + o.softTTL
		o.softTTL = 0
	}
	o.version++
	o.lease = max(o.lease, h.now) // ranks the object by its write time; protects nothing
}

// modelRead is Get/Exist: the reason, and on success the lease (with group coalescing).
func (h *modelHarness) modelRead(tenant, key string) (Reason, *mObject) {
	t := h.m.tenants[NormalizeTenant(tenant)]
	if t == nil {
		return ObjectNotFound, nil
	}
	o := t.objects[key]
	if o == nil {
		return ObjectNotFound, nil
	}
	if !o.hasComplete() {
		return ReplicaIsNotReady, nil
	}
	until := h.now + mTTL
	old := o.lease
	o.lease = max(o.lease, until)
	if o.group != "" {
		g := t.groups[o.group]
		if old < h.now+mTTL/2 || g.joined {
			for _, k := range t.members(o.group) {
				m := t.objects[k]
				m.lease = max(m.lease, until)
			}
			g.joined = false
		}
	}
	return OK, o
}

func (h *modelHarness) modelGet(what, tenant, key string, res GetResult, err error) {
	h.rt.Helper()
	r, o := h.modelRead(tenant, key)
	h.want(what, err, r)
	if r != OK {
		return
	}
	if res.LeaseTTL != time.Duration(mTTL) {
		h.fatalf("%s: lease ttl %s", what, res.LeaseTTL)
	}
	var want []Replica
	for _, mr := range o.reps {
		if mr.status == Complete {
			want = append(want, Replica{ID: mr.id, Extent: mr.ext, Tier: mr.tier, Status: Complete})
		}
	}
	if !slices.Equal(res.Replicas, want) {
		h.fatalf("%s: replicas %+v, model %+v", what, res.Replicas, want)
	}
}

// removable is the leader's check of Remove (and of each member for RemoveGroup).
func (h *modelHarness) removable(o *mObject, force bool) Reason {
	if o.hasProcessing() {
		return ReplicaIsNotReady
	}
	if !force && h.m.leased(o, h.now) {
		return ObjectHasLease
	}
	return OK
}

func (h *modelHarness) modelRemove(what, tenant, key string, force bool, err error) {
	h.rt.Helper()
	t := h.m.tenants[NormalizeTenant(tenant)]
	if t == nil {
		h.want(what, err, TenantNotRegistered)
		return
	}
	o := t.objects[key]
	if o == nil {
		h.want(what, err, ObjectNotFound)
		return
	}
	r := h.removable(o, force)
	h.want(what, err, r)
	if r == OK {
		h.m.erase(t, key)
	}
}

// ---- the state check -----------------------------------------------------------------------------

func (h *modelHarness) checkState() {
	h.rt.Helper()
	s, m := h.s, h.m
	if err := s.CheckInvariants(); err != nil {
		h.fatalf("CheckInvariants: %v", err)
	}
	if _, got := s.EvictionWanted(); got != h.evict {
		h.fatalf("eviction flag %v, model %v (a placement failed this step: %v)", got, h.evict, h.evict)
	}
	h.evict = false
	if s.NextInstance() != m.nextInstance {
		h.fatalf("NextInstance %d, model %d", s.NextInstance(), m.nextInstance)
	}

	// Segments: mounted set, usage from the model's replicas, allocator accounting.
	used := map[alloc.ID]uint64{}
	for _, t := range m.tenants {
		for _, o := range t.objects {
			for _, r := range o.reps {
				used[r.ext.Segment] += alloc.RoundUp(o.size)
			}
		}
	}
	reg := s.Segments()
	infos := reg.List()
	if len(infos) != len(m.mounted) {
		h.fatalf("%d segments mounted, model %d", len(infos), len(m.mounted))
	}
	var tierUsed [3]uint64
	for _, info := range infos {
		d, ok := m.mounted[info.ID]
		if !ok || d.size != info.Size || d.tier != info.Tier {
			h.fatalf("segment %s mounted as %+v, model %+v (%v)", info.ID, info.Segment, d, ok)
		}
		if info.Used > info.Size {
			h.fatalf("segment %s: used %d > size %d", info.ID, info.Used, info.Size)
		}
		if info.Used != used[info.ID] {
			h.fatalf("segment %s: used %d, model's replicas hold %d", info.ID, info.Used, used[info.ID])
		}
		spans, ok := reg.FreeSpans(info.ID)
		if !ok {
			h.fatalf("segment %s: no free spans", info.ID)
		}
		var free uint64
		for _, sp := range spans {
			free += sp.Size
		}
		if free+info.Used != info.Size {
			h.fatalf("segment %s: free %d + used %d != size %d", info.ID, free, info.Used, info.Size)
		}
		tierUsed[info.Tier] += info.Used
		delete(used, info.ID)
	}
	for id, n := range used {
		h.fatalf("model has %d bytes of replicas on unmounted segment %s", n, id)
	}
	for _, tier := range []alloc.Tier{alloc.TierMemory, alloc.TierNOF} {
		if c := reg.Capacity(tier); c != m.capacity(tier) {
			h.fatalf("capacity %s %d, model %d", tier, c, m.capacity(tier))
		}
		if u := reg.Used(tier); u != tierUsed[tier] {
			h.fatalf("used %s %d, segments sum %d", tier, u, tierUsed[tier])
		}
	}

	// Tenants, quotas, objects, groups.
	eff := m.effective()
	var effSum, reqSum uint64
	census := map[string]bool{}
	for _, name := range mTenantNames {
		mt := m.tenants[name]
		st := s.Tenants().Lookup(name)
		if mt == nil {
			if st != nil {
				h.fatalf("tenant %q registered (instance %d), model: not", name, st.Instance())
			}
			continue
		}
		if st == nil {
			h.fatalf("tenant %q not registered, model: instance %d", name, mt.instance)
		}
		if st.Instance() != mt.instance || st.Life() != TenantOpen {
			h.fatalf("tenant %q instance %d %s, model %d", name, st.Instance(), st.Life(), mt.instance)
		}
		q := st.Quota()
		if q.Requested() != mt.requested {
			h.fatalf("tenant %q requested %d, model %d", name, q.Requested(), mt.requested)
		}
		if q.Charged() != mt.charged() {
			h.fatalf("tenant %q charged %d, model %d (size x MEMORY replicas)", name, q.Charged(), mt.charged())
		}
		if q.Effective() != eff[name] {
			h.fatalf("tenant %q effective quota %d, model %d (capacity %d)", name, q.Effective(), eff[name], m.capacity(alloc.TierMemory))
		}
		if mt.requested != 0 {
			effSum += q.Effective()
			reqSum += mt.requested
		}
		d := st.Directory()
		if n := d.Objects(); n != int64(len(mt.objects)) {
			h.fatalf("tenant %q: %d objects, model %d", name, n, len(mt.objects))
		}
		if n := d.Groups(); n != len(mt.groups) {
			h.fatalf("tenant %q: %d groups, model %d", name, n, len(mt.groups))
		}
		for _, key := range mKeys {
			h.checkObject(name, st, mt, key)
			if mt.objects[key] != nil {
				census[name+"/"+key] = true
			}
		}
		for _, g := range mGroupNames {
			keys, err := s.ListGroup(name, g)
			want := mt.members(g)
			if len(want) == 0 {
				h.want("ListGroup "+name+"/"+g, err, ObjectNotFound)
				continue
			}
			h.want("ListGroup "+name+"/"+g, err, OK)
			if !slices.Equal(keys, want) {
				h.fatalf("ListGroup %s/%s = %q, model %q", name, g, keys, want)
			}
		}
	}
	if capMem := m.capacity(alloc.TierMemory); reqSum > capMem && effSum != capMem {
		h.fatalf("oversubscribed (requested %d > capacity %d): effective quotas sum to %d", reqSum, capMem, effSum)
	}
	got := map[string]bool{}
	s.VisitHandles(2, func(hs []ObjectHandle) bool {
		if len(hs) > 2 {
			h.fatalf("census chunk of %d handles, asked for 2", len(hs))
		}
		for _, x := range hs {
			got[x.Tenant.Name()+"/"+x.Key()] = true
		}
		return true
	})
	if !maps.Equal(got, census) {
		h.fatalf("census %v, model %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(census)))
	}
}

func (h *modelHarness) checkObject(name string, st *TenantState, mt *mTenant, key string) {
	h.rt.Helper()
	e := st.dir.lookup(key)
	o := mt.objects[key]
	who := name + "/" + key
	if o == nil {
		if e != nil {
			h.fatalf("%s present (%s), model: absent", who, e.Life())
		}
		return
	}
	if e == nil {
		h.fatalf("%s absent, model: present", who)
	}
	if e.Life() != Active || e.markedLocked() {
		h.fatalf("%s: %s, marked %v", who, e.Life(), e.markedLocked())
	}
	ss := e.State()
	if o.id == 0 {
		if ss.ID == 0 || mt.seenIDs[ss.ID] {
			h.fatalf("%s: new object id %d is not fresh for the tenant instance", who, ss.ID)
		}
		o.id = ss.ID
		mt.seenIDs[ss.ID] = true
	}
	if ss.ID != o.id || ss.Version != o.version {
		h.fatalf("%s: id %d version %d, model id %d version %d", who, ss.ID, ss.Version, o.id, o.version)
	}
	if groupName(e) != o.group || ss.Size != o.size || ss.Writer != o.writer || ss.PutStart != o.putStart {
		h.fatalf("%s: group %q size %d writer %s put start %d, model %q %d %s %d", who,
			groupName(e), ss.Size, ss.Writer, ss.PutStart, o.group, o.size, o.writer, o.putStart)
	}
	if ss.HardPin != o.hardPin || ss.SoftPinTTL != o.softTTL || ss.SoftPinDeadline != o.softDeadline {
		h.fatalf("%s: hard pin %v soft ttl %d deadline %d, model %v %d %d", who,
			ss.HardPin, ss.SoftPinTTL, ss.SoftPinDeadline, o.hardPin, o.softTTL, o.softDeadline)
	}
	if len(ss.Replicas) != len(o.reps) {
		h.fatalf("%s: replicas %+v, model %+v", who, ss.Replicas, o.reps)
	}
	for i, r := range ss.Replicas {
		w := o.reps[i]
		if r.ID != w.id || r.Tier != w.tier || r.Extent != w.ext || r.Status != w.status {
			h.fatalf("%s: replica %d = %+v, model %+v", who, i, r, w)
		}
	}
	if l := e.leaseLocked(); l != o.lease {
		h.fatalf("%s: lease %d, model %d", who, l, o.lease)
	}
}

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
		res := s.UnmountClient(client1)
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

// modelUnmount drops the model's replicas on the gone segments; an object left with none is erased.
func (h *modelHarness) modelUnmount(gone map[alloc.ID]bool) UnmountResult {
	var r UnmountResult
	for id := range gone {
		delete(h.m.mounted, id)
	}
	for _, t := range h.m.tenants {
		for _, k := range slices.Sorted(maps.Keys(t.objects)) {
			o := t.objects[k]
			var keep []mReplica
			for _, rep := range o.reps {
				if gone[rep.ext.Segment] {
					r.Replicas++
				} else {
					keep = append(keep, rep)
				}
			}
			switch {
			case len(keep) == len(o.reps):
			case len(keep) == 0:
				h.m.erase(t, k)
				r.Erased++
			default:
				o.reps = keep
				o.version++
			}
		}
	}
	return r
}
