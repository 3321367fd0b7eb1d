package chaos

import (
	"fmt"
	"sync"
)

// keyRef is where a key lives in the model: its partition and its index there.
type keyRef struct {
	Part   int
	Member int
}

// keyspace is the drill's keys, partitioned for the model. The fixed part (tenants, singleton
// keys, groups) is built before the drill; probe keys are added as the probe writes them. Safe for
// concurrent use.
type keyspace struct {
	Tenants    []string
	Singletons map[string][]string // tenant -> singleton keys
	Groups     map[string][]string // tenant -> group ids

	mu    sync.Mutex // guards parts, keys, groups
	parts []*partition
	keys  map[string]keyRef // "tenant\x00key" -> ref
	group map[string]int    // "tenant\x00group" -> partition
}

// groupMembers is the number of keys per group (<= maxMembers).
const groupMembers = 3

func newKeyspace(tenants []string, singletons, groups int) *keyspace {
	ks := &keyspace{Tenants: tenants, Singletons: map[string][]string{}, Groups: map[string][]string{},
		keys: map[string]keyRef{}, group: map[string]int{}}
	for _, t := range tenants {
		for i := range singletons {
			k := fmt.Sprintf("k%02d", i)
			ks.Singletons[t] = append(ks.Singletons[t], k)
			ks.addLocked(&partition{Tenant: t, Keys: []string{k}})
		}
		for g := range groups {
			gid := fmt.Sprintf("g%d", g)
			ks.Groups[t] = append(ks.Groups[t], gid)
			p := &partition{Tenant: t, Group: gid}
			for m := range groupMembers {
				p.Keys = append(p.Keys, fmt.Sprintf("%s-m%d", gid, m))
			}
			ks.addLocked(p)
			ks.group[t+"\x00"+gid] = p.ID
		}
	}
	return ks
}

func (ks *keyspace) addLocked(p *partition) {
	p.ID = len(ks.parts)
	ks.parts = append(ks.parts, p)
	for i, k := range p.Keys {
		ks.keys[p.Tenant+"\x00"+k] = keyRef{Part: p.ID, Member: i}
	}
}

// addProbe registers a probe key (written once) and returns its ref.
func (ks *keyspace) addProbe(tenant, key string) keyRef {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	p := &partition{Tenant: tenant, Keys: []string{key}, IsProbe: true}
	ks.addLocked(p)
	return keyRef{Part: p.ID}
}

// ref returns the partition of a key.
func (ks *keyspace) ref(tenant, key string) keyRef {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	r, ok := ks.keys[tenant+"\x00"+key]
	if !ok {
		panic("chaos: unknown key " + tenant + "/" + key)
	}
	return r
}

// groupPart returns the partition of a group.
func (ks *keyspace) groupPart(tenant, group string) int {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.group[tenant+"\x00"+group]
}

// partitions returns a snapshot of every partition, indexed by id.
func (ks *keyspace) partitions() []*partition {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return append([]*partition(nil), ks.parts...)
}

// tenantKeys returns every key of tenant (singletons, group members, probe keys) in partition
// order, with their refs.
func (ks *keyspace) tenantKeys(tenant string) ([]string, []keyRef) {
	var keys []string
	var refs []keyRef
	for _, p := range ks.partitions() {
		if p.Tenant != tenant {
			continue
		}
		for i, k := range p.Keys {
			keys = append(keys, k)
			refs = append(refs, keyRef{Part: p.ID, Member: i})
		}
	}
	return keys, refs
}
