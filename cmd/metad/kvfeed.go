package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"metad/kvfeed"
	"metad/watch"
)

// validateKVEvents checks --kv-events-listen: an endpoint kvfeed accepts, and with --insecure a
// loopback address (or a local ipc socket), as every other listen address.
func (c *Config) validateKVEvents() []error {
	if c.KVEventsListen == "" {
		return nil
	}
	transport, addr, err := kvfeed.SplitEndpoint(c.KVEventsListen)
	if err != nil {
		return []error{fmt.Errorf("kv-events-listen: %w", err)}
	}
	if c.Insecure && transport == "tcp" && !isLoopback(addr) {
		return []error{fmt.Errorf("insecure: refused because kv-events-listen %q is not a loopback address; a cluster reachable from other hosts needs --cacert, --cert and --key", c.KVEventsListen)}
	}
	return nil
}

// startKVFeed starts the KV event feed over w when --kv-events-listen is set, its metrics on reg,
// and returns the function that stops it (nothing to stop when it is off).
func startKVFeed(cfg Config, w *watch.Window, reg prometheus.Registerer, log *slog.Logger) (stop func(), err error) {
	if cfg.KVEventsListen == "" {
		return func() {}, nil
	}
	p, err := kvfeed.New(kvfeed.Config{Endpoint: cfg.KVEventsListen, BackendID: cfg.kvEventsBackendID()}, w, log)
	if err != nil {
		return nil, fmt.Errorf("kv-events-listen: %w", err)
	}
	if err := p.RegisterMetrics(reg); err != nil {
		_ = p.Close()
		return nil, err
	}
	return func() { _ = p.Close() }, nil
}

// kvEventsBackendID is the backend_id of the feed's events: --kv-events-backend-id, else the
// member name.
func (c *Config) kvEventsBackendID() string {
	if c.KVEventsBackendID != "" {
		return c.KVEventsBackendID
	}
	return c.Name
}
