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
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		SweepInterval:     200 * time.Millisecond,
		BackgroundTimeout: 5 * time.Second,
		ForwardTimeout:    5 * time.Second,
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
	}
	return nil
}
