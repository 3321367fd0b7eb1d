package service_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
)

// setLimit sets a limit through the service as an admin calls it, failing the test on an error.
func setLimit(t *testing.T, h *harness, l *metadv1.Limit) {
	t.Helper()
	if _, err := h.svc.SetLimit(tctx(t), &metadv1.SetLimitRequest{Limit: l}); err != nil {
		t.Fatalf("SetLimit %v: %v", l, err)
	}
}

// wantLimited fails the test unless err is a refusal of limit with a retry-after in (0, max].
func wantLimited(t *testing.T, err error, limit string, max time.Duration) {
	t.Helper()
	var rl *service.RateLimitedError
	if !errors.As(err, &rl) || !errors.Is(err, service.ErrRateLimited) || rl.Limit != limit || rl.RetryAfter <= 0 || rl.RetryAfter > max {
		t.Fatalf("got %v, want a refusal of the %s limit with a retry-after in (0, %s]", err, limit, max)
	}
}

// TestThrottleCalls: a principal's calls bucket holds one second of its rate; past it a call is
// refused with how long until the bucket holds a call again, and the bucket refills with time.
// Other principals, and members as themselves, are not limited.
func TestThrottleCalls(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	setLimit(t, h, &metadv1.Limit{Principal: "alice", CallsPerSec: 4})
	alice := service.Caller{Principal: "alice"}
	get := &metadv1.GetRequest{Key: []byte("k")}
	for i := range 4 {
		if err := h.svc.Throttle(alice, get); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	wantLimited(t, h.svc.Throttle(alice, get), "calls", 251*time.Millisecond)
	for _, c := range []service.Caller{{Principal: "bob"}, {Member: "n2"}} {
		if err := h.svc.Throttle(c, get); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
	clk.Advance(250 * time.Millisecond) // one call's worth
	if err := h.svc.Throttle(alice, get); err != nil {
		t.Fatalf("after a quarter second: %v", err)
	}
	wantLimited(t, h.svc.Throttle(alice, get), "calls", 251*time.Millisecond)
	clk.Advance(time.Hour) // the bucket holds one second at most
	for i := range 4 {
		if err := h.svc.Throttle(alice, get); err != nil {
			t.Fatalf("after an hour, call %d: %v", i, err)
		}
	}
	wantLimited(t, h.svc.Throttle(alice, get), "calls", 251*time.Millisecond)
	if got := servicetest.MetricValue(t, h.reg, "metad_server_rate_limited_total", map[string]string{"limit": "calls"}); got != 3 {
		t.Fatalf("calls refused: %v, want 3", got)
	}
}

// TestThrottleKeys: a call counts its request's keys (a batch's items, a pattern page's examine
// bound); a batch of more than a second's keys is admitted by a full bucket and leaves it in
// debt, which the calls after it wait out.
func TestThrottleKeys(t *testing.T) {
	clk := servicetest.NewClock()
	h := newHarness(t, clk)
	setLimit(t, h, &metadv1.Limit{Role: auth.AnyRole, KeysPerSec: 1000})
	c := service.Caller{Principal: "carol"}
	batch := &metadv1.BatchGetRequest{Keys: make([][]byte, 3000)}
	if err := h.svc.Throttle(c, batch); err != nil {
		t.Fatal(err)
	}
	// 1000 - 3000: 2 s of debt, and a key's more to hold one key again.
	wantLimited(t, h.svc.Throttle(c, &metadv1.GetRequest{}), "keys", 2002*time.Millisecond)
	clk.Advance(2500 * time.Millisecond) // 500 keys: a call costing more waits for a full bucket
	wantLimited(t, h.svc.Throttle(c, &metadv1.GetByRegexRequest{Pattern: "x"}), "keys", 501*time.Millisecond)
	clk.Advance(500 * time.Millisecond)
	if err := h.svc.Throttle(c, &metadv1.GetByRegexRequest{Pattern: "x"}); err != nil {
		t.Fatal(err)
	}
	// The pattern's page counted the keys it may examine (4096): 1000 - 4096.
	wantLimited(t, h.svc.Throttle(c, &metadv1.GetRequest{}), "keys", 3098*time.Millisecond)
}

// TestOpenStreamLimit: a principal may hold its limit of watch streams open at once; a stream
// past it is refused until one of them ends.
func TestOpenStreamLimit(t *testing.T) {
	h := newHarness(t, nil)
	setLimit(t, h, &metadv1.Limit{Principal: "dave", Streams: 2})
	dave := service.Caller{Principal: "dave"}
	r1, err := h.svc.OpenStream(dave)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.OpenStream(dave); err != nil {
		t.Fatal(err)
	}
	_, err = h.svc.OpenStream(dave)
	wantLimited(t, err, "streams", time.Second)
	r1()
	r1() // a second release counts nothing
	if _, err := h.svc.OpenStream(dave); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
	_, err = h.svc.OpenStream(dave)
	wantLimited(t, err, "streams", time.Second)
}

// TestSetLimitAndListLimits: SetLimit records a principal's, a role's (canonical form) and every
// principal's limits through the log; ListLimits lists them and resolves one principal's; a bad
// target is INVALID_PARAMS with nothing proposed, and every limit 0 removes a record.
func TestSetLimitAndListLimits(t *testing.T) {
	h := newHarness(t, nil)
	h.b.MustApply(t, servicetest.Grant("erin", "worker:C1000000000000000000000000000001"))
	setLimit(t, h, &metadv1.Limit{Principal: "erin", CallsPerSec: 7})
	setLimit(t, h, &metadv1.Limit{Role: "worker:C1000000000000000000000000000001", KeysPerSec: 70})
	setLimit(t, h, &metadv1.Limit{Role: "*", Streams: 3})
	before := h.b.Proposals.Load()
	for _, l := range []*metadv1.Limit{{CallsPerSec: 1}, {Principal: "a", Role: "admin"}, {Role: "boss"}, {Principal: "x", CallsPerSec: auth.MaxCallsPerSec + 1}} {
		_, err := h.svc.SetLimit(tctx(t), &metadv1.SetLimitRequest{Limit: l})
		wantReason(t, err, store.InvalidParams)
	}
	if got := h.b.Proposals.Load(); got != before {
		t.Fatalf("refused SetLimits proposed %d commands", got-before)
	}
	resp, err := h.svc.ListLimits(tctx(t), &metadv1.ListLimitsRequest{Principal: "erin"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetLimits()) != 3 || resp.GetLimits()[0].GetPrincipal() != "erin" ||
		resp.GetLimits()[2].GetRole() != "worker:c1000000-0000-0000-0000-000000000001" {
		t.Fatalf("limits %v", resp.GetLimits())
	}
	if e := resp.GetEffective(); e.GetCallsPerSec() != 7 || e.GetKeysPerSec() != 70 || e.GetStreams() != 3 {
		t.Fatalf("erin's effective limits %v", e)
	}
	setLimit(t, h, &metadv1.Limit{Principal: "erin"})
	if resp, err := h.svc.ListLimits(tctx(t), &metadv1.ListLimitsRequest{}); err != nil || len(resp.GetLimits()) != 2 || resp.GetEffective() != nil {
		t.Fatalf("after the removal: %v, %v", resp, err)
	}
}

// TestThrottleScanWalk: a listing's or a pattern's page costs the tenant's objects when it has
// more of them than the page's own bound, since every page walks them all.
func TestThrottleScanWalk(t *testing.T) {
	h := budgetHarness(t, 10, time.Hour) // 100 objects in the default tenant; a pattern page examines 10
	setLimit(t, h, &metadv1.Limit{Role: auth.AnyRole, KeysPerSec: 1000})
	c := service.Caller{Principal: "carol"}
	for _, req := range []proto.Message{
		&metadv1.GetByRegexRequest{Pattern: "x"},
		&metadv1.ListObjectKeysRequest{Limit: 5},
		&metadv1.RemoveByRegexRequest{Tenant: "default", Pattern: "x"},
	} {
		if err := h.svc.Throttle(c, req); err != nil {
			t.Fatalf("%T: %v", req, err)
		}
	}
	// 1000 - 3 pages of 100 objects: 700 keys left (a few more as the bucket refills meanwhile).
	wantLimited(t, h.svc.Throttle(c, &metadv1.BatchGetRequest{Keys: make([][]byte, 800)}), "keys", 101*time.Millisecond)
	if err := h.svc.Throttle(c, &metadv1.BatchGetRequest{Keys: make([][]byte, 600)}); err != nil {
		t.Fatal(err)
	}
}
