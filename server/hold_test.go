package server

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

// TestRefusalHold: a call refused as UNAUTHENTICATED is answered after the refusal hold; one
// refused as RATE_LIMITED after the hold or its retry-after, whichever is shorter, with the
// retry-after counted from the answer; other outcomes, and refusals past the held slots, at once.
func TestRefusalHold(t *testing.T) {
	const hold = 150 * time.Millisecond
	p := newPKI(t)
	n := startAuthWith(t, p, newFakeBackend(t, nil), "n1", func(c *config) { c.Server.RefusalHold = hold })
	n.b.MustApply(t, servicetest.RegisterTenant("a"))
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	n.b.MustApply(t, setLimitCmd(&metadv1.SetLimit{Principal: "alice", CallsPerSec: 1}))
	alice, _ := servicetest.NewKey(t, n.b, "alice", 0)
	c := n.clients(t)
	get := &metadv1.GetRequest{Tenant: "a", Key: []byte("k")}

	timed := func(key string) (time.Duration, error) {
		t0 := time.Now()
		_, err := c.meta.Get(withKey(t, key), get)
		return time.Since(t0), err
	}
	if d, err := timed(alice); status.Code(err) != codes.NotFound || d >= hold {
		t.Fatalf("alice's first Get: %v after %s, want NOT_FOUND at once", err, d)
	}
	// The bucket (1 call a second) is empty: the retry-after is about 1 s, so the hold is whole.
	d, err := timed(alice)
	wantRateLimited(t, err)
	if d < hold {
		t.Fatalf("a RATE_LIMITED refusal came after %s, want at least the hold (%s)", d, hold)
	}
	if after := time.Duration(detailOf(err).GetRetryAfterMs()) * time.Millisecond; after > time.Second-hold+10*time.Millisecond {
		t.Fatalf("retry-after %s after a hold of %s, want the rest of about 1 s", after, hold)
	}
	if d, err := timed(wrongSecret(alice)); status.Code(err) != codes.Unauthenticated || d < hold {
		t.Fatalf("a Get with a key that does not verify: %v after %s, want UNAUTHENTICATED after the hold", err, d)
	}
	// Every slot taken: refusals are answered at once.
	for range cap(n.srv.held) {
		n.srv.held <- struct{}{}
	}
	if d, err := timed("not-a-key"); status.Code(err) != codes.Unauthenticated || d >= hold {
		t.Fatalf("with every slot held: %v after %s, want UNAUTHENTICATED at once", err, d)
	}
	for range cap(n.srv.held) {
		<-n.srv.held
	}
}

// TestRefusalHoldOf: which outcomes are held, for how long, and what they answer after it.
func TestRefusalHoldOf(t *testing.T) {
	const limit = 250 * time.Millisecond
	limited := func(ms uint64) error {
		return withDetail(codes.ResourceExhausted, "rate limited", &metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_RATE_LIMITED, RetryAfterMs: ms})
	}
	for _, c := range []struct {
		name      string
		err       error
		hold      time.Duration
		afterMs   uint64 // the retry-after answered (RATE_LIMITED)
		unchanged bool
	}{
		{"unauthenticated", status.Error(codes.Unauthenticated, "no"), limit, 0, true},
		{"rate limited, long", limited(1000), limit, 750, false},
		{"rate limited, short", limited(40), 40 * time.Millisecond, 1, false},
		{"message too large", status.Error(codes.ResourceExhausted, "too large"), 0, 0, true},
		{"permission denied", status.Error(codes.PermissionDenied, "no"), 0, 0, true},
		{"not a status", errors.New("plain"), 0, 0, true},
	} {
		d, out := refusalHold(c.err, limit)
		if d != c.hold {
			t.Errorf("%s: hold %s, want %s", c.name, d, c.hold)
		}
		if c.unchanged {
			if out != c.err {
				t.Errorf("%s: answered %v, want the outcome itself", c.name, out)
			}
			continue
		}
		if got := detailOf(out).GetRetryAfterMs(); got != c.afterMs || status.Code(out) != codes.ResourceExhausted {
			t.Errorf("%s: answered %v with retry-after %d ms, want %d", c.name, out, got, c.afterMs)
		}
	}
}

// TestRefusalHeldOnce: a key neither node knows, sent to a follower, is refused by the leader
// the follower forwards it to; the follower holds the refusal and the leader does not, so the
// client waits one hold, not two.
func TestRefusalHeldOnce(t *testing.T) {
	leader, follower := authPair(t)
	unknown, _ := servicetest.NewKey(t, newFakeBackend(t, nil), "alice", 0)
	c := follower.clients(t)
	t0 := time.Now()
	_, err := c.admin.ListTenants(withKey(t, unknown), &metadv1.ListTenantsRequest{Stale: true})
	d := time.Since(t0)
	wantCode(t, err, codes.Unauthenticated, "unknown")
	hold := DefaultConfig().RefusalHold
	if d < hold || d >= 2*hold {
		t.Fatalf("the refusal came after %s, want one hold (%s)", d, hold)
	}
	if held := testutil.ToFloat64(leader.srv.m.refusalsHeld.WithLabelValues("held")); held != 0 {
		t.Fatalf("the leader held %v refusals of a forwarded call, want 0", held)
	}
	if held := testutil.ToFloat64(follower.srv.m.refusalsHeld.WithLabelValues("held")); held != 1 {
		t.Fatalf("the follower held %v refusals, want 1", held)
	}
}
