package store

import (
	"container/heap"
	"slices"
)

// ScanKeys returns one page of a tenant's keys in byte order: at most limit keys (limit >= 1) of
// the tenant's objects that are greater than after and satisfy match (nil = every key), the
// smallest such keys, and whether more such keys follow the last one returned. An object counts
// when it exists (written or still being written: the keys a PutStart would find taken); one being
// created or erased during the scan may or may not be seen, and so may a key created during it
// below the page's last key. An unknown tenant has no keys.
//
// The tenant has no sorted index, so each page visits every object of the tenant: one route
// shard at a time under that shard's read lock, held only to copy the shard's entries (the lock
// RemoveAll's prepare and the census take, a leaf). match and the selection run with no lock
// held, and the scan yields the processor between chunks, so a listing of a large tenant never
// holds up a write or a read of it for longer than one shard's copy. A page costs O(n log limit)
// for a tenant of n objects.
func (s *Store) ScanKeys(tenant, after string, limit int, match func(key string) bool) (keys []string, more bool) {
	if limit < 1 {
		return nil, false
	}
	t := s.tenants.Lookup(NormalizeTenant(tenant))
	if t == nil {
		return nil, false
	}
	// top keeps the limit+1 smallest keys seen, the largest of them at the root: the extra one
	// says whether more keys follow the page.
	top := &keyHeap{}
	t.dir.visit(t, nil, chunked(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			k := h.Entry.key
			if k <= after || h.Entry.Life() != Active {
				continue
			}
			if top.Len() == limit+1 && k >= (*top)[0] {
				continue
			}
			if match != nil && !match(k) {
				continue
			}
			heap.Push(top, k)
			if top.Len() > limit+1 {
				heap.Pop(top)
			}
		}
		return true
	}))
	keys = []string(*top)
	slices.Sort(keys)
	if len(keys) > limit {
		return keys[:limit:limit], true
	}
	return keys, false
}

// keyHeap is a max-heap of keys (container/heap), owned by one scan.
type keyHeap []string

func (h keyHeap) Len() int           { return len(h) }
func (h keyHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h keyHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *keyHeap) Pop() any {
	old := *h
	k := old[len(old)-1]
	*h = old[:len(old)-1]
	return k
}
