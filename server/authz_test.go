package server

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
)

// authNode is one Server with authentication on, over a fakeBackend, on a TLS loopback listener
// whose certificate names member name and which verifies client certificates when given.
type authNode struct {
	b    *fakeBackend
	srv  *Server
	addr string
	p    *pki
}

func startAuth(t testing.TB, p *pki, b *fakeBackend, name string) *authNode {
	t.Helper()
	return startAuthWith(t, p, b, name, nil)
}

// startAuthWith is startAuth with the configuration changed by mut first (nil: none).
func startAuthWith(t testing.TB, p *pki, b *fakeBackend, name string, mut func(*config)) *authNode {
	t.Helper()
	cfg := testConfig()
	if mut != nil {
		mut(&cfg)
	}
	cfg.Now = b.Now
	cfg.Server.Authenticate = true
	cfg.Server.DialCredentials = credentials.NewTLS(p.clientTLS(p.member(t, name)))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lead := service.NewLeadership(b.Store, cfg.Now)
	b.SetLeadershipHook(lead.Changed)
	svc, err := service.New(b, b.FSM(), lead, cfg.Config, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(svc, b, cfg.Server, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc.OnLeadership(srv.SetLeader)
	stls := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.member(t, name)},
		ClientCAs: p.pool, ClientAuth: tls.VerifyClientCertIfGiven}
	opts := append(srv.ServerOptions(), grpc.Creds(TLSCredentials(stls)), grpc.ChainUnaryInterceptor(srv.UnaryInterceptor()))
	g := grpc.NewServer(append(opts, srv.AuthOptions()...)...)
	srv.Register(g)
	go func() { _ = g.Serve(lis) }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { svc.Run(ctx); done <- struct{}{} }()
	go func() { srv.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		g.Stop()
		srv.Close()
	})
	return &authNode{b: b, srv: srv, addr: lis.Addr().String(), p: p}
}

