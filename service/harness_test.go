package service_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
	"metad/store/alloc"
)

// The tests of the service's behaviour call its methods directly, over servicetest's in-memory
// backend (the one the adapter's tests use), and check the errors the methods return: a
// rejection's store reason, with the tenant and key of the *service.Error. What the adapter makes
// of them (gRPC codes, the ErrorDetail) is package server's to test.

var _ service.Backend = (*servicetest.Backend)(nil)

// harness is one Service over a backend, its Run loop running until the test ends.
type harness struct {
	b   *servicetest.Backend
	svc *service.Service
	reg *prometheus.Registry
}

// testConfig is the defaults with fast sweeps and a client ttl long enough that tests which move
// the clock past leases do not expire their clients. The backend grants no leader lease unless
// told to: every PutStart goes through the log, and no keeper round adds read barriers to the ones
// the tests count (arenaHarness runs the arenas).
func testConfig() service.Config {
	cfg := service.DefaultConfig()
	cfg.SweepInterval = 5 * time.Millisecond
	cfg.ClientTTL = time.Hour
	cfg.NoArenas = true
	return cfg
}

// withClock is cfg with the service's clock c.
func withClock(c *servicetest.Clock, cfg service.Config) service.Config { cfg.Now = c.Now; return cfg }

// start runs a Service over b with cfg, wired as cmd/metad wires it (the leadership hook, metrics
// on a fresh registry); its Run loop stops when the test ends.
func start(t testing.TB, b *servicetest.Backend, cfg service.Config) *harness {
	t.Helper()
	lead := service.NewLeadership(b.Store, cfg.Now)
	b.SetLeadershipHook(lead.Changed)
	reg := prometheus.NewRegistry()
	svc, err := service.New(b, b.FSM(), lead, cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &harness{b: b, svc: svc, reg: reg}
}

// newHarness is start over a new backend on clock clk (nil: the time of day).
func newHarness(t testing.TB, clk *servicetest.Clock) *harness {
	t.Helper()
	if clk == nil {
		return start(t, servicetest.NewBackend(t, nil), testConfig())
	}
	return start(t, servicetest.NewBackend(t, clk.Now), withClock(clk, testConfig()))
}

// tctx returns a context that ends with the test or after 10 s.
func tctx(t testing.TB) context.Context { return servicetest.Context(t) }

var clientA, clientB, segA, segB = servicetest.ClientA, servicetest.ClientB, servicetest.SegA, servicetest.SegB

func idb(id alloc.ID) []byte { return id[:] }

// mount mounts a 1 MiB MEMORY segment for client.
func (h *harness) mount(t testing.TB, client, seg alloc.ID) {
	t.Helper()
	_, err := h.svc.MountSegment(tctx(t), servicetest.MountRequest(client, seg))
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
}

// hostSeg mounts a MEMORY segment of size bytes for clientA at endpoint.
func (h *harness) hostSeg(t testing.TB, id alloc.ID, base, size uint64, endpoint string) {
	t.Helper()
	_, err := h.svc.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: &metadv1.SegmentDesc{
		Id: idb(id), Name: "seg-" + id.String()[:8], Base: base, Size: size, Endpoint: endpoint, Tier: metadv1.Tier_TIER_MEMORY}})
	if err != nil {
		t.Fatalf("mount %s at %s: %v", id, endpoint, err)
	}
}

// segDesc is a valid MEMORY segment descriptor of size bytes at base (owner set by the service).
func segDesc(id alloc.ID, base, size uint64) *metadv1.SegmentDesc {
	return &metadv1.SegmentDesc{Id: idb(id), Name: "seg-" + id.String()[:8], Base: base, Size: size,
		Endpoint: "10.0.0.1:7000", Tier: metadv1.Tier_TIER_MEMORY}
}

// put writes a complete object of size bytes.
func (h *harness) put(t testing.TB, tenant, key string, size uint64) {
	t.Helper()
	ctx := tctx(t)
	if _, err := h.svc.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key), Size: size}); err != nil {
		t.Fatalf("PutStart %q: %v", key, err)
	}
	if _, err := h.svc.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: tenant, ClientId: idb(clientA), Key: []byte(key)}); err != nil {
		t.Fatalf("PutEnd %q: %v", key, err)
	}
}

