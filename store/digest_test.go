package store

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"metad/store/alloc"
)

// digestFixture is a capture with every field of every element set: two segments, two tenants,
// an object with two replicas, a task and an explicit group, and a plain one.
func digestFixture() *Capture {
	seg := func(b byte) alloc.SegmentInfo {
		return alloc.SegmentInfo{Segment: alloc.Segment{ID: alloc.ID{b, 1}, Name: "s", Base: 1 << 32, Size: 1 << 30,
			Endpoint: "e:1", Tier: alloc.TierLocalDisk, Owner: alloc.ID{b, 2}, Offload: true},
			Used: 8192, FreeSpans: 2, Closing: true, UnmountAt: 5e9}
	}
	full := &ObjectState{ID: 3, Version: 4, Size: 4000, Writer: alloc.ID{9}, PutStart: 1e9, SoftPinTTL: 2e9,
		SoftPinDeadline: 3e9, DataType: 5, HardPin: true,
		Replicas: []Replica{
			{ID: 1, Extent: alloc.Extent{Segment: alloc.ID{1, 1}, Offset: 0, Size: 4096}, Tier: alloc.TierMemory, Status: Complete},
			{ID: 2, Extent: alloc.Extent{Segment: alloc.ID{2, 1}, Offset: 4096, Size: 4096}, Tier: alloc.TierLocalDisk, Status: Processing},
		},
		Task: &ReplicaTask{Kind: TaskMove, Client: alloc.ID{7}, Started: 4e9, Source: 1, Targets: []uint64{2}}}
	plain := &ObjectState{ID: 4, Version: 1, Size: 10, Replicas: []Replica{{ID: 3, Extent: alloc.Extent{Segment: alloc.ID{1, 1}, Offset: 4096, Size: 4096}}}}
	g := &GroupEntry{name: "grp", id: 6}
	return &Capture{
		Segments: []alloc.SegmentInfo{seg(1), seg(2)},
		Tenants: []TenantCapture{
			{Name: "a", Instance: 1, Requested: 1 << 20, NextObjectID: 5, NextGroupID: 7, NextReplicaID: 4, Groups: 1,
				Objects: []CapturedObject{{Key: "full-object-key", State: full, group: g}, {Key: "p", State: plain}}},
			{Name: "b", Instance: 2, Objects: []CapturedObject{{Key: "p", State: plain}}},
		},
	}
}

// cloneState is a deep copy of st (the test mutates copies; states are immutable).
func cloneState(st *ObjectState) *ObjectState {
	c := *st
	c.Replicas = slices.Clone(st.Replicas)
	if st.Task != nil {
		t := *st.Task
		t.Targets = slices.Clone(st.Task.Targets)
		c.Task = &t
	}
	return &c
}

// leaves calls visit with every settable scalar reachable from v (struct fields in order, slices'
// elements, pointers' targets), by a path name.
func leaves(v reflect.Value, path string, visit func(string, reflect.Value)) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				leaves(v.Field(i), path+"."+v.Type().Field(i).Name, visit)
			}
		}
	case reflect.Slice:
		visit(path+"(len)", v)
		for i := range v.Len() {
			leaves(v.Index(i), fmt.Sprintf("%s[%d]", path, i), visit)
		}
	case reflect.Pointer:
		visit(path+"(nil)", v)
		if !v.IsNil() {
			leaves(v.Elem(), path, visit)
		}
	default:
		visit(path, v)
	}
}

// mutate changes the leaf v to another value of its type.
func mutate(t *testing.T, path string, v reflect.Value) {
	switch v.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Array: // alloc.ID
		v.Index(0).SetUint(v.Index(0).Uint() ^ 0x80)
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	case reflect.Pointer:
		v.Set(reflect.Zero(v.Type()))
	default:
		t.Fatalf("%s: no mutation for kind %s", path, v.Kind())
	}
}

