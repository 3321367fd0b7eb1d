package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestSortObjectsIsKeyOrder: sortObjects gives the order of a plain key sort, with each object's
// state still its own, for keys drawn from small alphabets (so that windows tie and one key is
// often a prefix of another), with zero and 0xff bytes, under a common prefix of any length, and
// split over one to five workers (whose sorted parts are merged).
func TestSortObjectsIsKeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.StringOfN(rapid.SampledFrom([]rune{'m', '/', 'x'}), 0, 20, -1).Draw(t, "prefix")
		alphabet := rapid.SampledFrom([]byte{0, 1, 'a', 'b', 0xfe, 0xff})
		keys := rapid.SliceOfDistinct(rapid.Custom(func(t *rapid.T) string {
			return prefix + string(rapid.SliceOfN(alphabet, 0, 12).Draw(t, "suffix"))
		}), func(k string) string { return k }).Draw(t, "keys")
		objs := make([]CapturedObject, len(keys))
		for i, k := range keys {
			objs[i] = CapturedObject{Key: k, State: &ObjectState{Size: uint64(i)}}
		}
		var refs []sortRef
		sortParts(objs, &refs, rapid.IntRange(1, max(1, min(5, len(objs)))).Draw(t, "workers"))
		want := slices.Clone(keys)
		slices.Sort(want)
		for i, o := range objs {
			if o.Key != want[i] {
				t.Fatalf("position %d holds %q, want %q", i, o.Key, want[i])
			}
			if keys[o.State.Size] != o.Key {
				t.Fatalf("key %q carries the state of %q", o.Key, keys[o.State.Size])
			}
		}
	})
}

// TestSortObjectsLongSharedPrefix: keys that differ only after 8 bytes of a common prefix, and a
// tenant's worth of them, sort as a key sort does.
func TestSortObjectsLongSharedPrefix(t *testing.T) {
	var objs []CapturedObject
	for i := range 5000 {
		objs = append(objs, CapturedObject{Key: fmt.Sprintf("model-7b/layer-%02d/%016x", i%32, uint64(i)*0x9e3779b97f4a7c15)})
	}
	want := make([]string, len(objs))
	for i, o := range objs {
		want[i] = o.Key
	}
	slices.Sort(want)
	var refs []sortRef
	sortParts(objs, &refs, 3)
	if !slices.EqualFunc(objs, want, func(o CapturedObject, k string) bool { return o.Key == k }) {
		t.Fatal("not in key order")
	}
	if !slices.IsSortedFunc(objs, func(a, b CapturedObject) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatal("not sorted")
	}
}

// BenchmarkCaptureSort: Capture.Sort of the 1M-object bench fixture's capture (4 tenants, 40-byte
// hex keys, in the directory's order), against the plain key sort it replaced (baseline), in the
// same run. ns/op is one sort of every tenant.
func BenchmarkCaptureSort(b *testing.B) {
	f := singletonFixture(b)
	c := f.s.Capture()
	unsorted := make([][]CapturedObject, len(c.Tenants))
	for i, t := range c.Tenants {
		unsorted[i] = slices.Clone(t.Objects)
	}
	reset := func() {
		for i := range c.Tenants {
			copy(c.Tenants[i].Objects, unsorted[i])
		}
	}
	b.Run("metad", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			reset()
			b.StartTimer()
			c.Sort()
		}
	})
	b.Run("baseline", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			reset()
			b.StartTimer()
			for i := range c.Tenants {
				slices.SortFunc(c.Tenants[i].Objects, func(a, b CapturedObject) int { return strings.Compare(a.Key, b.Key) })
			}
		}
	})
}
