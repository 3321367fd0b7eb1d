package ha

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"metad/tlsconf"
)

// PeerTLS configures mutual TLS on the Raft peer transport. Server is used for the connections
// other members open to this one and must require and verify client certificates
// (tls.RequireAndVerifyClientCert); Client is used for the connections this member opens and
// presents this member's certificate. Both certificates name this member (a tlsconf member
// identity); tlsconf.Reloader's ServerConfig and ClientConfig give configs that follow rotation.
type PeerTLS struct {
	Server, Client *tls.Config
}

func (p *PeerTLS) validate() error {
	if p.Server == nil || p.Client == nil {
		return errors.New("peer_tls: server and client configs must both be set")
	}
	if p.Server.ClientAuth != tls.RequireAndVerifyClientCert {
		return fmt.Errorf("peer_tls: the server config must require and verify client certificates, not %v", p.Server.ClientAuth)
	}
	return nil
}

// The peer transport's pool and I/O bound, the same with and without TLS.
const (
	peerMaxPool = 5
	peerTimeout = 10 * time.Second // also bounds one TLS handshake on an accepted connection
)

// peerMaxInFlight is 1: AppendEntries to a follower are never pipelined, each waits for its
// answer. raft's pipeline (MaxRPCsInFlight >= 2) can deadlock: when a follower answers
// Success=false (its log does not match, as after a restart or a leader change), the pipeline's
// decoder stops reading answers, and the replication loop may still send one more entry, which
// then waits on a channel nobody reads; the pipeline is never closed, that follower gets no more
// entries (heartbeats still go out, so no election heals it), and Shutdown waits forever for the
// loop. A node's tests hung exactly so. raft's own documentation measures little gain from the
// pipeline; batching (ha's proposer) is what keeps the log busy.
const peerMaxInFlight = 1

// Reasons of metad_peer_rpcs_refused_total.
const (
	refusedHandshake = "handshake"       // the TLS handshake failed: plaintext, unknown CA, expired or no certificate
	refusedNotMember = "not_member"      // the verified certificate names no member
	refusedNoSender  = "no_sender"       // an RPC whose header names no sender
	refusedMismatch  = "sender_mismatch" // an RPC whose header names another member than the certificate
	refusedBadFrame  = "bad_frame"       // an RPC that is not one of Raft's or does not decode
)

var refusedReasons = []string{refusedHandshake, refusedNotMember, refusedNoSender, refusedMismatch, refusedBadFrame}

// newPeerTransport is the Raft transport listening on cfg.PeerListen and advertising adv (the
// bound address when nil): plain TCP when cfg.PeerTLS is nil, mutual TLS with the per-RPC sender
// check otherwise.
func newPeerTransport(cfg Config, adv net.Addr, hlog hclog.Logger, log *slog.Logger, refused *prometheus.CounterVec) (*raft.NetworkTransport, error) {
	if cfg.PeerTLS == nil {
		return raft.NewTCPTransportWithConfig(cfg.PeerListen, adv, &raft.NetworkTransportConfig{
			MaxPool: peerMaxPool, MaxRPCsInFlight: peerMaxInFlight, Timeout: peerTimeout, Logger: hlog,
		})
	}
	ln, err := net.Listen("tcp", cfg.PeerListen)
	if err != nil {
		return nil, err
	}
	s := &tlsStreamLayer{ln: ln, advertise: adv, cfg: *cfg.PeerTLS,
		gate: &peerGate{log: log, refused: refused, handshakeTimeout: peerTimeout}}
	if a, ok := s.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		_ = ln.Close()
		return nil, fmt.Errorf("%s is not an address other members can dial", s.Addr())
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s, MaxPool: peerMaxPool, MaxRPCsInFlight: peerMaxInFlight, Timeout: peerTimeout, Logger: hlog,
	}), nil
}

// tlsStreamLayer is the Raft transport's stream layer under PeerTLS. Accept hands back
// connections whose TLS handshake has not run yet (it runs on the connection's first Read, on the
// transport's goroutine for that connection, so a slow or silent peer never holds up the accept
// loop), each behind the sender gate (gateConn). Dial completes the handshake within raft's
// timeout and accepts only a server whose certificate names a member. Safe for concurrent use.
type tlsStreamLayer struct {
	ln        net.Listener
	advertise net.Addr // nil: the bound address
	cfg       PeerTLS
	gate      *peerGate
}

