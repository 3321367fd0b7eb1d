package server

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	metadv1 "metad/proto/metadv1"
)

// counterValue returns the value of the series of name whose labels include labels (gauges and
// counters), or -1 if there is none.
func counterValue(t *testing.T, h *harness, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				if c := m.GetCounter(); c != nil {
					return c.GetValue()
				}
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(want)
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