// conn dials the node with certs as the client certificate (none: no certificate).
func (n *authNode) conn(t testing.TB, certs ...tls.Certificate) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(n.addr, grpc.WithTransportCredentials(credentials.NewTLS(n.p.clientTLS(certs...))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// clients of a connection.
type clients struct {
	meta  metadv1.MetadataClient
	admin metadv1.AdminClient
}

func (n *authNode) clients(t testing.TB, certs ...tls.Certificate) clients {
	cc := n.conn(t, certs...)
	return clients{meta: metadv1.NewMetadataClient(cc), admin: metadv1.NewAdminClient(cc)}
}

// withKey is a context whose calls carry token as their API key (and kv as more metadata).
func withKey(t *testing.T, token string, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(tctx(t), append([]string{"authorization", "Bearer " + token}, kv...)...)
}

// wantCode fails the test unless err is a status of code whose message holds every one of msgs.
func wantCode(t *testing.T, err error, code codes.Code, msgs ...string) {
	t.Helper()
	st := status.Convert(err)
	if err == nil || st.Code() != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, m := range msgs {
		if !strings.Contains(st.Message(), m) {
			t.Fatalf("message %q does not say %q", st.Message(), m)
		}
	}
}

func metaCount(t *testing.T, n *authNode) (proposals, barriers int64) {
	return n.b.Proposals.Load(), n.b.Barriers.Load()
}

// TestTenantIsolationMatrix: a key bound to tenant a gets PERMISSION_DENIED on tenant b for every
// object call, before anything is looked up or proposed; its own tenant works, and an empty
// tenant means its own.
func TestTenantIsolationMatrix(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	for _, tn := range []string{"a", "b"} {
		n.b.MustApply(t, &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: tn}}})
	}
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	n.b.MustApply(t, servicetest.Grant("w1", "worker:"+clientA.String()))
	tok, _ := servicetest.NewKey(t, n.b, "alice", 0)
	wtok, _ := servicetest.NewKey(t, n.b, "w1", 0)
	c := n.clients(t)
	if _, err := c.meta.MountSegment(withKey(t, wtok), &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 1<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}

	cid, key, keys := idb(clientA), []byte("k"), [][]byte{[]byte("k")}
	calls := map[string]func(ctx context.Context, tenant string) error{
		"PutStart": func(ctx context.Context, tn string) error {
			_, err := c.meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tn, ClientId: cid, Key: key, Size: 4096})
			return err
		},
		"PutEnd": func(ctx context.Context, tn string) error {
			_, err := c.meta.PutEnd(ctx, &metadv1.PutEndRequest{Tenant: tn, ClientId: cid, Key: key})
			return err
		},
		"PutRevoke": func(ctx context.Context, tn string) error {
			_, err := c.meta.PutRevoke(ctx, &metadv1.PutRevokeRequest{Tenant: tn, ClientId: cid, Key: key})
			return err
		},
		"UpsertStart": func(ctx context.Context, tn string) error {
			_, err := c.meta.UpsertStart(ctx, &metadv1.UpsertStartRequest{Tenant: tn, ClientId: cid, Key: key, Size: 4096})
			return err
		},
		"UpsertEnd": func(ctx context.Context, tn string) error {
			_, err := c.meta.UpsertEnd(ctx, &metadv1.UpsertEndRequest{Tenant: tn, ClientId: cid, Key: key})
			return err
		},
		"UpsertRevoke": func(ctx context.Context, tn string) error {
			_, err := c.meta.UpsertRevoke(ctx, &metadv1.UpsertRevokeRequest{Tenant: tn, ClientId: cid, Key: key})
			return err
		},
		"Get": func(ctx context.Context, tn string) error {
			_, err := c.meta.Get(ctx, &metadv1.GetRequest{Tenant: tn, Key: key})
			return err
		},
		"Get(stale)": func(ctx context.Context, tn string) error {
			_, err := c.meta.Get(ctx, &metadv1.GetRequest{Tenant: tn, Key: key, Stale: true})
			return err
		},
		"Exist": func(ctx context.Context, tn string) error {
			_, err := c.meta.Exist(ctx, &metadv1.ExistRequest{Tenant: tn, Key: key})
			return err
		},
		"Remove": func(ctx context.Context, tn string) error {
			_, err := c.meta.Remove(ctx, &metadv1.RemoveRequest{Tenant: tn, Key: key})
			return err
		},
		"RemoveAll": func(ctx context.Context, tn string) error {
			_, err := c.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{Tenant: tn})
			return err
		},
		"RemoveGroup": func(ctx context.Context, tn string) error {
			_, err := c.meta.RemoveGroup(ctx, &metadv1.RemoveGroupRequest{Tenant: tn, Group: []byte("g")})
			return err
		},
		"ListGroup": func(ctx context.Context, tn string) error {
			_, err := c.meta.ListGroup(ctx, &metadv1.ListGroupRequest{Tenant: tn, Group: []byte("g")})
			return err
		},
		"BatchPutStart": func(ctx context.Context, tn string) error {
			_, err := c.meta.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{Tenant: tn, ClientId: cid,
				Items: []*metadv1.BatchPutStartRequest_Item{{Key: key, Size: 4096}}})
			return err
		},
		"BatchPutEnd": func(ctx context.Context, tn string) error {
			_, err := c.meta.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{Tenant: tn, ClientId: cid, Keys: keys})
			return err
		},
		"BatchPutRevoke": func(ctx context.Context, tn string) error {
			_, err := c.meta.BatchPutRevoke(ctx, &metadv1.BatchPutRevokeRequest{Tenant: tn, ClientId: cid, Keys: keys})
			return err
		},
		"BatchGet": func(ctx context.Context, tn string) error {
			_, err := c.meta.BatchGet(ctx, &metadv1.BatchGetRequest{Tenant: tn, Keys: keys})
			return err
		},
		"BatchExist": func(ctx context.Context, tn string) error {
			_, err := c.meta.BatchExist(ctx, &metadv1.BatchExistRequest{Tenant: tn, Keys: keys})
			return err
		},
		"BatchRemove": func(ctx context.Context, tn string) error {
			_, err := c.meta.BatchRemove(ctx, &metadv1.BatchRemoveRequest{Tenant: tn, Keys: keys})
			return err
		},
		"GetQuota": func(ctx context.Context, tn string) error {
			_, err := c.admin.GetQuota(ctx, &metadv1.GetQuotaRequest{Tenant: tn})
			return err
		},
	}
	ctx := withKey(t, tok)
	props, bars := metaCount(t, n)
	for name, call := range calls {
		for _, tn := range []string{"b", "default", "B"} {
			if err := call(ctx, tn); status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), `"alice"`) {
				t.Errorf("%s on tenant %q with tenant a's key: %v, want PermissionDenied naming the principal", name, tn, err)
			}
		}
	}
	if p2, b2 := metaCount(t, n); p2 != props || b2 != bars {
		t.Fatalf("refused calls reached the log or a barrier: proposals %d -> %d, barriers %d -> %d", props, p2, bars, b2)
	}
	for name, call := range calls {
		if err := call(ctx, "a"); status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unauthenticated {
			t.Errorf("%s on its own tenant: %v", name, err)
		}
	}
	// An empty tenant is the principal's own: the object lands in tenant a, not in default.
	if _, err := c.meta.PutStart(ctx, &metadv1.PutStartRequest{ClientId: cid, Key: []byte("own"), Size: 4096}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.meta.PutEnd(ctx, &metadv1.PutEndRequest{ClientId: cid, Key: []byte("own")}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.b.Store().Peek("a", "own"); err != nil {
		t.Fatalf("an empty tenant did not mean the principal's own: %v", err)
	}
	if _, err := c.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("own")}); err != nil {
		t.Fatalf("Get with an empty tenant: %v", err)
	}
}

