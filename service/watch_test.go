package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/watch"
)

// watchAll reads a watch's responses until one comes with no events (the stream caught up: the
// progress interval passed with nothing new) and returns the events, rendered.
func watchAll(t *testing.T, w *service.Watcher) (evs []string, last *metadv1.WatchResponse) {
	t.Helper()
	for {
		resp, err := w.Next(tctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetEvents() {
			evs = append(evs, fmt.Sprintf("%d.%d %s %s/%s %d", e.GetRevision().GetIndex(), e.GetRevision().GetPosition(),
				e.GetKind(), e.GetTenant(), e.GetKey(), len(e.GetReplicas())))
		}
		if len(resp.GetEvents()) == 0 {
			return evs, resp
		}
	}
}

func TestWatchSendsEachChangeOnce(t *testing.T) {
	h := newHarness(t, servicetest.NewClock())
	h.b.MustApply(t, servicetest.RegisterTenant("acme"))
	h.mount(t, clientA, segA)
	ctx := tctx(t)
	w, err := h.svc.Watch(ctx, &metadv1.WatchRequest{ProgressIntervalMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	opened := w.Opened()
	h.put(t, "default", "k1", 100)
	h.put(t, "acme", "other", 100) // another tenant: not in this stream
	h.put(t, "default", "k2", 100)
	if _, err := h.svc.Remove(ctx, &metadv1.RemoveRequest{Key: []byte("k1")}); err != nil {
		t.Fatal(err)
	}
	evs, last := watchAll(t, w)
	if len(evs) != 3 || evs[0][len(evs[0])-len("STORED default/k1 1"):] != "STORED default/k1 1" ||
		!endsWith(evs[1], "STORED default/k2 1") || !endsWith(evs[2], "REMOVED default/k1 0") {
		t.Fatalf("events %q", evs)
	}
	if last.GetAppliedIndex() == 0 || last.GetNext().GetIndex() != last.GetAppliedIndex()+1 {
		t.Fatalf("progress %v: next should follow the applied index", last)
	}
	// Resume from the stream's first response: the same events again, nothing else.
	again, err := h.svc.Watch(ctx, &metadv1.WatchRequest{Start: opened.GetNext(), ProgressIntervalMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if evs2, _ := watchAll(t, again); fmt.Sprint(evs2) != fmt.Sprint(evs) {
		t.Fatalf("resumed from %v: %q, want %q", opened.GetNext(), evs2, evs)
	}
	// A prefix and a kind filter.
	pf, err := h.svc.Watch(ctx, &metadv1.WatchRequest{Start: opened.GetNext(), KeyPrefix: []byte("k1"),
		Kinds: []metadv1.WatchEventKind{metadv1.WatchEventKind_WATCH_EVENT_KIND_REMOVED}, ProgressIntervalMs: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if evs3, _ := watchAll(t, pf); len(evs3) != 1 || !endsWith(evs3[0], "REMOVED default/k1 0") {
		t.Fatalf("filtered: %q", evs3)
	}
	// Bad input changes nothing and says what is wrong.
	_, err = h.svc.Watch(ctx, &metadv1.WatchRequest{Tenant: "acme", AllTenants: true})
	wantInvalid(t, err, "tenant")
	_, err = h.svc.Watch(ctx, &metadv1.WatchRequest{Kinds: []metadv1.WatchEventKind{99}})
	wantInvalid(t, err, "kinds")
}

func endsWith(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

func TestWatchOfATenantIsItsOwn(t *testing.T) {
	h := newHarness(t, servicetest.NewClock())
	h.b.MustApply(t, servicetest.RegisterTenant("acme"))
	h.b.MustApply(t, servicetest.RegisterTenant("rival"))
	h.b.MustApply(t, servicetest.Grant("acme-app", "tenant:acme"))
	h.b.MustApply(t, servicetest.Grant("ops", "reader"))
	h.mount(t, clientA, segA)
	ctx := tctx(t)
	app := service.Caller{Principal: "acme-app"}
	watchAs := func(c service.Caller, req *metadv1.WatchRequest) (*service.Watcher, error) {
		req.ProgressIntervalMs = 100
		return authed(ctx, h, c, metadv1.Metadata_Watch_FullMethodName, req, h.svc.Watch)
	}
	own, err := watchAs(app, &metadv1.WatchRequest{}) // "" is its one tenant
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if _, err := watchAs(app, &metadv1.WatchRequest{Tenant: "rival"}); !errors.Is(err, service.ErrPermissionDenied) {
		t.Fatalf("acme-app watching rival: %v", err)
	}
	if _, err := watchAs(app, &metadv1.WatchRequest{AllTenants: true}); !errors.Is(err, service.ErrPermissionDenied) {
		t.Fatalf("acme-app watching every tenant: %v", err)
	}
	all, err := watchAs(service.Caller{Principal: "ops"}, &metadv1.WatchRequest{AllTenants: true})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	h.put(t, "rival", "secret", 10)
	h.put(t, "acme", "mine", 10)
	if evs, _ := watchAll(t, own); len(evs) != 1 || !endsWith(evs[0], "STORED acme/mine 1") {
		t.Fatalf("acme-app saw %q", evs)
	}
	if evs, _ := watchAll(t, all); len(evs) != 2 {
		t.Fatalf("the reader of every tenant saw %q", evs)
	}
}

func TestWatchFromBeforeTheWindow(t *testing.T) {
	h := newHarness(t, servicetest.NewClock())
	h.mount(t, clientA, segA)
	h.put(t, "default", "k1", 10)
	applied, _ := h.b.FSM().Window().Applied()
	h.b.FSM().Window().Reset(applied) // as a restore does
	_, err := h.svc.Watch(tctx(t), &metadv1.WatchRequest{Start: &metadv1.Revision{Index: 1}})
	var ce *watch.CompactedError
	if !errors.As(err, &ce) || ce.Oldest.Index != applied+1 {
		t.Fatalf("start 1 after the window moved to %d: %v", applied+1, err)
	}
	// An open stream is told when the state is replaced under it.
	w, err := h.svc.Watch(tctx(t), &metadv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h.b.FSM().Window().Reset(applied + 5)
	ctx, cancel := context.WithTimeout(tctx(t), 10*time.Second)
	defer cancel()
	var re *watch.ResetError
	if _, err := w.Next(ctx); !errors.As(err, &re) {
		t.Fatalf("after a reset: %v", err)
	}
}

// TestWatchSlowSubscriberIsCutOff: a watcher that reads nothing while more changes apply than the
// window holds never holds the writes up, and its next read ends the stream with FellBehindError
// naming where it had reached.
func TestWatchSlowSubscriberIsCutOff(t *testing.T) {
	h := newHarness(t, servicetest.NewClock())
	h.mount(t, clientA, segA)
	applied, _ := h.b.FSM().Window().Applied()
	h.b.FSM().UseWindow(watch.NewWindow(watch.Limits{Events: 16, Bytes: 1 << 20}, applied))
	w, err := h.svc.Watch(tctx(t), &metadv1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := w.Opened().GetNext()
	for i := range 64 { // four windows' worth, every write answered while the watcher reads nothing
		h.put(t, "default", fmt.Sprintf("k%02d", i), 64)
	}
	var fb *watch.FellBehindError
	if _, err := w.Next(tctx(t)); !errors.As(err, &fb) || fb.Resume.Index != start.GetIndex() {
		t.Fatalf("a stalled watcher's next read: %v, want fell behind at %v", err, start)
	}
}

// TestWatchWireIsProtoEncoding: NextWire's bytes (shared event encodings, the stamp appended by
// hand) are what proto.Marshal makes of the response they decode to, for object, group and
// segment events; two streams get the same bytes for the same event.
func TestWatchWireIsProtoEncoding(t *testing.T) {
	h := newHarness(t, servicetest.NewClock())
	ctx := tctx(t)
	var ws []*service.Watcher
	for range 2 {
		w, err := h.svc.Watch(ctx, &metadv1.WatchRequest{AllTenants: true, ProgressIntervalMs: 100})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	h.mount(t, clientA, segA)
	h.put(t, "default", "k1", 100)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{ClientId: idb(clientA), Key: []byte("k2"), Group: []byte("g"), Size: 100}); err != nil {
		t.Fatal(err)
	}
	var first [][]byte
	for i, w := range ws {
		var events []*metadv1.WatchEvent
		for len(events) < 3 {
			b, err := w.NextWire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			resp := &metadv1.WatchResponse{}
			if err := proto.Unmarshal(b, resp); err != nil {
				t.Fatal(err)
			}
			if again, err := (proto.MarshalOptions{Deterministic: true}).Marshal(resp); err != nil || !bytes.Equal(again, b) {
				t.Fatalf("the wire bytes are not the response's encoding:\n%x\n%x (%v)", b, again, err)
			}
			if resp.GetNext().GetIndex() == 0 || resp.GetAppliedIndex() == 0 || resp.GetCommitIndex() == 0 {
				t.Fatalf("stamp missing: %v", resp)
			}
			events = append(events, resp.GetEvents()...)
		}
		kinds := fmt.Sprintf("%v %v %v", events[0].GetKind(), events[1].GetKind(), events[2].GetKind())
		if kinds != "WATCH_EVENT_KIND_SEGMENT_MOUNTED WATCH_EVENT_KIND_STORED WATCH_EVENT_KIND_GROUP_CREATED" ||
			events[0].GetSegment().GetEndpoint() == "" || events[0].GetTimeUnixNano() == 0 || string(events[2].GetGroup()) != "g" {
			t.Fatalf("events: %v", events)
		}
		for j, e := range events {
			b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(e)
			if i == 0 {
				first = append(first, b)
			} else if !bytes.Equal(first[j], b) {
				t.Fatalf("event %d differs between streams", j)
			}
		}
	}
}
