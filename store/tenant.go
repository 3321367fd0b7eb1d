package store

import (
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// TenantLife is the lifecycle of a tenant instance: open -> closing (admission closed, being torn
// down) -> removed (unregistered; every object erased).
type TenantLife uint32

const (
	TenantOpen TenantLife = iota
	TenantClosing
	TenantRemoved
)

func (l TenantLife) String() string { return [...]string{"open", "closing", "removed"}[l] }

// QuotaAccount is one tenant's memory quota. Safe for concurrent use: charge and release are atomic.
// requested is replicated (0 = no quota); effective is derived from all tenants' requests and the
// mounted MEMORY capacity (alloc.EffectiveQuotas); charged is the sum of MemoryBytes of the tenant's
// objects.
type QuotaAccount struct {
	requested atomic.Uint64
	effective atomic.Uint64
	charged   atomic.Uint64
}

// TryCharge adds n to charged unless that would pass the effective quota (no quota: unless the sum
// would pass 2^64-1).
func (q *QuotaAccount) TryCharge(n uint64) bool {
	for {
		cur := q.charged.Load()
		sum, carry := bits.Add64(cur, n, 0)
		if carry != 0 || (q.requested.Load() != 0 && sum > q.effective.Load()) {
			return false
		}
		if q.charged.CompareAndSwap(cur, sum) {
			return true
		}
	}
}

// Release subtracts n from charged. Releasing more than is charged breaks an invariant of the
// replicated state and panics.
func (q *QuotaAccount) Release(n uint64) {
	for {
		cur := q.charged.Load()
		if n > cur {
			panic("store: quota release below zero")
		}
		if q.charged.CompareAndSwap(cur, cur-n) {
			return
		}
	}
}

// Requested, Effective and Charged read the account (bytes; Requested 0 = no quota).
func (q *QuotaAccount) Requested() uint64 { return q.requested.Load() }
func (q *QuotaAccount) Effective() uint64 { return q.effective.Load() }
func (q *QuotaAccount) Charged() uint64   { return q.charged.Load() }

// TenantState is one registered tenant instance. Concurrency contract: name and instance are
// immutable; life is atomic; gate is held shared by every write on the tenant and exclusively by
// teardown, which is how teardown closes admission and drains writes in flight. Lock order: gate
// before any group or object lock.
type TenantState struct {
	name     string
	instance uint64
	life     atomic.Uint32
	gate     sync.RWMutex
	quota    QuotaAccount
	dir      *GroupDirectory
}

// Name returns the tenant id.
func (t *TenantState) Name() string { return t.name }

// Instance returns the tenant's instance id (monotonic, never reused).
func (t *TenantState) Instance() uint64 { return t.instance }

// Life returns the tenant's lifecycle.
func (t *TenantState) Life() TenantLife { return TenantLife(t.life.Load()) }

// Quota returns the tenant's quota account.
func (t *TenantState) Quota() *QuotaAccount { return &t.quota }

// Directory returns the tenant's object and group directory.
func (t *TenantState) Directory() *GroupDirectory { return t.dir }

// admit takes the gate shared for one write and reports whether the tenant is open. The caller calls
// release when the write is done (also when admit returns false).
func (t *TenantState) admit() bool {
	t.gate.RLock()
	return t.Life() == TenantOpen
}

func (t *TenantState) release() { t.gate.RUnlock() }

const tenantShardCount = 16

var tenantSeed = maphash.MakeSeed()

// TenantRegistry maps tenant ids to their current instance. Concurrency contract: readers load a
// shard's immutable map through an atomic pointer and take no lock; a writer copies that one shard
// under the shard's mutex and swaps the pointer (copy-on-write). Lock order: a registry shard's mutex
// is taken first of all store locks, and only by register and unregister.
type TenantRegistry struct {
	shards [tenantShardCount]tenantShard
}

type tenantShard struct {
	mu sync.Mutex // serializes writers of this shard
	m  atomic.Pointer[map[string]*TenantState]
}

func newTenantRegistry() *TenantRegistry {
	r := &TenantRegistry{}
	for i := range r.shards {
		m := map[string]*TenantState{}
		r.shards[i].m.Store(&m)
	}
	return r
}

func (r *TenantRegistry) shard(name string) *tenantShard {
	return &r.shards[maphash.String(tenantSeed, name)%tenantShardCount]
}

// Lookup returns the tenant's current instance, or nil. Lock-free.
func (r *TenantRegistry) Lookup(name string) *TenantState {
	return (*r.shard(name).m.Load())[name]
}

// insert adds t unless its name is taken.
func (r *TenantRegistry) insert(t *TenantState) bool {
	sh := r.shard(t.name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := *sh.m.Load()
	if _, ok := old[t.name]; ok {
		return false
	}
	m := make(map[string]*TenantState, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[t.name] = t
	sh.m.Store(&m)
	return true
}

// removeIfMatch unregisters name only if it still maps to that exact instance.
func (r *TenantRegistry) removeIfMatch(t *TenantState) bool {
	sh := r.shard(t.name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old := *sh.m.Load()
	if old[t.name] != t {
		return false
	}
	m := make(map[string]*TenantState, len(old))
	for k, v := range old {
		if k != t.name {
			m[k] = v
		}
	}
	sh.m.Store(&m)
	return true
}

// List returns every registered tenant in id order.
func (r *TenantRegistry) List() []*TenantState {
	var out []*TenantState
	for i := range r.shards {
		for _, t := range *r.shards[i].m.Load() {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b *TenantState) int { return strings.Compare(a.name, b.name) })
	return out
}
