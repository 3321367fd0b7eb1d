package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvEndpoints is the environment variable that overrides the default endpoint list: client (gRPC)
// addresses, host:port, separated by commas.
const EnvEndpoints = "METAD_ENDPOINTS"

// Defaults. Every zero field of a Config takes the matching default in New.
const (
	// DefaultDialTimeout bounds one connection attempt to one endpoint.
	DefaultDialTimeout = 3 * time.Second
	// DefaultBackoffInitial is the first retry delay after an UNAVAILABLE answer.
	DefaultBackoffInitial = 20 * time.Millisecond
	// DefaultBackoffMax caps the retry delay.
	DefaultBackoffMax = 500 * time.Millisecond
	// DefaultMaxRetries is how many times one call is retried after its first attempt.
	DefaultMaxRetries = 20
	// DefaultAttemptTimeout is how long a node may leave an attempt unanswered without answering
	// a health probe either before the attempt is abandoned. It is derived from metad's default
	// Raft timing: a follower that hears nothing from its leader for the heartbeat timeout (400 ms,
	// randomized up to 800 ms) starts an election, which takes one more round trip and the new
	// leader's term-start barrier; so a node silent for a second is, as far as this client can
	// tell, as good as gone, and the cluster has a new leader by then. A cluster run with longer
	// Raft timeouts wants a proportionally longer value.
	DefaultAttemptTimeout = time.Second
)

// defaultEndpoints are the client ports of the local three-node cluster of `make run`.
var defaultEndpoints = []string{"127.0.0.1:6001", "127.0.0.1:6002", "127.0.0.1:6003"}

// Backoff is the retry delay: the n-th retry after a failover waits about Initial x 2^n, at most
// Max, with jitter (a uniform draw from [d/2, d]).
type Backoff struct {
	// Initial is the delay before the first retry. Default 20 ms.
	Initial time.Duration
	// Max caps the delay. Default 500 ms.
	Max time.Duration
}

// Config configures a Client. The zero value of every field means its default.
type Config struct {
	// Endpoints are the client (gRPC) addresses of the cluster's nodes, host:port. Calls go to the
	// first one until a node names another leader. Default: DefaultEndpoints().
	Endpoints []string
	// DialTimeout bounds one connection attempt to one endpoint (connections are made lazily and
	// re-made in the background). Default 3 s.
	DialTimeout time.Duration
	// RetryBackoff is the delay between retries after UNAVAILABLE or a connection error.
	RetryBackoff Backoff
	// MaxRetries is how many times one call is retried after its first attempt; the caller's
	// context deadline bounds the retries too. 0 means the default (20); a negative value disables
	// retries.
	MaxRetries int
	// AttemptTimeout tells a silent node from a slow one. An attempt that has heard nothing from
	// its node for half of it makes the client probe the node's gRPC health on the same
	// connection. Any answer, and any progress of the attempt (a stream message), is a sign of
	// life: the attempt goes on under the caller's deadline alone, probed again half an
	// AttemptTimeout after each, so a slow leader's write is never retried elsewhere. A node that
	// shows no sign of life for AttemptTimeout is silent (paused, stalled, cut off): the attempt
	// is abandoned, the call moves to the next endpoint at once, and failover passes the silent
	// one by for five attempt timeouts. That bound stretches to half an AttemptTimeout plus the
	// node's measured answer time when this is longer (a busy node is not called silent for
	// answering as it always does), to at most five attempt timeouts; a long call's (Long) is five
	// times it. 0 means the default (1 s); a negative value turns the watch off (an attempt then
	// lasts as long as the caller's deadline).
	AttemptTimeout time.Duration
	// NoSession makes the client write without a session: each write at most once, its outcome
	// unknown when its answer is lost (see the package documentation, Sessions). By default the
	// client opens a session with its first write and every write is exactly once.
	NoSession bool
	// Logger receives the client's warnings: an answer with a reason this client does not know
	// (a member of a newer release), once per reason. Default: slog.Default().
	Logger *slog.Logger
	// ClientID identifies this client to the cluster (the writer of its puts, the owner of its
	// segments). The zero UUID means a random one, chosen in New.
	ClientID UUID
	// TLS, when set, makes every connection TLS with this configuration (TLSFromFiles builds one
	// from PEM files; the server name defaults to each endpoint's host). nil: plaintext TCP.
	TLS *tls.Config
	// APIKey, when set, is sent on every call as the gRPC metadata `authorization: Bearer <key>`.
	// It needs TLS: New refuses a key without it (ErrKeyWithoutTLS).
	APIKey string
}

