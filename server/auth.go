package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/tlsconf"
)

// Authentication (Config.Authenticate): who makes each call of the Metadata and Admin services.
// gRPC health and reflection stay open. A call's caller is, in this order:
//
//  1. the principal its connection's verified client certificate names (tlsconf.IdentityOf);
//  2. on a connection whose certificate names a member: the principal that member forwarded the
//     call for (principalKey, keyIDKey; see forward.go), or the member itself when it forwarded
//     none and sends no API key. Both only while the member speaks for the cluster (memberStanding):
//     its certificate is a member certificate (tlsconf.MemberOf: serverAuth among its extended key
//     usages, which principals' certificates lack) and its name is a server of the Raft
//     configuration as this node knows it. Otherwise a forwarded principal is UNAUTHENTICATED and
//     the member as itself PERMISSION_DENIED: a member removed from the cluster, or one never
//     added, whose certificate is still valid, gets nothing that its certificate alone would not;
//  3. the API key in the call's "authorization: Bearer <token>" metadata (Service.VerifyToken).
//
// The configuration is read at every call that relies on it (Node.InConfiguration: the latest
// configuration this node has appended, committed or not), so a removal takes effect on a node as
// soon as its log holds it. A member forwards only to the node it takes for the leader, and a
// leader's configuration holds every member it replicates to, so a member added moments ago is
// believed by the leader that added it while a lagging follower may refuse it.
//
// No credentials, or a key that does not verify, is UNAUTHENTICATED. The service then authorizes
// the caller for the call (Service.Authorize: roles, tenant scoping; PERMISSION_DENIED), before it
// sees the request. A follower whose state does not hold the call's key (a key created moments ago)
// never answers from that state: it forwards the call to the leader with its original
// authorization metadata (a deferred call, see unary), and the leader authenticates it.
//
// A connection is authenticated once: TLSCredentials gives each connection it accepts a connAuth
// (in its AuthInfo, connInfo), which keeps its certificate's identity and each API key it
// verified, with the auth revision it was verified at; a key is verified again (hashed) only when
// the auth state changed or the key has expired since. A server whose connections come from other
// credentials authenticates every call afresh.

// Metadata keys of authentication.
const (
	authorizationKey = "authorization"
	// principalKey names the principal a member forwarded the call for; believed only from a
	// connection whose member certificate names a member of the configuration.
	principalKey = "x-metad-principal"
	// keyIDKey names the API key that principal authenticated with, if it used one.
	keyIDKey = "x-metad-key-id"
)

// maxConnKeys bounds the API keys one connection's cache keeps (a client uses one).
const maxConnKeys = 8

// connAuth is safe for concurrent use: the authentication state of one connection.
type connAuth struct {
	once   sync.Once // computes id, idErr and certErr from the connection's TLS state, on its first call
	id     tlsconf.Identity
	idErr  error
	serial string // the certificate's serial number, hex
	// certErr: for a member identity, why the certificate is no member certificate
	// (tlsconf.MemberOf); nil when it is one.
	certErr error

	mu   sync.Mutex // guards keys; a leaf: nothing is acquired while it is held
	keys map[string]service.Verified
}

// connInfo is the credentials.AuthInfo of a connection that TLSCredentials accepted: gRPC's TLS
// information and the connection's authentication state. A plain value, set once at the
// handshake; auth is safe for concurrent use. It carries the state with the connection itself,
// where a stats.Handler would cost every call gRPC's per-call events (a copy of the call's
// metadata, and a report at each step of the call).
type connInfo struct {
	credentials.TLSInfo
	auth *connAuth
}

// AuthOptions returns the gRPC server options that authentication needs beyond ServerOptions,
// UnaryInterceptor and the credentials (TLSCredentials, which caches authentication per
// connection): the stream interceptor (snapshot streams). cmd/metad adds them to every server it
// gives Register.
func (s *Server) AuthOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainStreamInterceptor(s.StreamInterceptor())}
}

// openMethod reports whether method is served to anyone (gRPC health and reflection).
func openMethod(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.Health/") || strings.HasPrefix(method, "/grpc.reflection.")
}

// authKey carries a call's authentication outcome from the interceptor to the handler (forwarding).
type authKey struct{}

// authed is a plain value: how a call was authenticated.
type authed struct {
	caller service.Caller
	// deferred: this follower's state does not know the call's API key; the call goes to the
	// leader with token, unauthorized here.
	deferred bool
	token    string
	// certSerial is the serial number (hex) of the client certificate that named the caller;
	// via the member whose connection forwarded the call (for the audit log).
	certSerial string
	via        string
}

