package service_test

import (
	"slices"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/store/alloc"
)

// TestClientExpiry: with a fake clock and a 1 s client_ttl, a client that stops pinging has its
// segments unmounted by the leader; a client that keeps pinging keeps its segments.
func TestClientExpiry(t *testing.T) {
	clk := servicetest.NewClock()
	cfg := withClock(clk, testConfig())
	cfg.ClientTTL = time.Second
	h := start(t, servicetest.NewBackend(t, clk.Now), cfg)
	ctx := tctx(t)
	h.mount(t, clientA, segA)
	h.mount(t, clientB, segB)
	h.put(t, "", "obj", 64)
	for _, c := range []alloc.ID{clientA, clientB} {
		if _, err := h.svc.Ping(ctx, &metadv1.PingRequest{ClientId: idb(c)}); err != nil {
			t.Fatal(err)
		}
	}
	segs := func(c alloc.ID) []alloc.ID { return h.b.Store().Segments().SegmentsOf(c) }
	deadline := time.Now().Add(10 * time.Second)
	for len(segs(clientA)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("client A was never expired (fake clock at +%s)", clk.Now().Sub(servicetest.NewClock().Now()))
		}
		clk.Advance(100 * time.Millisecond) // B pings every fake 100 ms; A is silent
		if _, err := h.svc.Ping(ctx, &metadv1.PingRequest{ClientId: idb(clientB)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // poll interval, not synchronisation: the loop below re-checks
	}
	if got := segs(clientB); !slices.Equal(got, []alloc.ID{segB}) {
		t.Fatalf("client B, which kept pinging, has segments %v", got)
	}
	p, err := h.svc.Ping(ctx, &metadv1.PingRequest{ClientId: idb(clientA)})
	if err != nil || len(p.GetSegmentIds()) != 0 {
		t.Fatalf("expired client's Ping: %v %v", p, err)
	}
	// The counter counts the expiry once its proposal has returned, a moment after its apply
	// unmounted the segments.
	pollUntil(t, "the expiry counted", 10*time.Second, func() bool {
		return metricValue(t, h, "metad_server_clients_expired_total", nil) >= 1
	})
	if got := metricValue(t, h, "metad_server_clients_expired_total", nil); got != 1 {
		t.Fatalf("clients expired counter %v, want 1", got)
	}
}