// TestWorkerScope: a worker mounts, unmounts and pings only for its own client id; unmounting
// another client's segment is PERMISSION_DENIED and leaves it mounted.
func TestWorkerScope(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.MustApply(t, servicetest.Grant("wa", "worker:"+clientA.String()))
	n.b.MustApply(t, servicetest.Grant("wb", "worker:"+clientB.String()))
	ta, _ := servicetest.NewKey(t, n.b, "wa", 0)
	c := n.clients(t)
	cb := n.clients(t, p.client(t, "wb")) // wb authenticates by its certificate
	if _, err := cb.meta.MountSegment(tctx(t), &metadv1.MountSegmentRequest{ClientId: idb(clientB), Segment: segDesc(segB, 1<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	ctx := withKey(t, ta)
	if _, err := c.meta.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientA), Segment: segDesc(segA, 4<<20, 1<<20)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.meta.Ping(ctx, &metadv1.PingRequest{ClientId: idb(clientA)}); err != nil {
		t.Fatal(err)
	}
	_, err := c.meta.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(clientB), SegmentId: idb(segB)})
	wantCode(t, err, codes.PermissionDenied, "no worker of client "+clientB.String())
	// Naming its own client id does not reach another client's segment either (the store's
	// ownership check).
	_, err = c.meta.UnmountSegment(ctx, &metadv1.UnmountSegmentRequest{ClientId: idb(clientA), SegmentId: idb(segB)})
	wantCode(t, err, codes.PermissionDenied)
	_, err = c.meta.Ping(ctx, &metadv1.PingRequest{ClientId: idb(clientB)})
	wantCode(t, err, codes.PermissionDenied)
	_, err = c.meta.MountSegment(ctx, &metadv1.MountSegmentRequest{ClientId: idb(clientB), Segment: segDesc(segB, 8<<20, 1<<20)})
	wantCode(t, err, codes.PermissionDenied)
	if got := n.b.Store().Segments().SegmentsOf(clientB); len(got) != 1 {
		t.Fatalf("client b's segments after the refused unmount: %v", got)
	}
	// A worker is no tenant.
	_, err = c.meta.Get(ctx, &metadv1.GetRequest{Key: []byte("k")})
	wantCode(t, err, codes.PermissionDenied, "holds no tenant role")
}

