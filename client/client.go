package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"metad/proto/metadv1"
)

// Message size limits. A request is at most 16 MiB (SEMANTICS section 1); a response to a batch of
// 4096 keys with up to 16 replicas each stays well under the receive limit.
const (
	maxSendMsgBytes = 16 << 20
	maxRecvMsgBytes = 64 << 20
)

// HTTP/2 flow-control windows of a call and of a connection: the server's
// (server.StreamWindowBytes). Setting them turns off gRPC's bandwidth-delay estimator and the PING
// it sends for a call's data.
const (
	streamWindowBytes = 4 << 20
	connWindowBytes   = 16 << 20
)

// endpoint is shared freely: one node's address and the connection to it, immutable once built,
// and suspectUntil, which any call may read or write without a lock.
type endpoint struct {
	addr   string
	idx    int // position in Client.eps
	conn   *grpc.ClientConn
	md     metadv1.MetadataClient
	admin  metadv1.AdminClient
	health healthpb.HealthClient // the watchdog's probe
	// answers estimates how long the node takes to answer (watchdog.go); it sets how long a
	// watchdog waits for it.
	answers answerTime
	// suspectUntil is the Unix time in ns until which failover passes this endpoint by: a watchdog
	// found it silent (the node may be paused, stalled or cut off). 0, or
	// a time in the past, means healthy. A successful answer from it, or a leader hint naming it
	// in a successful answer, clears it.
	suspectUntil atomic.Int64
}

// suspect reports whether failover should pass ep by at now (Unix ns).
func (ep *endpoint) suspect(now int64) bool { return ep.suspectUntil.Load() > now }

// Client is safe for concurrent use by any number of goroutines; Close ends it. It is a
// connection to a metad cluster: one gRPC connection per known endpoint, every call sent to the
// endpoint it believes is the leader. See the package documentation for the retry rules.
type Client struct {
	cfg     Config
	id      UUID
	idBytes []byte // id in wire form, shared read-only by every request

	// unknownReasons holds the reasons of answers this client did not know, warned about once
	// each (noteUnknown).
	unknownReasons sync.Map

	// cur is the endpoint calls go to (the believed leader). Read without a lock on every call;
	// stored under mu.
	cur atomic.Pointer[endpoint]
	// closed is set once by Close, under mu.
	closed atomic.Bool

	// mu guards eps and byAddr and serializes changes of cur. It is a leaf lock: nothing else is
	// locked while it is held, and no I/O happens under it (grpc.NewClient does not connect).
	mu     sync.Mutex
	eps    []*endpoint // append-only; eps[i].idx == i
	byAddr map[string]*endpoint

	// sess numbers the writes of this client's session; nil with Config.NoSession (session.go).
	sess *session
}

// New returns a Client for cfg after applying the defaults (DefaultConfig) to its zero fields and
// validating it. It does not wait for any connection: the first call does.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, id: cfg.ClientID, byAddr: make(map[string]*endpoint)}
	if !cfg.NoSession {
		c.sess = newSession()
	}
	if c.id.IsZero() {
		c.id = NewUUID()
	}
	c.idBytes = c.id.Bytes()
	for _, addr := range cfg.Endpoints {
		if _, err := c.endpointLocked(addr); err != nil {
			c.Close()
			return nil, err
		}
	}
	c.cur.Store(c.eps[0])
	return c, nil
}

// ClientID is the id this client writes and mounts as.
func (c *Client) ClientID() UUID { return c.id }

// Endpoints returns the known endpoints: those configured, then any learned from the cluster.
func (c *Client) Endpoints() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.eps))
	for i, ep := range c.eps {
		out[i] = ep.addr
	}
	return out
}

// Leader returns the endpoint calls currently go to: the believed leader.
func (c *Client) Leader() string { return c.cur.Load().addr }

// closeSessionTimeout bounds Close's CloseSession calls: the sessions are closed for the cluster's
// sake (their kept answers go at once rather than at their ttl), so a cluster that does not answer
// in time only keeps them until they expire.
const closeSessionTimeout = time.Second

