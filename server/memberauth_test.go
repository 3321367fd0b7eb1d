package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
	"metad/tlsconf"
)

// authPair is a leader n1 and a follower n2 that forwards to it, both authenticating, the
// follower's forwards presenting its member certificate; both know the configuration {n1, n2}.
func authPair(t *testing.T) (leader, follower *authNode) {
	p := newPKI(t)
	leader = startAuth(t, p, newFakeBackend(t, nil), "n1")
	fb := newFakeBackend(t, nil)
	fb.SetLeader(false, "n1", leader.addr)
	follower = startAuth(t, p, fb, "n2")
	for _, n := range []*authNode{leader, follower} {
		n.b.SetMembers("n1", "n2")
		for _, cmd := range []*metadv1.Command{
			{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "a"}}},
			servicetest.Grant("alice", "tenant:a"),
		} {
			n.b.MustApply(t, cmd)
		}
	}
	return leader, follower
}

// forwardedFor is a context whose calls carry principal as the one a member forwards them for.
func forwardedFor(t *testing.T, principal string) context.Context {
	return metadata.AppendToOutgoingContext(tctx(t), principalKey, principal)
}

// TestNonMemberCertificateActsForNobody: a connection whose member certificate names n9, a member
// outside the configuration (never added, or removed), that says it forwards calls for root or
// alice lists no keys, creates none and reads no tenant's objects, on the leader and through a
// follower; as itself it opens no session and records nothing. Nothing reaches the log.
func TestNonMemberCertificateActsForNobody(t *testing.T) {
	leader, follower := authPair(t)
	n9 := leader.p.member(t, "n9")
	for _, n := range []*authNode{leader, follower} {
		c := n.clients(t, n9)
		_, err := c.admin.ListKeys(forwardedFor(t, auth.RootPrincipal), &metadv1.ListKeysRequest{})
		wantCode(t, err, codes.Unauthenticated, `principal "root"`, "member n9", "not in this node's Raft configuration")
		_, err = c.admin.CreateKey(forwardedFor(t, auth.RootPrincipal), &metadv1.CreateKeyRequest{Principal: auth.RootPrincipal})
		wantCode(t, err, codes.Unauthenticated, "member n9")
		_, err = c.meta.Get(forwardedFor(t, "alice"), &metadv1.GetRequest{Tenant: "a", Key: []byte("k")})
		wantCode(t, err, codes.Unauthenticated, `principal "alice"`, "member n9")
		_, err = c.meta.OpenSession(tctx(t), &metadv1.OpenSessionRequest{})
		wantCode(t, err, codes.PermissionDenied, "member n9", "not in this node's Raft configuration")
		_, err = c.admin.RecordMember(tctx(t), &metadv1.RecordMemberRequest{Name: "n9", PeerAddress: "127.0.0.1:1", ClientAddress: "127.0.0.1:2"})
		wantCode(t, err, codes.PermissionDenied, "member n9")
		if got := testutil.ToFloat64(n.srv.m.authFailures.WithLabelValues("not_member")); got != 5 {
			t.Errorf("metad_server_auth_failures_total{reason=\"not_member\"} = %v, want 5", got)
		}
	}
	if got := leader.b.Proposals.Load() + follower.b.Proposals.Load(); got != 0 {
		t.Fatalf("%d proposals, want none", got)
	}
}

// TestMemberForwardsOnlyWhileInConfiguration: the leader believes the principal a member's
// connection forwards for, directly and on the follower's own forwards, and stops as soon as its
// configuration no longer holds that member.
func TestMemberForwardsOnlyWhileInConfiguration(t *testing.T) {
	leader, follower := authPair(t)
	tok, keyCmd := servicetest.NewKey(t, leader.b, "alice", 0)
	follower.b.MustApply(t, keyCmd)
	asN2 := leader.clients(t, leader.p.member(t, "n2"))
	if _, err := asN2.admin.ListKeys(forwardedFor(t, auth.RootPrincipal), &metadv1.ListKeysRequest{}); err != nil {
		t.Fatalf("member n2 forwarding for root: %v", err)
	}
	viaFollower := follower.clients(t)
	if _, err := viaFollower.meta.RemoveAll(withKey(t, tok), &metadv1.RemoveAllRequest{}); err != nil {
		t.Fatalf("alice's call forwarded by the follower: %v", err)
	}

	leader.b.SetMembers("n1") // n2 removed; its certificate is still valid
	_, err := asN2.admin.ListKeys(forwardedFor(t, auth.RootPrincipal), &metadv1.ListKeysRequest{})
	wantCode(t, err, codes.Unauthenticated, "member n2", "not in this node's Raft configuration")
	_, err = viaFollower.meta.RemoveAll(withKey(t, tok), &metadv1.RemoveAllRequest{})
	wantCode(t, err, codes.Unauthenticated, "member n2", "not in this node's Raft configuration")
}

// TestForwardNeedsServerAuth: a certificate that names member n2 of the configuration but lacks
// the serverAuth extended key usage (no certificate `metactl cert` issues is one) is no member
// certificate: what it forwards is not believed, and as itself it gets nothing.
func TestForwardNeedsServerAuth(t *testing.T) {
	leader, _ := authPair(t)
	c := leader.clients(t, memberWithoutServerAuth(t, leader.p, "n2"))
	_, err := c.admin.ListKeys(forwardedFor(t, auth.RootPrincipal), &metadv1.ListKeysRequest{})
	wantCode(t, err, codes.Unauthenticated, "serverAuth")
	_, err = c.meta.OpenSession(tctx(t), &metadv1.OpenSessionRequest{})
	wantCode(t, err, codes.PermissionDenied, "serverAuth")
}

// memberWithoutServerAuth is a certificate of p's CA that names member name for client use only.
func memberWithoutServerAuth(t testing.TB, p *pki, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{tlsconf.Identity{Kind: tlsconf.Member, Name: name}.URI()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca.Cert, key.Public(), p.ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