// TestOnlyAdminManages: tenants, quotas, keys, roles, members and snapshots are the admin's (and
// root's); a tenant's key and a reader are refused, a reader may list.
func TestOnlyAdminManages(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	n.b.MustApply(t, servicetest.Grant("rita", "reader"))
	n.b.MustApply(t, servicetest.Grant("ops", "admin"))
	alice, _ := servicetest.NewKey(t, n.b, "alice", 0)
	rita, _ := servicetest.NewKey(t, n.b, "rita", 0)
	ops, _ := servicetest.NewKey(t, n.b, "ops", 0)
	c := n.clients(t)
	adminCalls := map[string]func(ctx context.Context) error{
		"RegisterTenant": func(ctx context.Context) error {
			_, err := c.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "a"})
			return err
		},
		"SetQuota": func(ctx context.Context) error {
			_, err := c.admin.SetQuota(ctx, &metadv1.SetQuotaRequest{Tenant: "a", QuotaBytes: 1 << 20})
			return err
		},
		"UnregisterTenant": func(ctx context.Context) error {
			_, err := c.admin.UnregisterTenant(ctx, &metadv1.UnregisterTenantRequest{Name: "zz"})
			return err
		},
		"AddMember": func(ctx context.Context) error {
			_, err := c.admin.AddMember(ctx, &metadv1.AddMemberRequest{Name: "n9", PeerAddress: "127.0.0.1:1"})
			return err
		},
		"RemoveMember": func(ctx context.Context) error {
			_, err := c.admin.RemoveMember(ctx, &metadv1.RemoveMemberRequest{Name: "self"})
			return err
		},
		"TransferLeader": func(ctx context.Context) error {
			_, err := c.admin.TransferLeader(ctx, &metadv1.TransferLeaderRequest{})
			return err
		},
		"RecordMember": func(ctx context.Context) error {
			_, err := c.admin.RecordMember(ctx, &metadv1.RecordMemberRequest{Name: "self", PeerAddress: "127.0.0.1:1", ClientAddress: "127.0.0.1:2"})
			return err
		},
		"ListKeys": func(ctx context.Context) error {
			_, err := c.admin.ListKeys(ctx, &metadv1.ListKeysRequest{})
			return err
		},
		"GrantRole": func(ctx context.Context) error {
			_, err := c.admin.GrantRole(ctx, &metadv1.GrantRoleRequest{Principal: "alice", Role: "admin"})
			return err
		},
		"SnapshotSave": func(ctx context.Context) error {
			s, err := c.admin.SnapshotSave(ctx, &metadv1.SnapshotSaveRequest{})
			if err == nil {
				_, err = s.Recv()
			}
			return err
		},
		"SnapshotRestore": func(ctx context.Context) error {
			s, err := c.admin.SnapshotRestore(ctx)
			if err == nil {
				_, err = s.CloseAndRecv()
			}
			return err
		},
	}
	for name, call := range adminCalls {
		for who, tok := range map[string]string{"tenant": alice, "reader": rita} {
			if err := call(withKey(t, tok)); status.Code(err) != codes.PermissionDenied {
				t.Errorf("%s by a %s: %v, want PermissionDenied", name, who, err)
			}
		}
	}
	for name, call := range map[string]func(ctx context.Context) error{
		"RegisterTenant": adminCalls["RegisterTenant"],
		"SetQuota":       adminCalls["SetQuota"],
		"RecordMember":   adminCalls["RecordMember"],
	} {
		if err := call(withKey(t, ops)); status.Code(err) == codes.PermissionDenied || status.Code(err) == codes.Unauthenticated {
			t.Errorf("%s by an admin: %v", name, err)
		}
	}
	root := n.clients(t, p.client(t, auth.RootPrincipal))
	if _, err := root.admin.RegisterTenant(tctx(t), &metadv1.RegisterTenantRequest{Name: "r"}); err != nil {
		t.Fatalf("root, admin always, by its certificate: %v", err)
	}
	// A reader lists; a tenant's key does not.
	if _, err := c.admin.ListTenants(withKey(t, rita), &metadv1.ListTenantsRequest{}); err != nil {
		t.Fatalf("ListTenants by a reader: %v", err)
	}
	if _, err := c.admin.Status(withKey(t, rita), &metadv1.StatusRequest{}); err != nil {
		t.Fatalf("Status by a reader: %v", err)
	}
	_, err := c.admin.ListTenants(withKey(t, alice), &metadv1.ListTenantsRequest{})
	wantCode(t, err, codes.PermissionDenied, "reader")
	// A member's certificate records only that member; it is no admin.
	m := n.clients(t, p.member(t, "self"))
	if _, err := m.admin.RecordMember(tctx(t), &metadv1.RecordMemberRequest{Name: "self", PeerAddress: "127.0.0.1:1", ClientAddress: "127.0.0.1:2"}); err != nil {
		t.Fatalf("a member recording itself: %v", err)
	}
	_, err = m.admin.RecordMember(tctx(t), &metadv1.RecordMemberRequest{Name: "n7", PeerAddress: "127.0.0.1:1", ClientAddress: "127.0.0.1:2"})
	wantCode(t, err, codes.PermissionDenied, "only itself")
	_, err = m.admin.RegisterTenant(tctx(t), &metadv1.RegisterTenantRequest{Name: "m"})
	wantCode(t, err, codes.PermissionDenied)
}