var _ raft.StreamLayer = (*tlsStreamLayer)(nil)

func (s *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return s.gate.wrap(tls.Server(c, s.cfg.Server)), nil
}

func (s *tlsStreamLayer) Close() error { return s.ln.Close() }

func (s *tlsStreamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

// Dial opens a TLS connection to the member at address. When the client config names no server,
// the dialed host is the name the server's certificate must hold (as tls.Dial does), which binds
// the address to a certificate its holder was issued for.
func (s *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	d := tls.Dialer{Config: s.cfg.Client}
	c, err := d.DialContext(ctx, "tcp", string(address))
	if err != nil {
		return nil, err
	}
	tc := c.(*tls.Conn)
	if id, err := peerIdentity(tc.ConnectionState()); err != nil || id.Kind != tlsconf.Member {
		_ = tc.Close()
		return nil, fmt.Errorf("%w: %s: %s", ErrPeerNotMember, address, describeIdentity(id, err))
	}
	return tc, nil
}

func peerIdentity(cs tls.ConnectionState) (tlsconf.Identity, error) {
	if len(cs.PeerCertificates) == 0 {
		return tlsconf.Identity{}, tlsconf.ErrNoIdentity
	}
	return tlsconf.IdentityOf(cs.PeerCertificates[0])
}

func describeIdentity(id tlsconf.Identity, err error) string {
	if err != nil {
		return err.Error()
	}
	return "the certificate names " + id.String()
}

// peerGate counts and logs what the gate refuses. Safe for concurrent use.
type peerGate struct {
	log              *slog.Logger
	refused          *prometheus.CounterVec // metad_peer_rpcs_refused_total{reason}
	handshakeTimeout time.Duration
}

func (g *peerGate) wrap(c *tls.Conn) *gateConn {
	gc := &gateConn{Conn: c, gate: g}
	gc.frame.br = bufio.NewReaderSize(c, 64<<10)
	gc.dec = codec.NewDecoder(&gc.frame, &codec.MsgpackHandle{})
	return gc
}

// refuse counts and logs one refusal on c and returns the error the transport's reader gets.
func (g *peerGate) refuse(c net.Conn, reason, member, claimed string, cause error) error {
	g.refused.WithLabelValues(reason).Inc()
	g.log.Warn("refused a peer connection", "reason", reason, "certificate_member", member, "claimed_sender", claimed,
		"remote", c.RemoteAddr().String(), "error", cause)
	_ = c.Close()
	return fmt.Errorf("%w (%s): %v", ErrPeerRefused, reason, cause)
}

// gateConn is an accepted peer connection that lets the transport read only RPCs sent by the
// member its peer's verified certificate names. Before the transport sees an RPC, the gate reads
// the RPC's frame (one type byte, then the msgpack-encoded request) with the transport's codec,
// checks the sender in its header, and then releases exactly the frame's bytes; the raw snapshot
// data that follows an InstallSnapshot request (its Size bytes) passes through unchecked, and the
// gate reads the next frame after it. An RPC that claims another sender, or that names none, closes
// the connection: it never reaches Raft.
//
// Read is called by one goroutine at a time (the transport's handler of this connection), which
// owns every field below; Write, Close and the deadlines are the TLS connection's.
type gateConn struct {
	*tls.Conn
	gate *peerGate

	member  string         // the member the peer's certificate names; "" until the handshake is done
	frame   frameReader    // over the TLS connection; records the bytes of the frame being read
	dec     *codec.Decoder // reads frame
	pending []byte         // the checked frame's bytes the transport has not read yet
	raw     int64          // snapshot bytes after the checked frame, still to pass through
	err     error          // once set, every Read returns it
}

// maxKeptFrame bounds the frame buffer a connection keeps between frames.
const maxKeptFrame = 1 << 20

func (c *gateConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(c.pending) == 0 && c.raw == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	if int64(len(p)) > c.raw {
		p = p[:c.raw]
	}
	n, err := c.frame.br.Read(p)
	c.raw -= int64(n)
	return n, err
}

// next reads and checks the next frame (completing the handshake first, on the first call).
func (c *gateConn) next() error {
	if c.member == "" {
		if err := c.handshake(); err != nil {
			return err
		}
	}
	if cap(c.frame.buf) > maxKeptFrame {
		c.frame.buf = nil
	}
	f, err := readFrame(&c.frame, c.dec)
	switch {
	case err == nil:
	case c.frame.err != nil:
		return c.frame.err // the connection failed or ended: not the peer's RPC to refuse
	default:
		return c.gate.refuse(c, refusedBadFrame, c.member, "", err)
	}
	switch f.sender {
	case c.member:
	case "":
		return c.gate.refuse(c, refusedNoSender, c.member, "", errors.New("the RPC's header names no sender"))
	default:
		return c.gate.refuse(c, refusedMismatch, c.member, f.sender,
			fmt.Errorf("an RPC from member %q claims to come from %q", c.member, f.sender))
	}
	c.pending, c.raw = f.bytes, f.snapshotBytes
	return nil
}

func (c *gateConn) handshake() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.gate.handshakeTimeout)
	defer cancel()
	if err := c.HandshakeContext(ctx); err != nil {
		return c.gate.refuse(c, refusedHandshake, "", "", err)
	}
	cs := c.ConnectionState()
	if len(cs.VerifiedChains) == 0 {
		return c.gate.refuse(c, refusedHandshake, "", "", errors.New("no verified client certificate"))
	}
	id, err := peerIdentity(cs)
	if err != nil || id.Kind != tlsconf.Member {
		return c.gate.refuse(c, refusedNotMember, "", "", errors.New(describeIdentity(id, err)))
	}
	c.member = id.Name
	return nil
}

