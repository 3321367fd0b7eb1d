package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"metad/tlsconf"
)

// seenCall is what the TLS fake observed of the last call: its authorization metadata and the
// identity named by the peer's verified certificate ("" when it presented none). Safe for
// concurrent use.
type seenCall struct {
	mu       sync.Mutex
	auth     string
	identity string
}

func (s *seenCall) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	var auth, id string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		auth = strings.Join(md.Get("authorization"), ",")
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			got, err := tlsconf.IdentityOf(ti.State.VerifiedChains[0][0])
			if err != nil {
				return nil, status.Error(codes.Unauthenticated, err.Error())
			}
			id = got.String()
		}
	}
	s.mu.Lock()
	s.auth, s.identity = auth, id
	s.mu.Unlock()
	return h(ctx, req)
}

func (s *seenCall) get() (auth, identity string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth, s.identity
}

// testPKI is a cluster CA in a temporary directory with member n1's certificate (for 127.0.0.1)
// and principal alice's client certificate.
type testPKI struct {
	dir        string
	ca         *tlsconf.CA
	caFile     string
	serverCert tls.Certificate
	alice      [2]string // cert, key
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	var err error
	if p.ca, err = tlsconf.CreateCA(p.dir, tlsconf.Options{}); err != nil {
		t.Fatal(err)
	}
	p.caFile = filepath.Join(p.dir, tlsconf.CACertFile)
	mc, mk, err := p.ca.IssueMember(p.dir, "n1", []string{"127.0.0.1"}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.serverCert, err = tls.LoadX509KeyPair(mc, mk); err != nil {
		t.Fatal(err)
	}
	if p.alice[0], p.alice[1], err = p.ca.IssueClient(p.dir, "alice", tlsconf.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// startTLSFake starts a fake node serving TLS 1.3 with n1's certificate, verifying client
// certificates when given, and recording what each call carried.
func startTLSFake(t *testing.T, p *testPKI) (*fakeNode, *seenCall) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(p.ca.Cert)
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.serverCert},
		ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	seen := &seenCall{}
	n := startFakeB(t, grpc.Creds(credentials.NewTLS(cfg)), grpc.UnaryInterceptor(seen.intercept))
	return n, seen
}

func TestTLSClientCertificateAndAPIKeyReachTheServer(t *testing.T) {
	p := newTestPKI(t)
	n, seen := startTLSFake(t, p)

	withCert, err := TLSFromFiles(p.caFile, p.alice[0], p.alice[1])
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, Config{Endpoints: []string{n.addr}, TLS: withCert, MaxRetries: -1})
	if _, err := c.Ping(testCtx(t)); err != nil {
		t.Fatalf("Ping over TLS with a client certificate: %v", err)
	}
	if auth, id := seen.get(); auth != "" || id != "metad://principal/alice" {
		t.Fatalf("server saw authorization %q, identity %q; want none and alice's", auth, id)
	}

	keyOnly, err := TLSFromFiles(p.caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	const key = "mtd_0123456789abcdef_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3Jl"
	c = newTestClient(t, Config{Endpoints: []string{n.addr}, TLS: keyOnly, APIKey: key, MaxRetries: -1})
	if _, err := c.Ping(testCtx(t)); err != nil {
		t.Fatalf("Ping over TLS with an API key: %v", err)
	}
	if auth, id := seen.get(); auth != "Bearer "+key || id != "" {
		t.Fatalf("server saw authorization %q, identity %q; want the key and no certificate", auth, id)
	}
}

func TestTLSWrongCAIsRefusedWithAClearError(t *testing.T) {
	p := newTestPKI(t)
	n, _ := startTLSFake(t, p)
	other := t.TempDir()
	if _, err := tlsconf.CreateCA(other, tlsconf.Options{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := TLSFromFiles(filepath.Join(other, tlsconf.CACertFile), "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, Config{Endpoints: []string{n.addr}, TLS: cfg, MaxRetries: -1})
	_, err = c.Ping(testCtx(t))
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("Ping with the wrong CA: %v; want UNAVAILABLE naming the unknown authority", err)
	}

	// A bundle that holds both CAs (a CA rotation's overlap) verifies the node.
	bundle := filepath.Join(t.TempDir(), "bundle.crt")
	a, _ := os.ReadFile(filepath.Join(other, tlsconf.CACertFile))
	b, _ := os.ReadFile(p.caFile)
	if err := os.WriteFile(bundle, append(a, b...), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err = TLSFromFiles(bundle, "", ""); err != nil {
		t.Fatal(err)
	}
	c = newTestClient(t, Config{Endpoints: []string{n.addr}, TLS: cfg, MaxRetries: -1})
	if _, err := c.Ping(testCtx(t)); err != nil {
		t.Fatalf("Ping with an overlap bundle: %v", err)
	}

	// A plaintext client does not get through a TLS listener either.
	c = newTestClient(t, Config{Endpoints: []string{n.addr}, MaxRetries: -1})
	if _, err := c.Ping(testCtx(t)); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext Ping to a TLS node: %v; want UNAVAILABLE", err)
	}
}

func TestTLSRenewedClientCertificateIsUsedByNewConnections(t *testing.T) {
	p := newTestPKI(t)
	n, seen := startTLSFake(t, p)
	cfg, err := TLSFromFiles(p.caFile, p.alice[0], p.alice[1])
	if err != nil {
		t.Fatal(err)
	}
	ping := func(want string) {
		t.Helper()
		c, err := New(Config{Endpoints: []string{n.addr}, TLS: cfg, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Ping(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if _, id := seen.get(); id != want {
			t.Fatalf("server saw %q, want %q", id, want)
		}
	}
	ping("metad://principal/alice")

	// Renew: new files at the same paths (here naming another principal, to tell them apart).
	other := t.TempDir()
	bc, bk, err := p.ca.IssueClient(other, "bob", tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, bk, p.alice[1])
	copyFile(t, bc, p.alice[0])
	ping("metad://principal/bob")

	// A key file that does not match (half-way through a renewal) keeps the last good pair.
	if err := os.WriteFile(p.alice[1], []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	ping("metad://principal/bob")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTLSConfigurationErrors(t *testing.T) {
	p := newTestPKI(t)
	if _, err := New(Config{Endpoints: []string{"127.0.0.1:1"}, APIKey: "mtd_x_y"}); !errors.Is(err, ErrKeyWithoutTLS) {
		t.Errorf("New with a key and no TLS: %v, want ErrKeyWithoutTLS", err)
	}
	keyOnly, _ := TLSFromFiles(p.caFile, "", "")
	if _, err := New(Config{Endpoints: []string{"127.0.0.1:1"}, TLS: keyOnly, APIKey: "mtd_x y"}); err == nil || !strings.Contains(err.Error(), "APIKey") {
		t.Errorf("New with a key holding a space: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.crt")
	if err := os.WriteFile(empty, []byte("nothing here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ca, cert, key string }{
		{"", "", ""},
		{filepath.Join(p.dir, "missing.crt"), "", ""},
		{empty, "", ""},
		{p.caFile, p.alice[0], ""},
		{p.caFile, "", p.alice[1]},
		{p.caFile, p.alice[0], filepath.Join(p.dir, tlsconf.CAKeyFile)}, // a key of another certificate
	} {
		if _, err := TLSFromFiles(c.ca, c.cert, c.key); !errors.Is(err, ErrBadTLSFiles) {
			t.Errorf("TLSFromFiles(%q, %q, %q) = %v, want ErrBadTLSFiles", c.ca, c.cert, c.key, err)
		}
	}
	var cfg Config
	if err := (Security{Cert: p.alice[0], Key: p.alice[1]}).Apply(&cfg); !errors.Is(err, ErrBadTLSFiles) {
		t.Errorf("a certificate without a CA: %v, want ErrBadTLSFiles", err)
	}
}

func TestSecurityResolveUsesTheCertificatesDirectory(t *testing.T) {
	dir := t.TempDir()
	if got := (Security{CertsDir: dir}).Resolve(); got != (Security{CertsDir: dir}) {
		t.Fatalf("no ca.crt: %+v, want plaintext", got)
	}
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, tlsconf.CACertFile)
	if got := (Security{CertsDir: dir}).Resolve(); got.CACert != caFile || got.Cert != "" {
		t.Fatalf("ca.crt only: %+v", got)
	}
	rc, rk, err := ca.IssueClient(dir, RootPrincipal, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   Security
		want Security
	}{
		{Security{CertsDir: dir}, Security{CertsDir: dir, CACert: caFile, Cert: rc, Key: rk}},
		{Security{CertsDir: dir, APIKey: "k"}, Security{CertsDir: dir, CACert: caFile, APIKey: "k"}},
		{Security{CertsDir: dir, Cert: "a.crt", Key: "a.key"}, Security{CertsDir: dir, CACert: caFile, Cert: "a.crt", Key: "a.key"}},
		{Security{CertsDir: dir, CACert: "x.crt"}, Security{CertsDir: dir, CACert: "x.crt"}},
	} {
		if got := c.in.Resolve(); got != c.want {
			t.Errorf("Resolve(%+v) = %+v, want %+v", c.in, got, c.want)
		}
	}
	t.Setenv(EnvCertsDir, dir)
	t.Setenv(EnvAPIKey, "k")
	var cfg Config
	if err := SecurityFromEnv().Apply(&cfg); err != nil || cfg.TLS == nil || cfg.APIKey != "k" || cfg.TLS.GetClientCertificate != nil {
		t.Fatalf("from the environment: %v, TLS %v, key %q", err, cfg.TLS != nil, cfg.APIKey)
	}
}

func TestTLSExpiredServerCertificateIsRefusedWithAClearError(t *testing.T) {
	p := newTestPKI(t)
	old := t.TempDir()
	mc, mk, err := p.ca.IssueMember(old, "n1", []string{"127.0.0.1"}, tlsconf.Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if p.serverCert, err = tls.LoadX509KeyPair(mc, mk); err != nil {
		t.Fatal(err)
	}
	n, _ := startTLSFake(t, p)
	cfg, err := TLSFromFiles(p.caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, Config{Endpoints: []string{n.addr}, TLS: cfg, MaxRetries: -1})
	if _, err := c.Ping(testCtx(t)); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("Ping to a node with an expired certificate: %v; want UNAVAILABLE saying it expired", err)
	}
}
