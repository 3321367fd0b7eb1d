package main

import (
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"metad/watch"
)

// TestKVEventsFlags: the feed is off by default; a bad endpoint is an error naming the setting;
// with --insecure only a loopback address (or an ipc socket) is accepted; started, it binds, its
// backend id defaults to the member name, and its metrics are registered.
func TestKVEventsFlags(t *testing.T) {
	none := func(string) string { return "" }
	c, err := loadConfig([]string{"--insecure"}, none, io.Discard)
	if err != nil || c.KVEventsListen != "" {
		t.Fatalf("default: %q %v", c.KVEventsListen, err)
	}
	for _, args := range [][]string{
		{"--insecure", "--kv-events-listen", "127.0.0.1:5557"},
		{"--insecure", "--kv-events-listen", "tcp://127.0.0.1"},
		{"--insecure", "--kv-events-listen", "udp://127.0.0.1:5557"},
		{"--insecure", "--kv-events-listen", "tcp://127.0.0.1:http"},
	} {
		if _, err := loadConfig(args, none, io.Discard); err == nil || !strings.Contains(err.Error(), "kv-events-listen") {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, ep := range []string{"tcp://0.0.0.0:5557", "tcp://*:5557", "tcp://10.0.0.1:5557"} {
		_, err := loadConfig([]string{"--insecure", "--kv-events-listen", ep}, none, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "insecure: refused because kv-events-listen") {
			t.Errorf("%s with --insecure: %v", ep, err)
		}
	}
	for _, ep := range []string{"tcp://127.0.0.1:5557", "tcp://localhost:5557", "tcp://[::1]:5557", "ipc:///tmp/metad-kv.sock"} {
		if _, err := loadConfig([]string{"--insecure", "--kv-events-listen", ep}, none, io.Discard); err != nil {
			t.Errorf("%s with --insecure: %v", ep, err)
		}
	}

	c, err = loadConfig([]string{"--insecure", "--name", "m7", "--kv-events-listen", "tcp://127.0.0.1:0"}, none, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if id := c.kvEventsBackendID(); id != "m7" {
		t.Fatalf("backend id %q, want the member name", id)
	}
	if c, _ := loadConfig([]string{"--insecure", "--kv-events-backend-id", "store-node-1"}, none, io.Discard); c.kvEventsBackendID() != "store-node-1" {
		t.Fatalf("backend id %q", c.kvEventsBackendID())
	}
	reg := prometheus.NewRegistry()
	stop, err := startKVFeed(c, watch.NewWindow(watch.Limits{Events: 16, Bytes: 1 << 20}, 0), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "metad_kvfeed_messages_published_total") || !strings.Contains(got, "metad_kvfeed_gaps_total") {
		t.Fatalf("metrics %s", got)
	}
	off, err := startKVFeed(Config{}, nil, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	off()
}