// DefaultConfig returns the configuration New uses for zero fields: DefaultEndpoints(), a 3 s dial
// timeout, retries after 20 ms doubling up to 500 ms, at most 20 retries, attempts of at most 1 s,
// a random client id.
func DefaultConfig() Config {
	return Config{
		Endpoints:      DefaultEndpoints(),
		DialTimeout:    DefaultDialTimeout,
		RetryBackoff:   Backoff{Initial: DefaultBackoffInitial, Max: DefaultBackoffMax},
		MaxRetries:     DefaultMaxRetries,
		AttemptTimeout: DefaultAttemptTimeout,
	}
}

// DefaultEndpoints returns the endpoints named by METAD_ENDPOINTS, or, when it is unset or empty,
// 127.0.0.1:6001, 127.0.0.1:6002 and 127.0.0.1:6003.
func DefaultEndpoints() []string {
	if eps := SplitEndpoints(os.Getenv(EnvEndpoints)); len(eps) > 0 {
		return eps
	}
	return append([]string(nil), defaultEndpoints...)
}

// SplitEndpoints splits a comma-separated endpoint list, trimming spaces and dropping empty entries.
func SplitEndpoints(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if len(c.Endpoints) == 0 {
		c.Endpoints = DefaultEndpoints()
	} else {
		c.Endpoints = append([]string(nil), c.Endpoints...)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.RetryBackoff.Initial == 0 {
		c.RetryBackoff.Initial = DefaultBackoffInitial
	}
	if c.RetryBackoff.Max == 0 {
		c.RetryBackoff.Max = max(DefaultBackoffMax, c.RetryBackoff.Initial)
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	return c
}

// Validate reports the first problem of a configuration whose defaults are applied (New applies
// them before calling it).
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("client: no endpoints")
	}
	seen := make(map[string]bool, len(c.Endpoints))
	for _, e := range c.Endpoints {
		if err := checkEndpoint(e); err != nil {
			return fmt.Errorf("client: endpoint %q: %v", e, err)
		}
		if seen[e] {
			return fmt.Errorf("client: endpoint %q listed twice", e)
		}
		seen[e] = true
	}
	if c.DialTimeout <= 0 {
		return fmt.Errorf("client: DialTimeout must be positive, got %v", c.DialTimeout)
	}
	if c.RetryBackoff.Initial <= 0 {
		return fmt.Errorf("client: RetryBackoff.Initial must be positive, got %v", c.RetryBackoff.Initial)
	}
	if c.RetryBackoff.Max < c.RetryBackoff.Initial {
		return fmt.Errorf("client: RetryBackoff.Max (%v) is less than RetryBackoff.Initial (%v)",
			c.RetryBackoff.Max, c.RetryBackoff.Initial)
	}
	if c.APIKey != "" {
		if c.TLS == nil {
			return ErrKeyWithoutTLS
		}
		if err := validAPIKey(c.APIKey); err != nil {
			return err
		}
	}
	return nil
}

// checkEndpoint checks that e is host:port as the client dials it: no scheme or path, a host (a
// name, an IPv4 address, or an IPv6 address in brackets) and a port in 1..65535. A URL such as
// https://host:port would otherwise be taken apart as host "https" and fail only at the first
// call, after its whole timeout, as a name that does not resolve.
func checkEndpoint(e string) error {
	host, port, err := net.SplitHostPort(e)
	if err != nil || strings.ContainsAny(e, "/ ") {
		return errors.New("want host:port (no scheme, no path)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q not in 1..65535", port)
	}
	if host == "" {
		return errors.New("no host")
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return fmt.Errorf("host %q is not an IPv6 address", host)
	}
	return nil
}
