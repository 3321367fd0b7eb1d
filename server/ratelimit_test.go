package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"metad/audit"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

func setLimitCmd(l *metadv1.SetLimit) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_SetLimit{SetLimit: l}}
}

// wantRateLimited fails the test unless err is RESOURCE_EXHAUSTED with RATE_LIMITED and a
// retry-after.
func wantRateLimited(t *testing.T, err error) {
	t.Helper()
	wantCode(t, err, codes.ResourceExhausted, "rate limited")
	d := detailOf(err)
	if d.GetReason() != metadv1.Reason_REASON_RATE_LIMITED || d.GetRetryAfterMs() == 0 {
		t.Fatalf("detail %v: want RATE_LIMITED with a retry-after", d)
	}
}

// TestRateLimitOverGRPC: a principal over its calls per second is answered RESOURCE_EXHAUSTED
// with RATE_LIMITED and a retry-after before the service sees the call, the refusal is audited
// with its reason, and another principal is not held up; a principal with its limit of watch
// streams open has the next one refused when it opens, before it waits for its request.
func TestRateLimitOverGRPC(t *testing.T) {
	p := newPKI(t)
	var path string
	var log *audit.Log
	n := startAuthWith(t, p, newFakeBackend(t, nil), "n1", func(c *config) { path, log = auditTo(t, c, "n1") })
	n.b.MustApply(t, servicetest.RegisterTenant("a"))
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	n.b.MustApply(t, servicetest.Grant("bob", "tenant:a"))
	n.b.MustApply(t, servicetest.Grant("carol", "tenant:a"))
	n.b.MustApply(t, setLimitCmd(&metadv1.SetLimit{Principal: "alice", CallsPerSec: 2}))
	n.b.MustApply(t, setLimitCmd(&metadv1.SetLimit{Principal: "carol", Streams: 1}))
	alice, _ := servicetest.NewKey(t, n.b, "alice", 0)
	bob, _ := servicetest.NewKey(t, n.b, "bob", 0)
	carol, _ := servicetest.NewKey(t, n.b, "carol", 0)
	c := n.clients(t)

	get := &metadv1.GetRequest{Tenant: "a", Key: []byte("k")}
	var err error
	for range 3 { // the bucket holds 2; a third within the second is refused
		if _, err = c.meta.Get(withKey(t, alice), get); err != nil && status.Code(err) != codes.NotFound {
			break
		}
	}
	wantRateLimited(t, err)
	if _, err := c.meta.Get(withKey(t, bob), get); status.Code(err) != codes.NotFound {
		t.Fatalf("bob's Get: %v, want NOT_FOUND (not limited)", err)
	}

	// Streams: carol's first watch is served; her second is refused when it opens.
	ctx, cancel := context.WithTimeout(withKey(t, carol), 30*time.Second)
	defer cancel()
	first, err := c.meta.Watch(ctx, &metadv1.WatchRequest{})
	if err == nil {
		_, err = first.Recv()
	}
	if err != nil {
		t.Fatalf("carol's first watch: %v", err)
	}
	r := dialRawH2(t, n.addr, p.clientTLS())
	r.open(1, metadv1.Metadata_Watch_FullMethodName, "authorization", "Bearer "+carol)
	if o := r.await(1); o.status != codeNumber(codes.ResourceExhausted) {
		t.Fatalf("carol's second watch (no request sent) ended %+v, want RESOURCE_EXHAUSTED at once", o)
	}
	cancel() // her first ends: a stream is served again
	for i := uint32(3); ; i += 2 {
		r.open(i, metadv1.Metadata_Watch_FullMethodName, "authorization", "Bearer "+carol)
		raw, _ := proto.Marshal(&metadv1.WatchRequest{})
		r.send(i, raw)
		o := r.awaitData(i)
		if !o.closed && o.status == "" {
			break // served: its first response came
		}
		if o.status != codeNumber(codes.ResourceExhausted) || i > 3+2*1000 {
			t.Fatalf("carol's watch after her first ended: %+v", o)
		}
	}

	lines := auditLines(t, log, path)
	found := false
	for _, l := range lines {
		found = found || l.Principal == "alice" && l.Code == codes.ResourceExhausted.String() && l.Reason == "REASON_RATE_LIMITED"
	}
	if !found {
		t.Fatalf("no audit line of alice's refused call among %d lines", len(lines))
	}
}