func authedOf(ctx context.Context) (authed, bool) {
	a, ok := ctx.Value(authKey{}).(authed)
	return a, ok
}

// deferredAuth reports whether the call must be forwarded to the leader for authentication.
func deferredAuth(ctx context.Context) bool {
	a, ok := authedOf(ctx)
	return ok && a.deferred
}

// admit authenticates and authorizes a call of method with req (nil for a stream), and returns
// the context the handler runs with.
func (s *Server) admit(ctx context.Context, method string, req proto.Message) (context.Context, error) {
	a, err := s.authenticate(ctx)
	if err != nil {
		return ctx, toStatus(err)
	}
	return s.authorizeAs(ctx, a, method, req)
}

// authorizeAs authorizes a call of method with req for the caller authentication found (a), and
// returns the context the handler runs with: a deferred call goes on unauthorized (the leader
// authenticates it).
func (s *Server) authorizeAs(ctx context.Context, a authed, method string, req proto.Message) (context.Context, error) {
	if a.deferred {
		s.m.authDeferred.Inc()
		return context.WithValue(ctx, authKey{}, a), nil
	}
	ctx = context.WithValue(ctx, authKey{}, a) // a refusal's audit line names the caller too
	actx, err := s.authz.Authorize(ctx, a.caller, method, req)
	if err != nil {
		s.m.authFailures.WithLabelValues("denied").Inc()
		return ctx, toStatus(err)
	}
	return actx, nil
}

// authenticate finds the call's caller (the order in the file's comment).
func (s *Server) authenticate(ctx context.Context) (authed, error) {
	p, _ := peer.FromContext(ctx)
	var ca *connAuth
	if ci, ok := peerAuthInfo(p).(connInfo); ok {
		ca = ci.auth
	} else { // not a connection of TLSCredentials: nothing is cached
		ca = &connAuth{}
	}
	ca.once.Do(func() { ca.identify(p) })
	if ca.idErr == nil && ca.id.Kind == tlsconf.Principal {
		return authed{caller: service.Caller{Principal: ca.id.Name}, certSerial: ca.serial}, nil
	}
	var via string
	if ca.idErr == nil && ca.id.Kind == tlsconf.Member && isForwarded(ctx) {
		via = ca.id.Name
	}
	token, hasToken := bearer(incoming(ctx, authorizationKey))
	if ca.idErr == nil && ca.id.Kind == tlsconf.Member {
		if p := incoming(ctx, principalKey); p != "" {
			if err := s.memberStanding(ca); err != nil {
				s.m.authFailures.WithLabelValues("not_member").Inc()
				return authed{}, fmt.Errorf("%w: the principal %q this connection forwards the call for is not believed: %v", service.ErrUnauthenticated, p, err)
			}
			return authed{caller: service.Caller{Principal: p, KeyID: incoming(ctx, keyIDKey)}, via: via}, nil
		}
		if !hasToken {
			if err := s.memberStanding(ca); err != nil {
				s.m.authFailures.WithLabelValues("not_member").Inc()
				return authed{}, fmt.Errorf("%w: %v", service.ErrPermissionDenied, err)
			}
			return authed{caller: service.Caller{Member: ca.id.Name}, certSerial: ca.serial}, nil
		}
	}
	if !hasToken {
		s.m.authFailures.WithLabelValues("no_credentials").Inc()
		why := "no client certificate"
		if ca.idErr != nil && !errors.Is(ca.idErr, errNoCertificate) {
			why = "the client certificate names no principal (" + ca.idErr.Error() + ")"
		}
		return authed{}, fmt.Errorf("%w: no credentials: %s and no \"authorization: Bearer <API key>\" metadata", service.ErrUnauthenticated, why)
	}
	v, err := s.verify(ca, token)
	if err != nil {
		if errors.Is(err, service.ErrUnknownKey) && !s.node.IsLeader() && !isForwarded(ctx) {
			return authed{deferred: true, token: token}, nil
		}
		s.m.authFailures.WithLabelValues(failureReason(err)).Inc()
		return authed{}, err
	}
	return authed{caller: v.Caller, token: token, via: via}, nil
}

