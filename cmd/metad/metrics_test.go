package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"metad/ha"
)

// TestPprofIsAFlagOffByDefault: the profiler is served on the metrics address only when asked,
// by flag, environment or YAML file; /metrics and /healthz are served either way.
func TestPprofIsAFlagOffByDefault(t *testing.T) {
	none := func(string) string { return "" }
	file := filepath.Join(t.TempDir(), "metad.yaml")
	if err := os.WriteFile(file, []byte("pprof: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default", nil, nil, false},
		{"flag", []string{"--pprof"}, nil, true},
		{"environment", nil, map[string]string{"METAD_PPROF": "true"}, true},
		{"yaml", []string{"--config", file}, nil, true},
		{"flag wins over yaml", []string{"--config", file, "--pprof=false"}, nil, false},
	} {
		getenv := none
		if tc.env != nil {
			getenv = func(k string) string { return tc.env[k] }
		}
		c, err := loadConfig(append(tc.args, "--insecure"), getenv, io.Discard)
		if err != nil || c.Pprof != tc.want {
			t.Fatalf("%s: pprof %v (%v), want %v", tc.name, c.Pprof, err, tc.want)
		}
	}
	if _, err := loadConfig([]string{"--pprof", "--listen-metrics", ""}, none, io.Discard); err == nil || !strings.Contains(err.Error(), "pprof") {
		t.Fatalf("--pprof without a metrics address: %v", err)
	}

	status := func() ha.Status { return ha.Status{Name: "n1", Role: ha.RoleLeader, LeaderName: "n1"} }
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(metricsMux(prometheus.NewRegistry(), status, on, nil))
		get := func(path string) int {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode
		}
		want := http.StatusNotFound
		if on {
			want = http.StatusOK
		}
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine", "/debug/pprof/cmdline"} {
			if got := get(path); got != want {
				t.Errorf("pprof %v: GET %s = %d, want %d", on, path, got, want)
			}
		}
		for _, path := range []string{"/metrics", "/healthz"} {
			if got := get(path); got != http.StatusOK {
				t.Errorf("pprof %v: GET %s = %d, want 200", on, path, got)
			}
		}
		srv.Close()
	}
}
