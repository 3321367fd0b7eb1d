package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// quotaEvictor is a service.Evictor whose tenant-quota eviction is the function and whose loop does
// nothing.
type quotaEvictor func(ctx context.Context, tenant string, deficit uint64) (uint64, error)

func (q quotaEvictor) EvictTenant(ctx context.Context, tenant string, deficit uint64) (uint64, error) {
	return q(ctx, tenant, deficit)
}
func (quotaEvictor) Kick() {}
func (quotaEvictor) Run(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// loopEvictor is a service.Evictor that records its loop and its kicks.
type loopEvictor struct {
	quotaEvictor
	running chan struct{} // closed by Run when it starts
	kicks   atomic.Int32
	// leaderAtKick is the adapter's "leader" health status at the last kick.
	leaderAtKick atomic.Int32
	h            atomic.Pointer[harness]
}

func (e *loopEvictor) Kick() {
	e.kicks.Add(1)
	if h := e.h.Load(); h != nil {
		resp, err := healthpb.NewHealthClient(h.cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "leader"})
		if err == nil {
			e.leaderAtKick.Store(int32(resp.GetStatus()))
		}
	}
}

func (e *loopEvictor) Run(ctx context.Context) error {
	close(e.running)
	<-ctx.Done()
	return ctx.Err()
}

// TestServiceRunsItsEvictor: the service runs its evictor's loop and kicks it on every leadership
// change, after the hooks registered with OnLeadership (the adapter's health status already follows).
func TestServiceRunsItsEvictor(t *testing.T) {
	b := newFakeBackend(t, nil)
	ev := &loopEvictor{running: make(chan struct{})}
	cfg := testConfig()
	cfg.Evictor = ev
	h := start(t, b, cfg)
	ev.h.Store(h)
	select {
	case <-ev.running:
	case <-time.After(10 * time.Second):
		t.Fatal("the service did not start its evictor's loop")
	}
	k := ev.kicks.Load()
	b.SetLeader(false, "", "")
	if got := ev.kicks.Load(); got != k+1 {
		t.Fatalf("kicks %d after losing leadership, want %d", got, k+1)
	}
	if got := healthpb.HealthCheckResponse_ServingStatus(ev.leaderAtKick.Load()); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("leader health %s at the kick after losing leadership, want NOT_SERVING", got)
	}
	b.SetLeader(true, "", "")
	if got := ev.kicks.Load(); got != k+2 {
		t.Fatalf("kicks %d after gaining leadership, want %d", got, k+2)
	}
	if got := healthpb.HealthCheckResponse_ServingStatus(ev.leaderAtKick.Load()); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("leader health %s at the kick after gaining leadership, want SERVING", got)
	}
}