// memberStanding says why the member that connection ca's certificate names does not speak for the
// cluster now (nil when it does): its certificate is no member certificate (connAuth.certErr), or
// its name is not a server of this node's Raft configuration.
func (s *Server) memberStanding(ca *connAuth) error {
	if ca.certErr != nil {
		return ca.certErr
	}
	if !s.node.InConfiguration(ca.id.Name) {
		return fmt.Errorf("the client certificate names member %s, which is not in this node's Raft configuration "+
			"(removed, or never added): a member certificate speaks for the cluster only while its member is in it", ca.id.Name)
	}
	return nil
}

// verify returns token's verification from the connection's cache while it holds, verifying it
// (a SHA-256 in the service) when it is not cached or no longer holds.
func (s *Server) verify(ca *connAuth, token string) (service.Verified, error) {
	ca.mu.Lock()
	v, ok := ca.keys[token]
	ca.mu.Unlock()
	if ok && !s.authz.AuthStale(v) {
		return v, nil
	}
	s.m.authVerifications.Inc()
	v, err := s.authz.VerifyToken(token)
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if err != nil {
		delete(ca.keys, token)
		return v, err
	}
	if ca.keys == nil || len(ca.keys) >= maxConnKeys {
		ca.keys = make(map[string]service.Verified)
	}
	ca.keys[token] = v
	return v, nil
}

// failureReason is the metric label of an authentication failure.
func failureReason(err error) string {
	switch {
	case errors.Is(err, service.ErrUnknownKey):
		return "unknown_key"
	case errors.Is(err, service.ErrKeyExpired):
		return "expired_key"
	}
	return "bad_key"
}

// errNoCertificate: the connection presented no verified client certificate.
var errNoCertificate = errors.New("no verified client certificate")

// peerAuthInfo is p's AuthInfo, nil when p is.
func peerAuthInfo(p *peer.Peer) credentials.AuthInfo {
	if p == nil {
		return nil
	}
	return p.AuthInfo
}

// identify sets the connection's identity (id, idErr, certErr) from the verified client
// certificate of its peer p (nil if none).
func (ca *connAuth) identify(p *peer.Peer) {
	leaf, err := peerLeaf(p)
	if err != nil {
		ca.idErr = err
		return
	}
	ca.serial = leaf.SerialNumber.Text(16)
	if ca.id, ca.idErr = tlsconf.IdentityOf(leaf); ca.idErr == nil && ca.id.Kind == tlsconf.Member {
		_, ca.certErr = tlsconf.MemberOf(leaf)
	}
}

// peerLeaf is the verified client certificate of the call's connection (its peer p, nil if none).
func peerLeaf(p *peer.Peer) (*x509.Certificate, error) {
	var ti credentials.TLSInfo
	switch ai := peerAuthInfo(p).(type) {
	case connInfo:
		ti = ai.TLSInfo
	case credentials.TLSInfo:
		ti = ai
	default:
		return nil, errNoCertificate
	}
	if len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return nil, errNoCertificate
	}
	return ti.State.VerifiedChains[0][0], nil
}

// bearer returns the API key of an "authorization" value "Bearer <token>".
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// incoming is the first value of the call's metadata for key (lower case), or "". It looks the
// one key up rather than copying the whole metadata (metadata.FromIncomingContext), which a call
// would otherwise pay for on every authentication.
func incoming(ctx context.Context, key string) string {
	if vs := metadata.ValueFromIncomingContext(ctx, key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// forwardMD is the authentication metadata a forward of the call in ctx carries to the leader: the
// original authorization of a deferred call, or the principal (and key id) it was authenticated
// as. A member calling as itself needs none: the forward's own certificate names a member.
func forwardMD(ctx context.Context) []string {
	a, ok := authedOf(ctx)
	switch {
	case !ok:
		return nil
	case a.deferred:
		return []string{authorizationKey, "Bearer " + a.token}
	case a.caller.Principal != "":
		kv := []string{principalKey, a.caller.Principal}
		if a.caller.KeyID != "" {
			kv = append(kv, keyIDKey, a.caller.KeyID)
		}
		return kv
	}
	return nil
}

// StreamInterceptor authenticates and authorizes the streaming calls (the snapshot streams) as
// UnaryInterceptor does the unary ones.
func (s *Server) StreamInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		ctx, err := s.stream(srv, ss, info, handler)
		if s.cfg.Audit != nil && audited(info.FullMethod, err) {
			s.audit(ctx, info.FullMethod, nil, err, time.Since(start), nil)
		}
		return s.holdRefusal(ctx, err)
	}
}