// TestDigestCoversEveryField: changing any field of an object's state (replicas and task
// included), its key or group, a tenant's fields or a segment's changes the digest, but for the
// fields the digest leaves out by design. A field added to any of these types is covered by this
// test, so it must be hashed or listed here.
func TestDigestCoversEveryField(t *testing.T) {
	base := digestFixture().Digest()
	if again := digestFixture().Digest(); again != base {
		t.Fatal("the same capture gives two digests")
	}
	leftOut := map[string]bool{
		"segment.FreeSpans": true, // derived from the allocations
		"tenant.Groups":     true, // derived from the objects' groups
	}
	check := func(path string, c *Capture) {
		t.Helper()
		if d := c.Digest(); d == base && !leftOut[path] {
			t.Errorf("changing %s leaves the digest as it was", path)
		} else if d != base && leftOut[path] {
			t.Errorf("%s is listed as left out, but changes the digest", path)
		}
	}

	// Each leaf of the full object's state, the n-th on a fresh copy.
	var paths []string
	leaves(reflect.ValueOf(cloneState(digestFixture().Tenants[0].Objects[0].State)).Elem(), "state", func(p string, _ reflect.Value) {
		paths = append(paths, p)
	})
	for n, path := range paths {
		c := digestFixture()
		st := cloneState(c.Tenants[0].Objects[0].State)
		i := 0
		leaves(reflect.ValueOf(st).Elem(), "state", func(p string, v reflect.Value) {
			if i == n {
				mutate(t, p, v)
			}
			i++
		})
		c.Tenants[0].Objects[0].State = st
		check(path, c)
	}
	if len(paths) < 25 {
		t.Fatalf("only %d leaves of an object state: %v", len(paths), paths)
	}

	for i := range reflect.TypeFor[TenantCapture]().NumField() {
		c := digestFixture()
		f := reflect.ValueOf(&c.Tenants[0]).Elem().Field(i)
		name := "tenant." + reflect.TypeFor[TenantCapture]().Field(i).Name
		if f.Kind() == reflect.Slice { // Objects: one dropped
			f.Set(f.Slice(0, 1))
		} else {
			mutate(t, name, f)
		}
		check(name, c)
	}
	var segPaths []string
	leaves(reflect.ValueOf(&digestFixture().Segments[0]).Elem(), "segment", func(p string, _ reflect.Value) { segPaths = append(segPaths, p) })
	for n, path := range segPaths {
		c := digestFixture()
		i := 0
		leaves(reflect.ValueOf(&c.Segments[0]).Elem(), "segment", func(p string, v reflect.Value) {
			if i == n {
				mutate(t, p, v)
			}
			i++
		})
		check(segmentPath(path), c)
	}

	c := digestFixture()
	c.Tenants[0].Objects[0].Key = "other"
	check("key", c)
	c = digestFixture()
	c.Tenants[0].Objects[0].group = &GroupEntry{name: "grp2", id: 6}
	check("group name", c)
	c = digestFixture()
	c.Tenants[0].Objects[0].group = nil
	check("group", c)
	c = digestFixture()
	c.Epoch++
	c.NextInstance++
	if c.Digest() != base {
		t.Error("the state epoch or the next instance id changes the digest")
	}
}

// segmentPath names a segment leaf as the left-out list does (segment.Segment.ID -> segment.ID).
func segmentPath(path string) string {
	const embedded = "segment.Segment."
	if len(path) > len(embedded) && path[:len(embedded)] == embedded {
		return "segment." + path[len(embedded):]
	}
	return path
}

// TestDigestIgnoresOrder: the digest of a capture does not depend on the order of its segments,
// tenants or objects; an object moved to another tenant, or two objects' keys swapped, change it.
func TestDigestIgnoresOrder(t *testing.T) {
	base := digestFixture().Digest()
	c := digestFixture()
	slices.Reverse(c.Segments)
	slices.Reverse(c.Tenants)
	slices.Reverse(c.Tenants[1].Objects)
	if c.Digest() != base {
		t.Fatal("reordering the capture changed its digest")
	}

	c = digestFixture()
	moved := c.Tenants[0].Objects[1]
	c.Tenants[0].Objects = c.Tenants[0].Objects[:1]
	c.Tenants[1].Objects = append(c.Tenants[1].Objects, CapturedObject{Key: "q", State: moved.State})
	d := digestFixture()
	d.Tenants[0].Objects = d.Tenants[0].Objects[:1]
	d.Tenants[0].Objects = append(d.Tenants[0].Objects, CapturedObject{Key: "q", State: moved.State})
	if c.Digest() == d.Digest() {
		t.Fatal("an object in one tenant or the other gives one digest")
	}

	c = digestFixture()
	o := c.Tenants[0].Objects
	o[0].Key, o[1].Key = o[1].Key, o[0].Key
	if c.Digest() == base {
		t.Fatal("swapping two objects' keys left the digest as it was")
	}
}

// TestDigestAcrossUnits: a capture of more objects than one goroutine's unit has one digest in
// any order, and a change in a later unit changes it.
func TestDigestAcrossUnits(t *testing.T) {
	c := digestFixture()
	var objs []CapturedObject
	for i := range 3*digestUnit + 17 {
		st := cloneState(c.Tenants[1].Objects[0].State)
		st.ID = uint64(i + 1)
		objs = append(objs, CapturedObject{Key: fmt.Sprintf("k%07d", i), State: st})
	}
	c.Tenants[1].Objects = objs
	d := c.Digest()
	c.Tenants[1].Objects = slices.Clone(objs)
	slices.Reverse(c.Tenants[1].Objects)
	if c.Digest() != d {
		t.Fatal("the digest of reversed objects across units differs")
	}
	c.Tenants[1].Objects[digestUnit+3].State = cloneState(c.Tenants[1].Objects[digestUnit+3].State)
	c.Tenants[1].Objects[digestUnit+3].State.Version++
	if c.Digest() == d {
		t.Fatal("one object's change in a later unit left the digest as it was")
	}
}
