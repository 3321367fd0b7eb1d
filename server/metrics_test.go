package server

import (
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

// counterValue is servicetest.MetricValue of the harness's registry.
func counterValue(t *testing.T, h *harness, name string, labels map[string]string) float64 {
	t.Helper()
	return servicetest.MetricValue(t, h.reg, name, labels)
}

func TestMetricsAfterCalls(t *testing.T) {
	h := start(t, newFakeBackend(t, nil), testConfig())
	ctx := tctx(t)
	_, _ = h.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("missing")})
	h.mount(t, clientA, segA)
	h.put(t, "", "k", 100)
	if got := counterValue(t, h, "metad_server_requests_total", map[string]string{"method": "Metadata/Get", "code": "NotFound"}); got != 1 {
		t.Fatalf("requests_total{Get,NotFound} = %v, want 1", got)
	}
	if got := counterValue(t, h, "metad_server_requests_total", map[string]string{"method": "Metadata/PutStart", "code": "OK"}); got != 1 {
		t.Fatalf("requests_total{PutStart,OK} = %v, want 1", got)
	}
	for name, want := range map[string]float64{"metad_server_store_tenants": 1, "metad_server_store_objects": 1} {
		if got := counterValue(t, h, name, nil); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := counterValue(t, h, "metad_server_store_capacity_bytes", map[string]string{"tier": "memory"}); got != 1<<20 {
		t.Errorf("memory capacity %v", got)
	}
	if got := counterValue(t, h, "metad_server_tenant_charged_bytes", map[string]string{"tenant": "default"}); got != 100 {
		t.Errorf("default tenant charged %v, want 100", got)
	}
	mfs, _ := h.reg.Gather()
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "metad_server_request_duration_seconds"
	}
	if !found {
		t.Error("no latency histogram")
	}
}
