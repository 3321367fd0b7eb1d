package store

import (
	"fmt"
	"testing"
)

// TestLookupMany: lookupMany answers every key as lookup does, in the caller's order, whatever
// shards the keys fall in: present keys, absent ones and repeats, up to lookupManyMax keys at once.
func TestLookupMany(t *testing.T) {
	d := newGroupDirectory()
	const present = 3000
	for i := range present {
		e := &ObjectEntry{key: fmt.Sprintf("key-%05d", i)}
		if !d.publish(e) {
			t.Fatalf("publish %s", e.key)
		}
	}
	for _, n := range []int{0, 1, 7, 64, 1000, lookupManyMax} {
		keys := make([]string, n)
		for i := range keys {
			// Every third key is absent; the others repeat, so one call holds both cases.
			switch j := (i * 7919) % (present + present/2); {
			case i%3 == 0:
				keys[i] = fmt.Sprintf("absent-%d", i)
			default:
				keys[i] = fmt.Sprintf("key-%05d", j%present)
			}
		}
		out := make([]*ObjectEntry, n)
		d.lookupMany(keys, out, make([]uint8, n))
		for i, k := range keys {
			if want := d.lookup(k); out[i] != want {
				t.Fatalf("n=%d: lookupMany(%q) = %v, lookup = %v", n, k, out[i], want)
			}
		}
	}
}