// stream runs a streaming call, authenticated and authorized when authentication is on, and
// returns its outcome with the context it ran with (carrying its caller when one was found).
func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (context.Context, error) {
	if !s.cfg.Authenticate || openMethod(info.FullMethod) {
		return ss.Context(), handler(srv, ss)
	}
	if info.IsServerStream && !info.IsClientStream && requestRule(info.FullMethod) {
		// The credentials are checked now, before the stream waits for its request: a stream
		// with none, or with a key that does not verify, ends at once.
		a, err := s.authenticate(ss.Context())
		if err != nil {
			return ss.Context(), toStatus(err)
		}
		if a.deferred { // a stream is never forwarded: the leader cannot authenticate it instead
			s.m.authDeferred.Inc()
			return ss.Context(), status.Error(codes.Unavailable, deferredStreamRefusal)
		}
		ctx := context.WithValue(ss.Context(), authKey{}, a)
		release, err := s.openStream(ctx)
		if err != nil {
			return ctx, err
		}
		defer release()
		as := &admitStream{ServerStream: ss, s: s, method: info.FullMethod, who: a, ctx: ctx}
		err = handler(srv, as)
		return as.ctx, err
	}
	ctx, err := s.admit(ss.Context(), info.FullMethod, nil)
	if err != nil {
		return ctx, err
	}
	return ctx, handler(srv, authedStream{ss, ctx})
}

// deferredStreamRefusal answers a stream whose API key this member's state does not hold yet.
const deferredStreamRefusal = "this member does not know the caller's API key yet (it is catching up); retry, or watch through another member"

// requestRule reports whether a streaming method's rule reads its request (the tenant it names):
// Watch. Such a stream is authenticated when it opens and authorized when its request arrives
// (admitStream).
func requestRule(method string) bool { return method == metadv1.Metadata_Watch_FullMethodName }

// admitStream is a server-streaming call whose caller was authenticated when it opened (who) and
// which is authorized with its request: its one RecvMsg (which gRPC's handler makes before it
// calls the method) authorizes the request, and the handler's context carries the outcome.
type admitStream struct {
	grpc.ServerStream
	s      *Server
	method string
	who    authed
	ctx    context.Context
}

func (a *admitStream) RecvMsg(m any) error {
	if err := a.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if d, ok := m.(*decoded); ok { // the server's codec (codec.go): the request is inside
		if d.err != nil {
			return nil // decodeRequest answers it InvalidArgument
		}
		m = d.m
	}
	req, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "%s: request of type %T", a.method, m)
	}
	ctx, err := a.s.authorizeAs(a.ServerStream.Context(), a.who, a.method, req)
	a.ctx = ctx
	return err
}

func (a *admitStream) Context() context.Context { return a.ctx }

// authedStream is a handler's stream whose context carries its call's authentication.
type authedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s authedStream) Context() context.Context { return s.ctx }

// readmit authenticates again a deferred call that is to run here after all (this node took
// office since): the leader's state decides.
func (s *Server) readmit(ctx context.Context, req proto.Message) (context.Context, error) {
	method, _ := grpc.Method(ctx)
	return s.admit(context.WithValue(ctx, authKey{}, authed{}), method, req)
}

// limited returns the caller of the call in ctx when the call counts against its principal's rate
// limits here: a call of a principal that this member was sent by the client itself. A member as
// itself, a call a member forwarded for a principal (the member it was sent to charged it) and a
// deferred call are not.
func limited(ctx context.Context) (service.Caller, bool) {
	a, ok := authedOf(ctx)
	if !ok || a.deferred || a.via != "" || a.caller.Principal == "" {
		return service.Caller{}, false
	}
	return a.caller, true
}

// throttle charges the authorized call in ctx, with req, to its principal's rate limits
// (service.Throttle): a RESOURCE_EXHAUSTED status with RATE_LIMITED and a retry-after when it is
// over one.
func (s *Server) throttle(ctx context.Context, req proto.Message) error {
	c, ok := limited(ctx)
	if !ok {
		return nil
	}
	return toStatus(s.svc.Throttle(c, req))
}

// openStream charges the stream opened in ctx (its caller authenticated) to its principal's rate
// limits: one call, and one of its streams while it stays open (release, called once it ends).
func (s *Server) openStream(ctx context.Context) (release func(), err error) {
	c, ok := limited(ctx)
	if !ok {
		return func() {}, nil
	}
	if err := s.svc.Throttle(c, nil); err != nil {
		return nil, toStatus(err)
	}
	release, err = s.svc.OpenStream(c)
	if err != nil {
		return nil, toStatus(err)
	}
	return release, nil
}