// Close closes the client's sessions (CloseSession, best effort, within closeSessionTimeout) and
// every connection. Calls in flight fail; later calls return ErrClosed.
func (c *Client) Close() error {
	if c.sess != nil && !c.closed.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), closeSessionTimeout)
		for _, id := range c.sess.drain() {
			_, _ = call(ctx, c, metadv1.MetadataClient.CloseSession, &metadv1.CloseSessionRequest{SessionId: id})
		}
		cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Swap(true) {
		return nil
	}
	var first error
	for _, ep := range c.eps {
		if err := ep.conn.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// dial opens a lazy connection to addr.
func (c *Client) dial(addr string) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if c.cfg.TLS != nil {
		creds = credentials.NewTLS(c.cfg.TLS)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if c.cfg.APIKey != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{header: "Bearer " + c.cfg.APIKey}))
	}
	conn, err := grpc.NewClient(addr, append(opts,
		grpc.WithConnectParams(grpc.ConnectParams{
			// Reconnect quickly to a restarted node; calls never wait for a connection (a node
			// that is down fails fast with Unavailable and the call moves on).
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: c.cfg.DialTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxSendMsgBytes), grpc.MaxCallRecvMsgSize(maxRecvMsgBytes)),
		grpc.WithInitialWindowSize(streamWindowBytes), grpc.WithInitialConnWindowSize(connWindowBytes),
	)...)
	if err != nil {
		return nil, fmt.Errorf("client: endpoint %q: %w", addr, err)
	}
	return conn, nil
}

