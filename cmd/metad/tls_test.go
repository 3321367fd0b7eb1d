package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"metad/tlsconf"
)

func TestStartNeedsCertificatesOrInsecure(t *testing.T) {
	none := func(string) string { return "" }
	var stderr bytes.Buffer
	if code := run([]string{"--data-dir", t.TempDir()}, none, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "--cacert, --cert and --key") || !strings.Contains(stderr.String(), "--insecure") {
		t.Fatalf("no certificates, no --insecure: exit %d: %s", code, stderr.String())
	}
	if _, err := loadConfig([]string{"--cacert", "ca.crt", "--cert", "n1.crt"}, none, io.Discard); err == nil || !strings.Contains(err.Error(), "--key: not set") {
		t.Fatalf("a certificate without its key: %v", err)
	}
	if _, err := loadConfig([]string{"--insecure", "--cert", "n1.crt"}, none, io.Discard); err == nil || !strings.Contains(err.Error(), "insecure: cannot be combined with --cert") {
		t.Fatalf("--insecure with a certificate: %v", err)
	}
	if _, err := loadConfig([]string{"--client-cert-auth", "always"}, none, io.Discard); err == nil || !strings.Contains(err.Error(), "client-cert-auth") {
		t.Fatalf("bad client-cert-auth: %v", err)
	}
	if c, err := loadConfig([]string{"--insecure"}, none, io.Discard); err != nil || c.MetricsClientCertAuth != "require" {
		t.Fatalf("metrics-client-cert-auth by default: %q, %v; want require", c.MetricsClientCertAuth, err)
	}
	if _, err := loadConfig([]string{"--insecure", "--metrics-client-cert-auth", "none"}, none, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `metrics-client-cert-auth "none": want optional or require`) {
		t.Fatalf("bad metrics-client-cert-auth: %v", err)
	}
	// The names work as environment variables and YAML keys too.
	c, err := loadConfig(nil, func(k string) string { return map[string]string{"METAD_INSECURE": "true"}[k] }, io.Discard)
	if err != nil || !c.Insecure {
		t.Fatalf("METAD_INSECURE: %v", err)
	}
	file := filepath.Join(t.TempDir(), "metad.yaml")
	if err := os.WriteFile(file, []byte("cacert: /c/ca.crt\ncert: /c/n1.crt\nkey: /c/n1.key\nclient-cert-auth: require\ntls-reload-interval: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = loadConfig([]string{"--config", file}, none, io.Discard)
	if err != nil || c.CACert != "/c/ca.crt" || c.Cert != "/c/n1.crt" || c.Key != "/c/n1.key" || c.ClientCertAuth != "require" || c.TLSReloadInterval != time.Minute {
		t.Fatalf("YAML: %+v %v", c, err)
	}
}

func TestInsecureOnlyOnLoopback(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range [][]string{
		{"--listen-client", "0.0.0.0:6001"},
		{"--listen-client", ":6001"},
		{"--advertise-client", "10.1.2.3:6001"},
		{"--listen-peer", "[::]:6101"},
		{"--advertise-peer", "node1.example:6101"},
		{"--listen-metrics", "192.168.0.5:6201"},
	} {
		_, err := loadConfig(append([]string{"--insecure"}, tc...), none, io.Discard)
		if want := strings.TrimPrefix(tc[0], "--"); err == nil || !strings.Contains(err.Error(), "insecure: refused because "+want) {
			t.Errorf("--insecure %v: %v", tc, err)
		}
	}
	for _, tc := range [][]string{
		{"--listen-client", "[::1]:6001", "--listen-peer", "localhost:6101", "--advertise-peer", "127.0.0.2:6101"},
		{"--listen-metrics", ""},
	} {
		if _, err := loadConfig(append([]string{"--insecure"}, tc...), none, io.Discard); err != nil {
			t.Errorf("--insecure %v: %v", tc, err)
		}
	}
}

// certs is a test cluster's certificates: a CA, member n1's node certificate (which the node reads
// from live/, where the test replaces it) and clients' certificates.
type certs struct {
	t    *testing.T
	ca   *tlsconf.CA
	dir  string // the CA and what it issued
	live tlsconf.Files
}

func newCerts(t *testing.T, member string) *certs {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &certs{t: t, ca: ca, dir: dir}
	live := t.TempDir()
	c.live = tlsconf.Files{CA: filepath.Join(dir, tlsconf.CACertFile), Cert: filepath.Join(live, "node.crt"), Key: filepath.Join(live, "node.key")}
	c.replace(member, tlsconf.Options{})
	return c
}

// replace issues a new node certificate for member and renames it over the live files.
func (c *certs) replace(member string, o tlsconf.Options) {
	c.t.Helper()
	cert, key, err := c.ca.IssueMember(c.t.TempDir(), member, []string{"127.0.0.1", "localhost"}, o)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, mv := range [][2]string{{key, c.live.Key}, {cert, c.live.Cert}} {
		if err := os.Rename(mv[0], mv[1]); err != nil {
			c.t.Fatal(err)
		}
	}
}

// client returns a TLS configuration that trusts the CA and presents principal name's certificate
// (none when name is empty).
func (c *certs) client(name string) *tls.Config {
	c.t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.Cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}
	if name != "" {
		cert, key, err := c.ca.IssueClient(c.t.TempDir(), name, tlsconf.Options{})
		if err != nil {
			c.t.Fatal(err)
		}
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			c.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg
}

func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for concurrent use (a node's log).
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startNode runs a one-member TLS cluster n1 in this process until the test ends, and returns its
// config once its client listener answers a TLS health check. more, if given, change the config
// before it starts.
func startNode(t *testing.T, c *certs, clientAuth string, more ...func(*Config)) Config {
	t.Helper()
	ports := freePorts(t, 3)
	cfg := DefaultConfig()
	cfg.Name, cfg.DataDir, cfg.LogLevel = "n1", t.TempDir(), "info"
	cfg.ListenClient, cfg.ListenPeer, cfg.ListenMetrics = ports[0], ports[1], ports[2]
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 300*time.Millisecond, 300*time.Millisecond, 150*time.Millisecond
	cfg.CACert, cfg.Cert, cfg.Key = c.live.CA, c.live.Cert, c.live.Key
	cfg.ClientCertAuth, cfg.TLSReloadInterval = clientAuth, 50*time.Millisecond
	for _, f := range more {
		f(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, newLogger(logs, cfg.LogLevel)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the node did not stop within 30 s")
		}
		if t.Failed() {
			t.Logf("node log:\n%s", logs.String())
		}
	})
	cc := dialNode(t, cfg.ListenClient, credentials.NewTLS(c.client("alice")))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := check(cc, nil); err == nil {
			return cfg
		} else if time.Now().After(deadline) {
			t.Fatalf("no TLS health answer within 20 s: %v", err)
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned: %v\n%s", err, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func dialNode(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// check calls the health service on cc within 2 s; the serial of the server's certificate is
// returned when p is given.
func check(cc *grpc.ClientConn, p *peer.Peer) (*big.Int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var opts []grpc.CallOption
	if p != nil {
		opts = append(opts, grpc.Peer(p))
	}
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, opts...); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, nil
	}
	return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].SerialNumber, nil
}

// handshakeSerial opens a new TLS connection to addr and returns the serial of the certificate
// served.
func handshakeSerial(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// metricsText fetches /metrics over TLS.
func metricsText(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	code, b := metricsGet(t, addr, "/metrics", cfg)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, b)
	}
	return b
}