// TestUnauthenticatedRefused: no credentials, a malformed or unknown key, a wrong secret and an
// expired key are UNAUTHENTICATED, each saying why and never echoing the secret; health stays open.
func TestUnauthenticatedRefused(t *testing.T) {
	p := newPKI(t)
	clock := servicetest.NewClock()
	n := startAuth(t, p, newFakeBackend(t, clock.Now), "n1")
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	expiring, _ := servicetest.NewKey(t, n.b, "alice", clock.Now().Add(time.Minute).UnixMilli())
	good, _ := servicetest.NewKey(t, n.b, "alice", 0)
	cc := n.conn(t)
	c := metadv1.NewMetadataClient(cc)
	get := func(ctx context.Context) error {
		_, err := c.Get(ctx, &metadv1.GetRequest{Tenant: "a", Key: []byte("k")})
		return err
	}
	wantCode(t, get(tctx(t)), codes.Unauthenticated, "no credentials", "no client certificate")
	wantCode(t, get(withKey(t, "not-a-token")), codes.Unauthenticated, "does not match")
	id, _, _ := auth.ParseToken(good)
	wrong := good[:len(good)-4] + "AAAA"
	if wrong == good {
		wrong = good[:len(good)-4] + "BBBB"
	}
	err := get(withKey(t, wrong))
	wantCode(t, err, codes.Unauthenticated, "API key "+id, "does not match")
	if strings.Contains(status.Convert(err).Message(), wrong[len(auth.TokenPrefix)+auth.KeyIDLen+1:]) {
		t.Fatalf("the message holds the secret: %s", status.Convert(err).Message())
	}
	unknown, _ := servicetest.NewKey(t, newFakeBackend(t, nil), "alice", 0) // recorded in another cluster only
	uid, _, _ := auth.ParseToken(unknown)
	wantCode(t, get(withKey(t, unknown)), codes.Unauthenticated, "API key "+uid+" is unknown")
	if err := get(withKey(t, expiring)); status.Code(err) != codes.NotFound {
		t.Fatalf("a key before its expiry: %v", err)
	}
	clock.Advance(2 * time.Minute)
	eid, _, _ := auth.ParseToken(expiring)
	wantCode(t, get(withKey(t, expiring)), codes.Unauthenticated, "API key "+eid+" has expired")
	if _, err := healthpb.NewHealthClient(cc).Check(tctx(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health without credentials: %v", err)
	}
}

// TestClientSetPrincipalGainsNothing: x-metad-principal from a connection whose certificate names
// no member is ignored; the caller stays itself.
func TestClientSetPrincipalGainsNothing(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	alice, _ := servicetest.NewKey(t, n.b, "alice", 0)
	byKey := n.clients(t)
	_, err := byKey.admin.RegisterTenant(withKey(t, alice, principalKey, auth.RootPrincipal), &metadv1.RegisterTenantRequest{Name: "x"})
	wantCode(t, err, codes.PermissionDenied, `"alice"`)
	byCert := n.clients(t, p.client(t, "alice"))
	ctx := metadata.AppendToOutgoingContext(tctx(t), principalKey, auth.RootPrincipal)
	_, err = byCert.admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "x"})
	wantCode(t, err, codes.PermissionDenied, `"alice"`)
	_, err = n.clients(t).admin.RegisterTenant(ctx, &metadv1.RegisterTenantRequest{Name: "x"})
	wantCode(t, err, codes.Unauthenticated, "no credentials")
}

// TestRevokedKeyFailsOnOpenConnection: after RevokeKey applies, the key fails on the connection
// that had verified it (its cache holds only until the auth state changes).
func TestRevokedKeyFailsOnOpenConnection(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.MustApply(t, &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "a"}}})
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	tok, _ := servicetest.NewKey(t, n.b, "alice", 0)
	c := n.clients(t)
	if _, err := c.admin.GetQuota(withKey(t, tok), &metadv1.GetQuotaRequest{}); err != nil {
		t.Fatal(err)
	}
	n.b.MustApply(t, servicetest.RevokeKey(tok))
	_, err := c.admin.GetQuota(withKey(t, tok), &metadv1.GetQuotaRequest{})
	wantCode(t, err, codes.Unauthenticated, "unknown")
}

