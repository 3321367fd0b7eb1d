package store

import "slices"

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
	var top keyHeap
	t.dir.visit(t, nil, chunked(0, func(hs []ObjectHandle) bool {
		for _, h := range hs {
			k := h.Entry.key
			if k <= after || h.Entry.Life() != Active {
				continue
			}
			full := len(top) == limit+1
			if full && k >= top[0] {
				continue
			}
			if match != nil && !match(k) {
				continue
			}
			if full {
				top.replaceMax(k)
			} else {
				top.push(k)
			}
		}
		return true
	}))
	keys = []string(top)
	slices.Sort(keys)
	if len(keys) > limit {
		return keys[:limit:limit], true
	}
	return keys, false
}

// keyHeap is a max-heap of keys, owned by one scan. Its sifts are written out (not
// container/heap's, whose calls through an interface cost a page's walk about half its time).
type keyHeap []string

// push adds k.
func (h *keyHeap) push(k string) {
	*h = append(*h, k)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] >= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// replaceMax replaces the largest key with k.
func (h keyHeap) replaceMax(k string) {
	h[0] = k
	for i := 0; ; {
		l, big := 2*i+1, i
		if l < len(h) && h[l] > h[big] {
			big = l
		}
		if r := l + 1; r < len(h) && h[r] > h[big] {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}