// endpointLocked returns the endpoint for addr, adding it (and starting to connect) if it is new.
// Called with mu held, or from New before c is shared.
func (c *Client) endpointLocked(addr string) (*endpoint, error) {
	if ep, ok := c.byAddr[addr]; ok {
		return ep, nil
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	conn, err := c.dial(addr)
	if err != nil {
		return nil, err
	}
	conn.Connect()
	ep := &endpoint{addr: addr, idx: len(c.eps), conn: conn,
		md: metadv1.NewMetadataClient(conn), admin: metadv1.NewAdminClient(conn), health: healthpb.NewHealthClient(conn)}
	c.eps = append(c.eps, ep)
	c.byAddr[addr] = ep
	return ep, nil
}

// setLeader makes addr (added if new) the endpoint calls go to. Its callers learned addr from a
// successful answer (a Ping, a TransferLeader, a forwarding follower's hint), which is fresh
// evidence that the node answers, so any suspicion of it is cleared.
func (c *Client) setLeader(addr string) error {
	if addr == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ep, err := c.endpointLocked(addr)
	if err != nil {
		return err
	}
	ep.suspectUntil.Store(0)
	c.cur.Store(ep)
	return nil
}

// redirect makes addr (added if new) the endpoint calls go to after a NOT_LEADER answer named it,
// unless addr is suspect: a node that has not heard of an election names the leader it last knew,
// which may be the very node that stopped answering. It reports whether calls now go to addr.
func (c *Client) redirect(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ep, ok := c.byAddr[addr]; ok && ep.suspect(time.Now().UnixNano()) {
		return false
	}
	ep, err := c.endpointLocked(addr)
	if err != nil {
		return false
	}
	c.cur.Store(ep)
	return true
}

// advance moves calls from failed to the next endpoint in the list that is not suspect, unless
// another call already moved them elsewhere (then that choice stands). When every other endpoint
// is suspect it goes back to failed itself if failed is not, and otherwise to the endpoint whose
// suspicion ends first.
func (c *Client) advance(failed *endpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur.Load() != failed {
		return
	}
	now := time.Now().UnixNano()
	var first *endpoint // among suspects, the one whose suspicion ends first
	for i := 1; i <= len(c.eps); i++ {
		ep := c.eps[(failed.idx+i)%len(c.eps)]
		if !ep.suspect(now) {
			c.cur.Store(ep)
			return
		}
		if first == nil || ep.suspectUntil.Load() < first.suspectUntil.Load() {
			first = ep
		}
	}
	c.cur.Store(first)
}

// do runs attempt against the believed leader, retrying per the package rules until it succeeds,
// fails deterministically, runs out of retries, or would outlive ctx. The error returned is the
// last attempt's, unwrapped.
func (c *Client) do(ctx context.Context, attempt func(context.Context, *endpoint) error) error {
	_, err := c.doCount(ctx, attempt)
	return err
}

// doCount is do that also reports how many attempts were made (0 on a closed client). More than
// one means an earlier attempt failed in a way that may have left its command committed.
func (c *Client) doCount(ctx context.Context, attempt func(context.Context, *endpoint) error) (int, error) {
	if c.closed.Load() {
		return 0, ErrClosed
	}
	delay := c.cfg.RetryBackoff.Initial
	redirected := false // the previous retry was a redirect
	for n := 0; ; n++ {
		ep := c.cur.Load()
		silent, err := c.try(ctx, ep, attempt)
		if err == nil {
			ep.suspectUntil.Store(0)
			return n + 1, nil
		}
		c.noteUnknown(err, ep.addr)
		if ctx.Err() != nil || n >= c.cfg.MaxRetries || c.closed.Load() {
			return n + 1, err
		}
		if silent {
			// The node stopped answering anything (paused, stalled, cut off), and it may stay so
			// much longer than an election takes. Go elsewhere at once (the attempt already
			// waited), unless the attempt made progress that a retry would repeat, and keep
			// failover away from it for a while.
			ep.suspectUntil.Store(time.Now().Add(c.suspectFor()).UnixNano())
			redirected = false
			c.advance(ep)
			if errors.As(err, new(*noRetryError)) {
				return n + 1, err
			}
			continue
		}
		act, leader := classify(err, ep.addr)
		switch act {
		case actStop:
			return n + 1, err
		case actRedirect:
			if !c.redirect(leader) {
				redirected = false
				c.advance(ep)
				break
			}
			if !redirected {
				// The first redirect in a row goes at once; a second means the nodes disagree
				// (an election is under way), so it waits like a failover.
				redirected = true
				continue
			}
		case actFailover:
			redirected = false
			c.advance(ep)
		}
		if !sleepCtx(ctx, jitter(delay)) {
			return n + 1, err
		}
		delay = min(2*delay, c.cfg.RetryBackoff.Max)
	}
}

// suspectFor is how long failover passes by an endpoint after it was found silent: long
// enough to cover an election and the first calls after it, short enough that a node back from a
// pause is used again soon when the others fail.
func (c *Client) suspectFor() time.Duration { return suspectAttempts * c.cfg.AttemptTimeout }

// suspectAttempts is suspectFor in attempt timeouts.
const suspectAttempts = 5

// jitter draws a delay uniformly from [d/2, d].
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleepCtx waits d, or reports false at once if ctx would expire first, or false when ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// call is one retried unary Metadata RPC.
func call[Req, Resp any](ctx context.Context, c *Client,
	rpc func(metadv1.MetadataClient, context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	resp, _, err := callCount(ctx, c, rpc, req)
	return resp, err
}

// callCount is call that also reports the attempts made (see doCount).
func callCount[Req, Resp any](ctx context.Context, c *Client,
	rpc func(metadv1.MetadataClient, context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, int, error) {
	var resp Resp
	n, err := c.inSession(ctx, req, func() (int, error) {
		return c.doCount(ctx, func(ctx context.Context, ep *endpoint) error {
			var hdr metadata.MD
			r, err := rpc(ep.md, ctx, req, grpc.Header(&hdr))
			if err == nil {
				resp = r
				c.followHint(ep, hdr)
			}
			return err
		})
	})
	return resp, n, err
}

// leaderHeader is the response header a follower sets on a call it forwarded to the leader
// (server.LeaderHeader): the leader's client address.
const leaderHeader = "x-metad-leader"

// followHint switches to the leader a forwarding follower named, so the next call skips the hop.
// The hint comes with a successful answer that leader gave just now, so it clears any suspicion.
func (c *Client) followHint(ep *endpoint, hdr metadata.MD) {
	if v := hdr.Get(leaderHeader); len(v) > 0 && v[0] != "" && v[0] != ep.addr && c.cur.Load() == ep {
		_ = c.setLeader(v[0])
	}
}

// callAdmin is one retried unary Admin RPC.
func callAdmin[Req, Resp any](ctx context.Context, c *Client,
	rpc func(metadv1.AdminClient, context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	var resp Resp
	_, err := c.inSession(ctx, req, func() (int, error) {
		return c.doCount(ctx, func(ctx context.Context, ep *endpoint) error {
			r, err := rpc(ep.admin, ctx, req)
			if err == nil {
				resp = r
			}
			return err
		})
	})
	return resp, err
}