// authed makes the call of method with req as caller c, as the adapter makes it: Authorize first,
// then the method with the context Authorize returned.
func authed[Req proto.Message, Resp any](ctx context.Context, h *harness, c service.Caller, method string, req Req,
	call func(context.Context, Req) (Resp, error)) (Resp, error) {
	actx, err := h.svc.Authorize(ctx, c, method, req)
	if err != nil {
		var zero Resp
		return zero, err
	}
	return call(actx, req)
}

// reasonOf is the store reason of a method's error: store.OK for none or an error that is no
// rejection. Package ha's membership refusals count as the rejections of their reason
// (MEMBER_NOT_FOUND, INVALID_PARAMS), as the adapter answers them.
func reasonOf(err error) store.Reason {
	var (
		se  *store.Error
		mnf *ha.MemberNotFoundError
		im  *ha.InvalidMemberError
	)
	switch {
	case errors.As(err, &se):
		return se.Reason
	case errors.As(err, &mnf):
		return store.MemberNotFound
	case errors.As(err, &im):
		return store.InvalidParams
	}
	return store.OK
}

// wantReason fails the test unless err is the service's error of a rejection with reason r, and
// returns it (its tenant and key).
func wantReason(t testing.TB, err error, r store.Reason) *service.Error {
	t.Helper()
	var fe *service.Error
	if got := reasonOf(err); !errors.As(err, &fe) || got != r {
		t.Fatalf("got %v (reason %s), want a rejection %s", err, got, r)
	}
	return fe
}

// wantInvalid checks that err is INVALID_PARAMS with a message that starts with field.
func wantInvalid(t testing.TB, err error, field string) {
	t.Helper()
	wantReason(t, err, store.InvalidParams)
	if msg := strings.TrimPrefix(err.Error(), "INVALID_PARAMS: "); !strings.HasPrefix(msg, field) {
		t.Fatalf("message %q does not name %q", msg, field)
	}
}

// wantErrContains fails the test unless err is (or wraps) target and its message holds every one
// of msgs.
func wantErrContains(t testing.TB, err, target error, msgs ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got %v, want %v", err, target)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Fatalf("message %q does not say %q", err, m)
		}
	}
}

// Reasons of the items of a batch's response (the wire's; REASON_UNSPECIFIED is OK).
const (
	rOK       = metadv1.Reason_REASON_UNSPECIFIED
	rNotFound = metadv1.Reason_REASON_OBJECT_NOT_FOUND
	rExists   = metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS
	rNotReady = metadv1.Reason_REASON_REPLICA_IS_NOT_READY
	rBadWrite = metadv1.Reason_REASON_INVALID_WRITE
	rHasLease = metadv1.Reason_REASON_OBJECT_HAS_LEASE
)

// reasons is the reason of each status.
func reasons(sts []*metadv1.Status) []metadv1.Reason {
	out := make([]metadv1.Reason, len(sts))
	for i, s := range sts {
		out[i] = s.GetReason()
	}
	return out
}

// batchReasons is reasons for the results of a batch whose results carry a Status.
func batchReasons[R any](rs []R, status func(R) *metadv1.Status) []metadv1.Reason {
	out := make([]metadv1.Reason, len(rs))
	for i, r := range rs {
		out[i] = status(r).GetReason()
	}
	return out
}

// strs is bs as strings.
func strs(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// keysN returns n distinct keys "k000000"...
func keysN(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("k%06d", i))
	}
	return out
}

// metricValue is servicetest.MetricValue of the harness's registry.
func metricValue(t testing.TB, h *harness, name string, labels map[string]string) float64 {
	t.Helper()
	return servicetest.MetricValue(t, h.reg, name, labels)
}

// pollUntil polls cond every 5 ms until it holds or d passes.
func pollUntil(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // poll interval, not synchronisation: cond is checked again
	}
}
