package store

import (
	"testing"

	"metad/store/alloc"
)

// TestCloseSegment: the graceful unmount in the store. Only the owner may start it; a segment that
// holds a replica stops taking allocations at once (preferred or not) while its objects stay
// readable; a second call keeps the earlier deadline; UnmountClosed changes nothing before the
// deadline or for another deadline, and at the deadline unmounts the segment as UnmountSegment
// does (replicas dropped, an object left with none erased, quota released).
func TestCloseSegment(t *testing.T) {
	s := newTestStore(t)
	closing := mount(t, s, 1, alloc.TierMemory, 1<<20)
	open := mount(t, s, 2, alloc.TierMemory, 1<<20)
	r := putReq("", "only-there", "", 100)
	r.Config.Preferred = []alloc.ID{closing}
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: "only-there"}); err != nil {
		t.Fatal(err)
	}
	r = putReq("", "both", "", 100)
	r.Config.Memory, r.Config.Preferred = 2, []alloc.ID{closing, open}
	if _, err := s.PutStart(sec, 1, r); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEnd(sec, PutEndRequest{Client: client1, Key: "both"}); err != nil {
		t.Fatal(err)
	}

	_, err := s.CloseSegment(client2, closing, 100*sec)
	wantReason(t, err, SegmentOwnedByOtherClient)
	_, err = s.CloseSegment(client1, segID(9), 100*sec)
	wantReason(t, err, SegmentNotFound)
	if info, _ := s.Segments().Get(closing); info.Closing {
		t.Fatal("a refused close closed the segment")
	}

	res, err := s.CloseSegment(client1, closing, 100*sec)
	if err != nil || res.Segments != 0 || res.UnmountAt != 100*sec {
		t.Fatalf("close = %+v %v; want closing until 100 s", res, err)
	}
	if res, err := s.CloseSegment(client1, closing, 200*sec); err != nil || res.UnmountAt != 100*sec {
		t.Fatalf("second close with a later deadline = %+v %v; want the first deadline kept", res, err)
	}

	// No new allocation lands on it, even when preferred; its objects stay readable.
	for i := range 20 {
		r := putReq("", "new"+string(rune('a'+i)), "", 100)
		r.Config.Memory, r.Config.Preferred = 2, []alloc.ID{closing}
		reps, err := s.PutStart(2*sec, uint64(i), r)
		if err != nil {
			t.Fatal(err)
		}
		for _, rep := range reps {
			if rep.Extent.Segment == closing {
				t.Fatalf("put %d placed a replica on the closing segment", i)
			}
		}
	}
	for _, key := range []string{"only-there", "both"} {
		if g, err := s.Get(3*sec, "", key); err != nil || len(g.Replicas) == 0 {
			t.Fatalf("Get %q while closing: %+v %v", key, g, err)
		}
	}
	if c, _ := s.Segments().Allocatable(alloc.TierMemory); c != 1<<20 {
		t.Fatalf("allocatable capacity %d, want only the open segment's", c)
	}

	if res := s.UnmountClosed(closing, 100*sec, 99*sec); res.Segments != 0 {
		t.Fatalf("UnmountClosed before the deadline = %+v; want nothing", res)
	}
	if res := s.UnmountClosed(closing, 200*sec, 300*sec); res.Segments != 0 {
		t.Fatalf("UnmountClosed for another deadline = %+v; want nothing", res)
	}
	res = s.UnmountClosed(closing, 100*sec, 100*sec)
	if res.Segments != 1 || res.Replicas != 2 || res.Erased != 1 {
		t.Fatalf("UnmountClosed at the deadline = %+v; want 1 segment, 2 replicas, 1 object erased", res)
	}
	if _, ok := s.Segments().Get(closing); ok {
		t.Fatal("segment still mounted")
	}
	if _, err := s.Get(4*sec, "", "only-there"); ReasonOf(err) != ObjectNotFound {
		t.Fatalf("object whose only replica was on the segment: %v, want OBJECT_NOT_FOUND", err)
	}
	if g, err := s.Get(4*sec, "", "both"); err != nil || len(g.Replicas) != 1 || g.Replicas[0].Extent.Segment != open {
		t.Fatalf("survivor: %+v %v", g, err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseSegmentEmpty: a segment that holds no replica is unmounted at once; one that empties
// while closing is unmounted by UnmountClosed before its deadline.
func TestCloseSegmentEmpty(t *testing.T) {
	s := newTestStore(t)
	empty := mount(t, s, 1, alloc.TierMemory, 1<<20)
	res, err := s.CloseSegment(client1, empty, 100*sec)
	if err != nil || res.Segments != 1 || res.UnmountAt != 0 {
		t.Fatalf("close of an empty segment = %+v %v; want unmounted at once", res, err)
	}
	if _, ok := s.Segments().Get(empty); ok {
		t.Fatal("empty segment still mounted")
	}

	seg := mount(t, s, 2, alloc.TierMemory, 1<<20)
	if _, err := s.PutStart(sec, 1, putReq("", "k", "", 100)); err != nil {
		t.Fatal(err)
	}
	if res, err := s.CloseSegment(client1, seg, 100*sec); err != nil || res.UnmountAt != 100*sec {
		t.Fatalf("close of a segment with a write in progress = %+v %v; want closing", res, err)
	}
	if res := s.UnmountClosed(seg, 100*sec, 2*sec); res.Segments != 0 {
		t.Fatalf("UnmountClosed of a segment still holding a replica = %+v; want nothing", res)
	}
	if err := s.PutRevoke(3*sec, PutEndRequest{Client: client1, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if res := s.UnmountClosed(seg, 100*sec, 4*sec); res.Segments != 1 || res.Replicas != 0 {
		t.Fatalf("UnmountClosed of an emptied segment before its deadline = %+v; want it unmounted", res)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