// frameReader is the reader the gate's decoder reads a frame from: it keeps every byte the decoder
// consumes, and nothing more (the codec, given an io.ByteScanner and no buffer size of its own,
// asks for exactly the bytes each value needs, as the transport's own decoder does).
type frameReader struct {
	br  *bufio.Reader
	buf []byte // the bytes consumed since the frame began
	err error  // the last error br returned
}

func (r *frameReader) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	r.buf = append(r.buf, p[:n]...)
	if err != nil {
		r.err = err
	}
	return n, err
}

func (r *frameReader) ReadByte() (byte, error) {
	b, err := r.br.ReadByte()
	if err != nil {
		r.err = err
		return 0, err
	}
	r.buf = append(r.buf, b)
	return b, nil
}

func (r *frameReader) UnreadByte() error {
	if err := r.br.UnreadByte(); err != nil {
		return err
	}
	r.buf = r.buf[:len(r.buf)-1]
	return nil
}

// The RPC types of hashicorp/raft's network transport (net_transport.go): the first byte of a frame.
const (
	rpcAppendEntries uint8 = iota
	rpcRequestVote
	rpcInstallSnapshot
	rpcTimeoutNow
	rpcRequestPreVote
)

// rpcHeader is the part of a Raft RPC request the gate reads: the sender's RPCHeader (go-msgpack
// encodes an embedded struct's fields into the request's own map) and InstallSnapshot's Size;
// the codec skips every other field.
type rpcHeader struct {
	raft.RPCHeader
	Size int64
}

type frame struct {
	bytes         []byte // the frame as read: type byte and request
	sender        string // the request's RPCHeader.ID
	snapshotBytes int64  // InstallSnapshot: the raw bytes that follow the frame
}

// readFrame reads one frame from r with dec (a decoder over r) and returns it; the bytes returned
// alias r.buf until the next call.
func readFrame(r *frameReader, dec *codec.Decoder) (frame, error) {
	r.buf, r.err = r.buf[:0], nil
	t, err := r.ReadByte()
	if err != nil {
		return frame{}, err
	}
	if t > rpcRequestPreVote {
		return frame{}, fmt.Errorf("unknown RPC type %d", t)
	}
	var h rpcHeader
	if err := dec.Decode(&h); err != nil {
		return frame{}, fmt.Errorf("decode RPC type %d: %w", t, err)
	}
	f := frame{bytes: r.buf, sender: string(h.ID)}
	if t == rpcInstallSnapshot && h.Size > 0 {
		f.snapshotBytes = h.Size
	}
	return f, nil
}
