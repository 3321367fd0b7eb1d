package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"metad/client"
	"metad/tlsconf"
)

// noCluster is an endpoint for verbs that need no cluster.
const noCluster = "127.0.0.1:1"

func TestCertVerbsCreateListAndNeverOverwrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	metactl(t, noCluster, "cert", "create-ca", "--certs-dir", dir).ok(t)
	caFile := filepath.Join(dir, tlsconf.CACertFile)
	before, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	r := metactl(t, noCluster, "cert", "create-ca", "--certs-dir", dir)
	if r.code != exitError || !strings.Contains(r.stderr, "file exists") {
		t.Fatalf("second create-ca: exit %d, stderr %q; want exit 1 naming the existing file", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(caFile); !bytes.Equal(before, after) {
		t.Fatal("a second create-ca changed ca.crt")
	}

	metactl(t, noCluster, "cert", "create-member", "--certs-dir", dir, "--name", "n1", "--hosts", "127.0.0.1,localhost").ok(t)
	metactl(t, noCluster, "cert", "create-client", "--certs-dir", dir, "--name", "alice", "--validity", "30d").ok(t)
	aliceCert, _ := tlsconf.ClientFiles(dir, "alice")
	before, _ = os.ReadFile(aliceCert)
	if r := metactl(t, noCluster, "cert", "create-client", "--certs-dir", dir, "--name", "alice"); r.code != exitError || !strings.Contains(r.stderr, "file exists") {
		t.Fatalf("second create-client alice: exit %d, stderr %q", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(aliceCert); !bytes.Equal(before, after) {
		t.Fatal("a second create-client changed alice's certificate")
	}
	if r := metactl(t, noCluster, "cert", "create-member", "--certs-dir", dir, "--name", "n2"); r.code != exitUsage {
		t.Fatalf("create-member without --hosts: exit %d, want 2", r.code)
	}
	if r := metactl(t, noCluster, "cert", "create-client", "--certs-dir", t.TempDir(), "--name", "bob"); r.code != exitError || !strings.Contains(r.stderr, "create-ca") {
		t.Fatalf("create-client without a CA: exit %d, stderr %q", r.code, r.stderr)
	}

	// The member's certificate serves its hosts; the client's names its principal.
	mc, _ := tlsconf.MemberFiles(dir, "n1")
	certs, err := readCerts(mc)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	ca, _ := readCerts(caFile)
	pool.AddCert(ca[0])
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("member n1 for %s: %v", host, err)
		}
	}

	// An expired certificate, made directly, is listed as such.
	loaded, err := tlsconf.LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := loaded.IssueClient(dir, "old", tlsconf.Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	var ls []certView
	metactl(t, noCluster, "cert", "ls", "--certs-dir", dir, "-o", "json").ok(t).json(t, &ls)
	want := []struct{ file, identity, status string }{
		{"ca.crt", "ca", "expires in 3649d"},
		{"client.alice.crt", "metad://principal/alice", "expires in 29d"},
		{"client.old.crt", "metad://principal/old", "expired"},
		{"member.n1.crt", "metad://member/n1", "expires in 364d"},
	}
	if len(ls) != len(want) {
		t.Fatalf("cert ls: %+v", ls)
	}
	for i, w := range want {
		if g := ls[i]; g.File != w.file || g.Identity != w.identity || g.Status != w.status || g.Expired != (w.status == "expired") {
			t.Errorf("cert ls row %d: %+v, want %+v", i, g, w)
		}
	}
	r = metactl(t, noCluster, "cert", "ls", "--certs-dir", dir).ok(t)
	if lines := strings.Split(r.stdout, "\n"); len(lines) < 4 || strings.Join(strings.Fields(lines[0]), " ") != "FILE IDENTITY NOT AFTER STATUS" ||
		strings.Join(strings.Fields(lines[3]), " ") != "client.old.crt metad://principal/old "+ls[2].NotAfter+" expired" {
		t.Fatalf("cert ls table:\n%s", r.stdout)
	}
}

// seenCall is what the TLS fake cluster saw of its last call: the authorization metadata and the
// identity of the peer's verified certificate. Safe for concurrent use.
type seenCall struct {
	mu             sync.Mutex
	auth, identity string
}

func (s *seenCall) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	var auth, id string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		auth = strings.Join(md.Get("authorization"), ",")
	}
	if p, ok := peer.FromContext(ctx); ok {
		if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
			if got, err := tlsconf.IdentityOf(ti.State.VerifiedChains[0][0]); err == nil {
				id = got.String()
			}
		}
	}
	s.mu.Lock()
	s.auth, s.identity = auth, id
	s.mu.Unlock()
	return h(ctx, req)
}