// metricsGet fetches path from the metrics address over TLS and returns the status and the body.
func metricsGet(t *testing.T, addr, path string, cfg *tls.Config) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestCertificateOfAnotherMemberRefused(t *testing.T) {
	c := newCerts(t, "n2")
	var stderr bytes.Buffer
	code := run([]string{"--name", "n1", "--data-dir", t.TempDir(), "--cacert", c.live.CA, "--cert", c.live.Cert, "--key", c.live.Key,
		"--listen-client", "127.0.0.1:0", "--listen-peer", "127.0.0.1:0", "--listen-metrics", ""}, func(string) string { return "" }, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "names metad://member/n2, but this member is metad://member/n1") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestTLSNodeRequiringClientCertificates: a node with --client-cert-auth require answers a client
// of its CA over TLS 1.3 and refuses a plaintext client, a client without a certificate and one
// whose certificate another CA issued; its metrics listener serves TLS. Replaced certificate files
// are served to new handshakes while a connection opened before keeps working; a bad replacement
// keeps the certificate served and counts an error.
func TestTLSNodeRequiringClientCertificates(t *testing.T) {
	c := newCerts(t, "n1")
	cfg := startNode(t, c, "require")

	alice := c.client("alice")
	aliceConn := dialNode(t, cfg.ListenClient, credentials.NewTLS(alice))
	var p peer.Peer
	first, err := check(aliceConn, &p)
	if err != nil {
		t.Fatal(err)
	}
	if v := p.AuthInfo.(credentials.TLSInfo).State.Version; v != tls.VersionTLS13 {
		t.Fatalf("TLS version %x, want 1.3", v)
	}
	if _, err := check(dialNode(t, cfg.ListenClient, insecure.NewCredentials()), nil); err == nil {
		t.Fatal("a plaintext client was answered")
	}
	if _, err := check(dialNode(t, cfg.ListenClient, credentials.NewTLS(c.client(""))), nil); err == nil {
		t.Fatal("a client without a certificate was answered under require")
	}
	other := newCerts(t, "n1")
	eve := other.client("eve")
	eve.RootCAs = alice.RootCAs // eve trusts the node: the refusal is the node's
	if _, err := check(dialNode(t, cfg.ListenClient, credentials.NewTLS(eve)), nil); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}

	// The metrics listener: TLS; /metrics needs a client certificate whose holder may list the
	// tenants (root here), /healthz none; plaintext HTTP is not served.
	root := c.client("root")
	if m := metricsText(t, cfg.ListenMetrics, root); !strings.Contains(m, `metad_tls_cert_expiry_seconds{listener="client"}`) ||
		!strings.Contains(m, `metad_tls_cert_expiry_seconds{listener="metrics"}`) {
		t.Fatalf("expiry metrics missing:\n%s", m)
	}
	if code, b := metricsGet(t, cfg.ListenMetrics, "/metrics", c.client("")); code != http.StatusUnauthorized || !strings.Contains(b, "client certificate") {
		t.Fatalf("/metrics without a client certificate: %d %s, want 401", code, b)
	}
	if code, b := metricsGet(t, cfg.ListenMetrics, "/metrics", alice); code != http.StatusForbidden || !strings.Contains(b, "reader") {
		t.Fatalf("/metrics for a principal with no role: %d %s, want 403", code, b)
	}
	if code, b := metricsGet(t, cfg.ListenMetrics, "/healthz", c.client("")); code != http.StatusOK {
		t.Fatalf("/healthz without a client certificate: %d %s", code, b)
	}
	if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + cfg.ListenMetrics + "/metrics"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the metrics listener answered plaintext HTTP")
		}
	}

	// Rotation: new files are served to new handshakes; the open connection keeps working.
	c.replace("n1", tlsconf.Options{Validity: 48 * time.Hour})
	deadline := time.Now().Add(10 * time.Second)
	var second *big.Int
	for {
		if second = handshakeSerial(t, cfg.ListenClient, alice); second.Cmp(first) != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replaced certificate was not served within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got, err := check(aliceConn, &p); err != nil || got.Cmp(first) != 0 {
		t.Fatalf("the connection opened before the reload: serial %v (%v), want the first certificate's", got, err)
	}
	if _, err := check(dialNode(t, cfg.ListenClient, credentials.NewTLS(alice)), nil); err != nil {
		t.Fatalf("a new gRPC connection after the reload: %v", err)
	}

	// A bad replacement: counted, and the second certificate stays.
	if err := os.WriteFile(c.live.Cert, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(metricsText(t, cfg.ListenMetrics, root), `metad_tls_reloads_total{result="error"} 1`) {
		if time.Now().After(deadline) {
			t.Fatal("the bad replacement was not counted within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := handshakeSerial(t, cfg.ListenClient, alice); got.Cmp(second) != 0 {
		t.Fatal("a bad replacement changed the served certificate")
	}
	if _, err := check(dialNode(t, cfg.ListenClient, credentials.NewTLS(alice)), nil); err != nil {
		t.Fatalf("a new connection after a bad replacement: %v", err)
	}
}

// TestTLSNodeWithOptionalClientCertificates: under optional, a TLS client without a certificate
// is served (it may authenticate with an API key), and one presenting a certificate of another
// CA is still refused. With --metrics-client-cert-auth optional, /metrics is served without one.
func TestTLSNodeWithOptionalClientCertificates(t *testing.T) {
	c := newCerts(t, "n1")
	cfg := startNode(t, c, "optional", func(cfg *Config) { cfg.MetricsClientCertAuth = "optional" })
	if m := metricsText(t, cfg.ListenMetrics, c.client("")); !strings.Contains(m, "metad_tls_cert_expiry_seconds") {
		t.Fatalf("/metrics under optional, without a certificate:\n%s", m)
	}
	if _, err := check(dialNode(t, cfg.ListenClient, credentials.NewTLS(c.client(""))), nil); err != nil {
		t.Fatalf("a client without a certificate under optional: %v", err)
	}
	eve := newCerts(t, "n1").client("eve")
	eve.RootCAs = c.client("").RootCAs
	if _, err := check(dialNode(t, cfg.ListenClient, credentials.NewTLS(eve)), nil); err == nil {
		t.Fatal("a client certificate of another CA was accepted under optional")
	}
	if _, err := check(dialNode(t, cfg.ListenClient, insecure.NewCredentials()), nil); err == nil {
		t.Fatal("a plaintext client was answered")
	}
}

// TestSIGHUPReloads: a SIGHUP reloads the files at once, whatever the polling interval.
func TestSIGHUPReloads(t *testing.T) {
	c := newCerts(t, "n1")
	rl, err := tlsconf.NewReloader(c.live, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := rl.NotAfter()
	c.replace("n1", tlsconf.Options{Validity: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	hup := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() { reloadOnHUP(ctx, hup, rl, newLogger(io.Discard, "error")); close(done) }()
	defer func() { cancel(); <-done }()
	hup <- syscall.SIGHUP
	deadline := time.Now().Add(5 * time.Second)
	for rl.NotAfter().Equal(before) {
		if time.Now().After(deadline) {
			t.Fatal("SIGHUP did not reload within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
