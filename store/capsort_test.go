package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestKeyOrderIsKeyOrder: keyOrder gives the order of a plain key sort, for keys drawn from small
// alphabets (so that windows tie and one key is often a prefix of another), with zero and 0xff
// bytes, under a common prefix of any length, and split over one to five workers (whose sorted
// parts are merged); the objects stay where they were.
func TestKeyOrderIsKeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringOfN(rapid.SampledFrom([]rune{'m', '/', 'x'}), 0, 20, -1).Draw(t, "prefix")
		alphabet := rapid.SampledFrom([]byte{0, 1, 'a', 'b', 0xfe, 0xff})
		keys := rapid.SliceOfDistinct(rapid.Custom(func(t *rapid.T) string {
			return prefix + string(rapid.SliceOfN(alphabet, 0, 12).Draw(t, "suffix"))
		}), func(k string) string { return k }).Draw(t, "keys")
		objs := make([]CapturedObject, len(keys))
		for i, k := range keys {
			objs[i] = CapturedObject{Key: k}
		}
		order := keyOrder(objs, rapid.IntRange(1, max(1, min(5, len(objs)))).Draw(t, "workers"))
		want := slices.Clone(keys)
		slices.Sort(want)
		if len(order) != len(want) {
			t.Fatalf("%d indexes for %d objects", len(order), len(want))
		}
		for j, i := range order {
			if objs[i].Key != want[j] {
				t.Fatalf("position %d is object %d, %q; want %q", j, i, objs[i].Key, want[j])
			}
		}
		for i, o := range objs {
			if o.Key != keys[i] {
				t.Fatalf("object %d moved", i)
			}
		}
	})
}

// TestKeyOrderLongSharedPrefix: keys that differ only after 8 bytes of a common prefix, a
// tenant's worth of them, order as a key sort does, through KeyOrder's own choice of workers.
func TestKeyOrderLongSharedPrefix(t *testing.T) {
	tc := &TenantCapture{}
	for i := range 5 * minSortPart {
		tc.Objects = append(tc.Objects, CapturedObject{Key: fmt.Sprintf("model-7b/layer-%02d/%016x", i%32, uint64(i)*0x9e3779b97f4a7c15)})
	}
	order := tc.KeyOrder()
	if !slices.IsSortedFunc(order, func(a, b int) int { return strings.Compare(tc.Objects[a].Key, tc.Objects[b].Key) }) {
		t.Fatal("not in key order")
	}
	seen := make([]bool, len(order))
	for _, i := range order {
		if seen[i] {
			t.Fatalf("object %d twice", i)
		}
		seen[i] = true
	}
}

// BenchmarkKeyOrder: KeyOrder of every tenant of the 1M-object bench fixture's capture (4 tenants,
// 40-byte hex keys, in the directory's order), against the plain key sort of the objects it
// replaced (baseline), in the same run. ns/op is one pass over every tenant.
func BenchmarkKeyOrder(b *testing.B) {
	f := singletonFixture(b)
	c := f.s.Capture()
	b.Run("metad", func(b *testing.B) {
		for b.Loop() {
			for i := range c.Tenants {
				c.Tenants[i].KeyOrder()
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		objs := make([][]CapturedObject, len(c.Tenants))
		for b.Loop() {
			b.StopTimer()
			for i, t := range c.Tenants {
				objs[i] = slices.Clone(t.Objects)
			}
			b.StartTimer()
			for i := range objs {
				slices.SortFunc(objs[i], func(a, b CapturedObject) int { return strings.Compare(a.Key, b.Key) })
			}
		}
	})
}