func (s *seenCall) get() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth, s.identity
}

// startTLSCluster makes a certificates directory (CA, member n1 for 127.0.0.1, the root
// principal's and alice's client certificates) in dir and starts a fake cluster serving TLS with
// n1's certificate.
func startTLSCluster(t *testing.T, dir string) (*fakeCluster, *seenCall) {
	t.Helper()
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mc, mk, err := ca.IssueMember(dir, "n1", []string{"127.0.0.1"}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{client.RootPrincipal, "alice"} {
		if _, _, err := ca.IssueClient(dir, p, tlsconf.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	pair, err := tls.LoadX509KeyPair(mc, mk)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	seen := &seenCall{}
	c := startCluster(t, grpc.Creds(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven})),
		grpc.UnaryInterceptor(seen.intercept))
	return c, seen
}

func TestMetactlUsesTheDefaultCertificatesDirectory(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	c, seen := startTLSCluster(t, filepath.Join(work, "data", "certs"))

	// data/certs/ca.crt turns TLS on and the root certificate is presented.
	metactl(t, c.addr, "tenant", "ls").ok(t)
	if auth, id := seen.get(); auth != "" || id != "metad://principal/root" {
		t.Fatalf("default: server saw authorization %q, identity %q; want root's certificate", auth, id)
	}
	// An API key replaces the root certificate.
	metactl(t, c.addr, "tenant", "ls", "--api-key", "mtd_k").ok(t)
	if auth, id := seen.get(); auth != "Bearer mtd_k" || id != "" {
		t.Fatalf("--api-key: server saw authorization %q, identity %q", auth, id)
	}
	// So does a named certificate (here by environment).
	ac, ak := tlsconf.ClientFiles(filepath.Join("data", "certs"), "alice")
	t.Setenv(client.EnvCert, ac)
	t.Setenv(client.EnvKey, ak)
	metactl(t, c.addr, "tenant", "ls").ok(t)
	if _, id := seen.get(); id != "metad://principal/alice" {
		t.Fatalf("METAD_CERT: server saw identity %q, want alice", id)
	}

	// Elsewhere, without data/certs, metactl speaks plaintext, which a TLS node refuses; given the
	// directory, it works again.
	t.Chdir(t.TempDir())
	t.Setenv(client.EnvCert, "")
	t.Setenv(client.EnvKey, "")
	if r := metactl(t, c.addr, "tenant", "ls", "--timeout", "1s"); r.code != exitError {
		t.Fatalf("plaintext to a TLS node: exit %d, want 1", r.code)
	}
	if r := metactl(t, c.addr, "tenant", "ls", "--api-key", "mtd_k"); r.code != exitUsage || !strings.Contains(r.stderr, "needs TLS") {
		t.Fatalf("a key without TLS: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
	t.Setenv(client.EnvCertsDir, filepath.Join(work, "data", "certs"))
	metactl(t, c.addr, "tenant", "ls").ok(t)
	if _, id := seen.get(); id != "metad://principal/root" {
		t.Fatalf("METAD_CERTS_DIR: server saw identity %q, want root", id)
	}
	if r := metactl(t, c.addr, "tenant", "ls", "--cacert", filepath.Join(work, "missing.crt")); r.code != exitError || !strings.Contains(r.stderr, "CA file") {
		t.Fatalf("a missing --cacert: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMetactlWorkerPresentsItsCertificate: metactl worker authenticates with --cert/--key.
func TestMetactlWorkerPresentsItsCertificate(t *testing.T) {
	dir := t.TempDir()
	c, seen := startTLSCluster(t, dir)
	ac, ak := tlsconf.ClientFiles(dir, "alice")
	metactl(t, c.addr, "worker", "--segments", "1", "--segment-size", "1MiB", "--duration", "50ms",
		"--cacert", filepath.Join(dir, tlsconf.CACertFile), "--cert", ac, "--key", ak).ok(t)
	if _, id := seen.get(); id != "metad://principal/alice" {
		t.Fatalf("worker: server saw identity %q, want alice", id)
	}
}
