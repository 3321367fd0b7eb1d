package server

import (
	"fmt"
	"time"

	"google.golang.org/grpc/credentials"

	"metad/audit"
)

// Config is a plain value, read-only once given to New. It holds the adapter's settings; the
// settings of what the leader does with a request are service.Config's.
type Config struct {
	// SweepInterval is the period of Run's member-record loop. Default 200 ms.
	SweepInterval time.Duration
	// BackgroundTimeout bounds each call that Run's loop makes (asking the leader to record this
	// member). Default 5 s.
	BackgroundTimeout time.Duration
	// ForwardTimeout bounds one call a follower forwards to the leader, within the caller's own
	// deadline, for every call but the long ones (RemoveAll, UnregisterTenant, member changes,
	// TransferLeader, snapshots), so that a client that sends no deadline does not wait forever
	// on a leader that stopped answering. A forward is also abandoned as soon as the follower
	// stops hearing from the leader (see forward.go). Default 5 s.
	ForwardTimeout time.Duration
	// DialCredentials secure this node's calls to the leader (forwarded calls and RecordMember):
	// with TLS, credentials that present this member's node certificate and verify the leader's
	// against the cluster's CA bundle. Nil: plaintext (a cluster run with --insecure).
	DialCredentials credentials.TransportCredentials
	// Authenticate turns authentication and authorization of every call on (auth.go): cmd/metad
	// sets it when the client listener runs TLS. Off (--insecure), every call is allowed.
	Authenticate bool
	// Audit, when set, receives a line for every call that may change the state and every call
	// refused for who made it (audit.go). The caller closes it after the gRPC server stopped.
	Audit *audit.Log
	// MaxConcurrentStreams bounds the calls one client connection may have open at once (HTTP/2
	// SETTINGS_MAX_CONCURRENT_STREAMS, ServerOptions): a stream opened past it is reset with
	// REFUSED_STREAM before a handler runs, and a gRPC client waits for a free one. Default
	// DefaultMaxConcurrentStreams; 1..StreamsMax.
	MaxConcurrentStreams uint32
	// MaxHeaderListBytes bounds the metadata (HTTP/2 header list) of one call (HTTP/2
	// SETTINGS_MAX_HEADER_LIST_SIZE, ServerOptions): a call whose headers add up to more is reset
	// before a handler runs, and a gRPC client that knows the setting fails it before sending.
	// Default DefaultMaxHeaderListBytes; HeaderListMinBytes..HeaderListMaxBytes.
	MaxHeaderListBytes uint32
	// RefusalHold is how long a call refused as UNAUTHENTICATED, or as RATE_LIMITED (then at
	// most its retry-after), is held before its answer (hold.go). Default DefaultRefusalHold;
	// 0 answers refusals at once; at most RefusalHoldMax.
	RefusalHold time.Duration
}

// Defaults of the connection limits (Config.MaxConcurrentStreams, MaxHeaderListBytes).
const (
	// DefaultMaxConcurrentStreams is four times the pool of goroutines that runs calls
	// (streamWorkers): one connection's calls past the pool each run on a goroutine of their own,
	// so a connection can hold at most this many handlers (and their stacks and flow-control
	// windows) at once. A client multiplexes its process's calls on one connection per member;
	// the benchmarks' 64 callers and a router's watch streams stay far below it.
	DefaultMaxConcurrentStreams = 4 * streamWorkers
	// DefaultMaxHeaderListBytes: a call's metadata is a few hundred bytes (the API key, the
	// principal a member forwards for, gRPC's own headers); 64 KiB leaves room for a proxy's
	// tracing headers and is 256 times below gRPC's default of 16 MiB.
	DefaultMaxHeaderListBytes = 64 << 10
	// HeaderListMinBytes and HeaderListMaxBytes bound Config.MaxHeaderListBytes, and
	// StreamsMax Config.MaxConcurrentStreams (HTTP/2's stream ids allow no more).
	HeaderListMinBytes = 4 << 10
	HeaderListMaxBytes = 16 << 20
	StreamsMax         = 1 << 31
	// DefaultRefusalHold: long enough that a caller asking again at once makes a handful of
	// calls a second, short enough that a client whose key just expired learns it promptly.
	DefaultRefusalHold = 250 * time.Millisecond
	RefusalHoldMax     = 10 * time.Second
)

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		SweepInterval:     200 * time.Millisecond,
		BackgroundTimeout: 5 * time.Second,
		ForwardTimeout:    5 * time.Second,

		MaxConcurrentStreams: DefaultMaxConcurrentStreams,
		MaxHeaderListBytes:   DefaultMaxHeaderListBytes,
		RefusalHold:          DefaultRefusalHold,
	}
}

// Validate checks the config; the messages name the setting as flags and YAML spell it.
func (c Config) Validate() error {
	switch {
	case c.SweepInterval <= 0:
		return fmt.Errorf("server: sweep_interval must be positive, got %s", c.SweepInterval)
	case c.BackgroundTimeout <= 0:
		return fmt.Errorf("server: background_timeout must be positive, got %s", c.BackgroundTimeout)
	case c.ForwardTimeout <= 0:
		return fmt.Errorf("server: forward_timeout must be positive, got %s", c.ForwardTimeout)
	case c.MaxConcurrentStreams < 1 || c.MaxConcurrentStreams > StreamsMax:
		return fmt.Errorf("server: max-concurrent-streams: want 1..%d, got %d", StreamsMax, c.MaxConcurrentStreams)
	case c.MaxHeaderListBytes < HeaderListMinBytes || c.MaxHeaderListBytes > HeaderListMaxBytes:
		return fmt.Errorf("server: max-header-list-bytes: want %d..%d, got %d", HeaderListMinBytes, HeaderListMaxBytes, c.MaxHeaderListBytes)
	case c.RefusalHold < 0 || c.RefusalHold > RefusalHoldMax:
		return fmt.Errorf("server: refusal-hold: want 0..%s, got %s", RefusalHoldMax, c.RefusalHold)
	}
	return nil
}
