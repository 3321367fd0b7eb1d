package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "metad.yaml")
	if err := os.WriteFile(file, []byte("name: from-file\nlease-ttl: 3s\nclient-ttl: 4s\ndata-dir: /tmp/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"METAD_LEASE_TTL": "5s", "METAD_NAME": "from-env"}
	c, err := loadConfig([]string{"--config", file, "--name", "from-flag", "--insecure"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "from-flag" || c.LeaseTTL != 5*time.Second || c.ClientTTL != 4*time.Second || c.DataDir != "/tmp/x" {
		t.Fatalf("precedence broken: %+v", c)
	}
	if c.Placement != "random" || c.ListenClient != "127.0.0.1:6001" {
		t.Fatalf("defaults lost: %+v", c)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	none := func(string) string { return "" }
	cases := map[string][]string{
		"listen-client":          {"--listen-client", "nope"},
		"initial-cluster-state":  {"--initial-cluster-state", "maybe"},
		"lease-ttl":              {"--lease-ttl", "0s"},
		"placement":              {"--placement", "round_robin"},
		"initial_cluster":        {"--initial-cluster", "n1"},
		"extra-procs":            {"--extra-procs", "-1"},
		"max-concurrent-streams": {"--max-concurrent-streams", "0"},
		"max-header-list-bytes":  {"--max-header-list-bytes", "100"},
		"audit-log-max-bytes":    {"--audit-log", "/tmp/a.log", "--audit-log-max-bytes", "10"},
		"audit-log-max-files":    {"--audit-log", "/tmp/a.log", "--audit-log-max-files", "0"},
	}
	for want, args := range cases {
		_, err := loadConfig(args, none, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v does not name %s", args, err, want)
		}
	}
	file := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(file, []byte("nmae: typo\n"), 0o600)
	if _, err := loadConfig([]string{"--config=" + file}, none, io.Discard); err == nil || !strings.Contains(err.Error(), `"nmae"`) {
		t.Errorf("unknown YAML key: %v", err)
	}
	if _, err := loadConfig(nil, func(k string) string {
		if k == "METAD_CLIENT_TTL" {
			return "soon"
		}
		return ""
	}, io.Discard); err == nil || !strings.Contains(err.Error(), "METAD_CLIENT_TTL") {
		t.Errorf("bad env: %v", err)
	}
}
