package watch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"metad/store"
	"metad/store/alloc"
)

func ev(index uint64, pos uint32, tenant, key string) Event {
	return Event{Rev: Rev{index, pos}, Kind: Stored, Change: store.Change{Tenant: tenant, Key: key, After: &store.ObjectState{}}}
}

var now = func() <-chan struct{} { c := make(chan struct{}); close(c); return c }()

func keys(evs []Event) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("%v:%s/%s ", e.Rev, e.Change.Tenant, e.Change.Key)
	}
	return s
}

func TestWindowServesFromAnyRetainedRevision(t *testing.T) {
	w := NewWindow(Limits{Events: 100, Bytes: 1 << 20}, 0)
	w.Append(1, []Event{ev(1, 0, "a", "x"), ev(1, 1, "b", "y")})
	w.Advance(2)
	w.Append(3, []Event{ev(3, 0, "a", "z")})
	for _, tc := range []struct {
		start Rev
		f     Filter
		want  string
	}{
		{Rev{1, 0}, Filter{}, "1.0:a/x 1.1:b/y 3.0:a/z "},
		{Rev{1, 1}, Filter{}, "1.1:b/y 3.0:a/z "},
		{Rev{2, 0}, Filter{}, "3.0:a/z "},
		{Rev{1, 0}, Filter{Tenant: "a"}, "1.0:a/x 3.0:a/z "},
		{Rev{1, 0}, Filter{Prefix: "y"}, "1.1:b/y "},
		{Rev{1, 0}, Filter{Kinds: []Kind{Removed}}, ""},
	} {
		c, err := w.Subscribe(tc.start, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Next(context.Background(), nil, 10, now)
		if err != nil || keys(got) != tc.want {
			t.Fatalf("from %v %+v: %q %v, want %q", tc.start, tc.f, keys(got), err, tc.want)
		}
		if r := c.Reached(); r != (Rev{4, 0}) {
			t.Fatalf("reached %v, want 4.0 (everything applied was looked at)", r)
		}
		c.Close()
	}
	// A zero start is the next change.
	c, _ := w.Subscribe(Rev{}, Filter{})
	if got, _ := c.Next(context.Background(), nil, 10, now); len(got) != 0 {
		t.Fatalf("a zero start read old events: %s", keys(got))
	}
	w.Append(4, []Event{ev(4, 0, "a", "n")})
	if got, _ := c.Next(context.Background(), nil, 10, now); keys(got) != "4.0:a/n " {
		t.Fatalf("got %q", keys(got))
	}
}

func TestWindowBoundsAndCutOff(t *testing.T) {
	w := NewWindow(Limits{Events: 4, Bytes: 1 << 20}, 0)
	slow, _ := w.Subscribe(Rev{1, 0}, Filter{})
	for i := uint64(1); i <= 6; i++ {
		w.Append(i, []Event{ev(i, 0, "a", fmt.Sprint(i))})
	}
	if _, oldest := w.Applied(); oldest != (Rev{2, 1}) {
		t.Fatalf("oldest %v, want 2.1 after dropping two of six", oldest)
	}
	var ce *CompactedError
	if _, err := w.Subscribe(Rev{2, 0}, Filter{}); !errors.As(err, &ce) || ce.Oldest != (Rev{2, 1}) {
		t.Fatalf("start 2.0: %v, want compacted naming 2.1", err)
	}
	var fb *FellBehindError
	if _, err := slow.Next(context.Background(), nil, 10, now); !errors.As(err, &fb) || fb.Resume != (Rev{1, 0}) {
		t.Fatalf("slow cursor: %v, want fell behind at 1.0", err)
	}
	// The byte bound holds as well.
	one := ev(1, 0, "a", "1")
	b := NewWindow(Limits{Events: 1000, Bytes: 3 * one.size()}, 0)
	for i := uint64(1); i <= 10; i++ {
		b.Append(i, []Event{ev(i, 0, "a", "1")})
	}
	if b.n != 3 {
		t.Fatalf("%d events retained, want 3 by bytes", b.n)
	}
}

func TestWindowWaitsAndResets(t *testing.T) {
	w := NewWindow(DefaultLimits, 10)
	c, err := w.Subscribe(Rev{}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		evs, err := c.Next(context.Background(), nil, 10, nil)
		got <- fmt.Sprint(keys(evs), err)
	}()
	w.Append(11, []Event{ev(11, 0, "a", "k")})
	select {
	case s := <-got:
		if s != "11.0:a/k <nil>" {
			t.Fatalf("woke with %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting cursor was not woken by an append")
	}
	w.Reset(20)
	var re *ResetError
	if _, err := c.Next(context.Background(), nil, 10, now); !errors.As(err, &re) || re.Index != 20 {
		t.Fatalf("after reset: %v", err)
	}
	// A restored file's index may be older than what was applied: nothing up to either is served.
	w.Reset(5)
	if applied, oldest := w.Applied(); applied != 20 || oldest != (Rev{21, 0}) {
		t.Fatalf("reset to an older index: applied %d oldest %v, want 20 and 21.0", applied, oldest)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c2, _ := w.Subscribe(Rev{}, Filter{})
	if _, err := c2.Next(ctx, nil, 10, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	w.Close()
	if _, err := c2.Next(context.Background(), nil, 10, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

// TestWindowSettlesAfterAReset: a start taken before a restore is never served across it, even
// when the restore's own index is unknown until the next entry applies.
func TestWindowSettlesAfterAReset(t *testing.T) {
	w := NewWindow(DefaultLimits, 0)
	w.Advance(25)
	w.Reset(12) // a restored file older than the live state
	var ce *CompactedError
	if _, err := w.Subscribe(Rev{26, 0}, Filter{}); !errors.As(err, &ce) { // the next revision as the old state saw it
		t.Fatalf("an explicit start before the window settled: %v, want compacted", err)
	}
	next, err := w.Subscribe(Rev{}, Filter{}) // the next change is served
	if err != nil {
		t.Fatal(err)
	}
	w.Append(27, []Event{ev(27, 0, "a", "k")}) // the restore took index 26
	if got, err := next.Next(context.Background(), nil, 10, now); err != nil || keys(got) != "27.0:a/k " {
		t.Fatalf("the next change after a reset: %q %v", keys(got), err)
	}
	if _, err := w.Subscribe(Rev{26, 0}, Filter{}); !errors.As(err, &ce) || ce.Oldest != (Rev{27, 0}) {
		t.Fatalf("start 26.0 after settling: %v, want compacted naming 27.0", err)
	}
	c, err := w.Subscribe(Rev{27, 0}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Next(context.Background(), nil, 10, now); err != nil || keys(got) != "27.0:a/k " {
		t.Fatalf("from 27.0: %q %v", keys(got), err)
	}
}

// TestFilterOfGroupsAndSegments: a tenant filter keeps that tenant's group events and drops the
// segments (which belong to none); a prefix matches group names and drops the segments.
func TestFilterOfGroupsAndSegments(t *testing.T) {
	seg := &alloc.Segment{Name: "s"}
	evs := []Event{
		{Rev: Rev{1, 0}, Kind: SegmentMounted, Change: store.Change{Subject: store.SegmentChange, Segment: seg}},
		{Rev: Rev{1, 1}, Kind: GroupCreated, Change: store.Change{Subject: store.GroupChange, Tenant: "a", Group: "ga"}},
		{Rev: Rev{1, 2}, Kind: GroupCreated, Change: store.Change{Subject: store.GroupChange, Tenant: "b", Group: "gb"}},
		ev(1, 3, "a", "ka"),
	}
	w := NewWindow(Limits{Events: 100, Bytes: 1 << 20}, 0)
	w.Append(1, evs)
	name := func(evs []Event) string {
		s := ""
		for _, e := range evs {
			s += fmt.Sprintf("%v:%v ", e.Rev, e.Kind)
		}
		return s
	}
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "1.0:SEGMENT_MOUNTED 1.1:GROUP_CREATED 1.2:GROUP_CREATED 1.3:STORED "},
		{Filter{Tenant: "a"}, "1.1:GROUP_CREATED 1.3:STORED "},
		{Filter{Prefix: "g"}, "1.1:GROUP_CREATED 1.2:GROUP_CREATED "},
		{Filter{Kinds: []Kind{SegmentMounted, SegmentUnmounted}}, "1.0:SEGMENT_MOUNTED "},
	} {
		c, err := w.Subscribe(Rev{1, 0}, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Next(context.Background(), nil, 10, now)
		if err != nil || name(got) != tc.want {
			t.Fatalf("%+v: %q %v, want %q", tc.f, name(got), err, tc.want)
		}
		c.Close()
	}
}