// TestConnectionCachesVerification: a connection verifies (hashes) its key once, not per call, and
// again only after the auth state changed.
func TestConnectionCachesVerification(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	tok, _ := servicetest.NewKey(t, n.b, "alice", 0)
	c := n.clients(t)
	ctx := withKey(t, tok)
	verifications := func() int64 { return int64(testutil.ToFloat64(n.srv.m.authVerifications)) }
	for range 20 {
		if _, err := c.meta.Exist(ctx, &metadv1.ExistRequest{Tenant: "a", Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := verifications(); got != 1 {
		t.Fatalf("20 calls on one connection verified the key %d times, want 1", got)
	}
	n.b.MustApply(t, servicetest.Grant("bob", "reader"))
	for range 5 {
		if _, err := c.meta.Exist(ctx, &metadv1.ExistRequest{Tenant: "a", Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := verifications(); got != 2 {
		t.Fatalf("after one change of the auth state: %d verifications, want 2", got)
	}
}

// TestFollowerForwardsPrincipal: a follower forwards the principal it authenticated, and the
// leader, believing it from the follower's member certificate, authorizes it again against its
// own state.
func TestFollowerForwardsPrincipal(t *testing.T) {
	leader, follower := authPair(t)
	tok, keyCmd := servicetest.NewKey(t, leader.b, "alice", 0)
	follower.b.MustApply(t, keyCmd)
	c := follower.clients(t)
	ctx := withKey(t, tok)
	if _, err := c.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{}); err != nil {
		t.Fatalf("through the follower, on its own tenant: %v", err)
	}
	if got := leader.b.Proposals.Load() + leader.b.Barriers.Load(); got == 0 {
		t.Fatal("the call did not reach the leader")
	}
	if got := testutil.ToFloat64(leader.srv.m.authVerifications); got != 0 {
		t.Fatalf("the leader verified the key itself (%v times); it should take the forwarded principal", got)
	}
	// The follower refuses another tenant itself.
	fwd := testutil.ToFloat64(follower.srv.m.forwarded.WithLabelValues("Metadata/RemoveAll"))
	_, err := c.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{Tenant: "b"})
	wantCode(t, err, codes.PermissionDenied, `"alice"`)
	if got := testutil.ToFloat64(follower.srv.m.forwarded.WithLabelValues("Metadata/RemoveAll")); got != fwd {
		t.Fatal("a refused call was forwarded")
	}
	// The leader's state decides: a role revoked there (not yet applied on the follower) is
	// refused, and so is a key revoked there.
	leader.b.MustApply(t, servicetest.RevokeRole("alice", "tenant:a"))
	_, err = c.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
	wantCode(t, err, codes.PermissionDenied, "holds no tenant role")
	leader.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	leader.b.MustApply(t, servicetest.RevokeKey(tok))
	_, err = c.meta.RemoveAll(ctx, &metadv1.RemoveAllRequest{})
	wantCode(t, err, codes.Unauthenticated, "unknown")
}

// TestFollowerDefersUnknownKey: a follower whose state does not hold the call's key (created
// moments ago, not applied there yet) never answers from its state, not even a stale read it would
// serve itself: it forwards the call with its authorization, and the leader authenticates it.
func TestFollowerDefersUnknownKey(t *testing.T) {
	leader, follower := authPair(t)
	tok, _ := servicetest.NewKey(t, leader.b, "alice", 0) // the leader's state only
	leader.b.MustApply(t, &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "only-on-leader"}}})
	leader.b.MustApply(t, servicetest.Grant("alice", "reader"))
	c := follower.clients(t)
	resp, err := c.admin.ListTenants(withKey(t, tok), &metadv1.ListTenantsRequest{Stale: true})
	if err != nil {
		t.Fatalf("a stale read with a key only the leader knows: %v", err)
	}
	found := false
	for _, ti := range resp.GetTenants() {
		found = found || ti.GetName() == "only-on-leader"
	}
	if !found {
		t.Fatalf("the answer came from the follower's state, not the leader's: %v", resp.GetTenants())
	}
	if got := testutil.ToFloat64(follower.srv.m.authDeferred); got != 1 {
		t.Fatalf("%v calls deferred to the leader, want 1", got)
	}
	// Status, which a node answers about itself, goes to the leader too.
	st, err := c.admin.Status(withKey(t, tok), &metadv1.StatusRequest{})
	if err != nil || st.GetRole() != metadv1.NodeRole_NODE_ROLE_LEADER {
		t.Fatalf("Status with a key only the leader knows: %v %v", st.GetRole(), err)
	}
	// A key neither knows: the leader says so.
	unknown, _ := servicetest.NewKey(t, newFakeBackend(t, nil), "alice", 0)
	_, err = c.admin.ListTenants(withKey(t, unknown), &metadv1.ListTenantsRequest{Stale: true})
	wantCode(t, err, codes.Unauthenticated, "unknown")
	if got := testutil.ToFloat64(leader.srv.m.authFailures.WithLabelValues("unknown_key")); got != 1 {
		t.Fatalf("the leader refused %v unknown keys, want 1 (it decides)", got)
	}
}
