package tlsconf

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// pki is a test's certificates directory: CAs and issued material kept as PEM bytes, so that a
// test can write any of them over the files a Reloader reads.
type pki struct {
	t *testing.T
}

// newCA creates a CA in a fresh directory.
func (p pki) newCA() *CA {
	p.t.Helper()
	ca, err := CreateCA(p.t.TempDir(), Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	return ca
}

// pemSet holds one issued certificate and key, and its CA's certificate.
type pemSet struct{ ca, cert, key []byte }

func (p pki) read(path string) []byte {
	p.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		p.t.Fatal(err)
	}
	return b
}

// member issues a member certificate for name, valid for localhost and 127.0.0.1.
func (p pki) member(ca *CA, name string, o Options) pemSet {
	p.t.Helper()
	dir := p.t.TempDir()
	c, k, err := ca.IssueMember(dir, name, []string{"localhost", "127.0.0.1"}, o)
	if err != nil {
		p.t.Fatal(err)
	}
	return pemSet{ca: caPEM(ca), cert: p.read(c), key: p.read(k)}
}

// client issues a client certificate for principal name.
func (p pki) client(ca *CA, name string) pemSet {
	p.t.Helper()
	dir := p.t.TempDir()
	c, k, err := ca.IssueClient(dir, name, Options{})
	if err != nil {
		p.t.Fatal(err)
	}
	return pemSet{ca: caPEM(ca), cert: p.read(c), key: p.read(k)}
}

func caPEM(ca *CA) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// install writes s over f's files, each by rename (as an operator's tooling should).
func (p pki) install(f Files, s pemSet) {
	p.t.Helper()
	for _, w := range []struct {
		path string
		b    []byte
	}{{f.CA, s.ca}, {f.Cert, s.cert}, {f.Key, s.key}} {
		if w.path == "" {
			continue
		}
		tmp := w.path + ".tmp"
		if err := os.WriteFile(tmp, w.b, 0o600); err != nil {
			p.t.Fatal(err)
		}
		if err := os.Rename(tmp, w.path); err != nil {
			p.t.Fatal(err)
		}
	}
}

func filesIn(dir string) Files {
	return Files{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem")}
}

// echoServer serves cfg on a loopback port: every connection that completes its handshake echoes
// what it reads. It stops when the test ends.
func echoServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// dial opens a TLS connection to addr as cfg says, naming server (the dialed host), and checks
// that one byte makes the round trip (in TLS 1.3 a refused client certificate shows only there).
func dial(addr, server string, cfg *tls.Config) (*tls.Conn, error) {
	cfg = cfg.Clone()
	cfg.ServerName = server
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	if err := roundTrip(c); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func roundTrip(c *tls.Conn) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte{7}); err != nil {
		return err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return err
	}
	return nil
}

func serial(c *tls.Conn) *big.Int { return c.ConnectionState().PeerCertificates[0].SerialNumber }

func newReloader(t *testing.T, f Files) *Reloader {
	t.Helper()
	r, err := NewReloader(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReloaderRefusesBadFilesAtStart(t *testing.T) {
	p := pki{t}
	ca, other := p.newCA(), p.newCA()
	good := p.member(ca, "n1", Options{})
	expired := p.member(ca, "n1", Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: time.Hour})
	foreign := p.member(other, "n1", Options{})
	cases := []struct {
		name string
		set  pemSet
		want error
	}{
		{"empty CA bundle", pemSet{ca: []byte("\n"), cert: good.cert, key: good.key}, ErrBadMaterial},
		{"unparsable certificate", pemSet{ca: good.ca, cert: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), key: good.key}, ErrBadMaterial},
		{"key of another certificate", pemSet{ca: good.ca, cert: good.cert, key: expired.key}, ErrBadMaterial},
		{"expired", expired, ErrNotValidNow},
		{"signed by another CA", pemSet{ca: good.ca, cert: foreign.cert, key: foreign.key}, ErrUntrusted},
	}
	for _, tc := range cases {
		f := filesIn(t.TempDir())
		p.install(f, tc.set)
		if _, err := NewReloader(f, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	f := filesIn(t.TempDir())
	p.install(f, good)
	r := newReloader(t, f)
	if got := r.Identity(); got != (Identity{Kind: Member, Name: "n1"}) {
		t.Fatalf("identity %v", got)
	}
	if _, err := NewReloader(Files{CA: f.CA, Cert: f.Cert}, nil); !errors.Is(err, ErrBadMaterial) {
		t.Fatalf("a certificate without its key: %v", err)
	}
}

// TestReloaderBadReplacementKeepsLastGood: every kind of bad replacement is refused, counted and
// leaves the served certificate as it was; a good one is then served to new handshakes while a
// connection opened before keeps working.
func TestReloaderBadReplacementKeepsLastGood(t *testing.T) {
	p := pki{t}
	ca, other := p.newCA(), p.newCA()
	first := p.member(ca, "n1", Options{})
	f := filesIn(t.TempDir())
	p.install(f, first)
	r := newReloader(t, f)
	reg := prometheus.NewRegistry()
	if err := r.RegisterMetrics(reg, "client"); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterMetrics(reg, "metrics"); err != nil {
		t.Fatalf("a second listener: %v", err)
	}
	if err := r.RegisterMetrics(reg, "client"); err == nil {
		t.Fatal("the same listener registered twice")
	}
	clientR := newReloader(t, Files{CA: f.CA})
	addr := echoServer(t, r.ServerConfig(tls.NoClientCert))
	old, err := dial(addr, "localhost", clientR.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	firstSerial := serial(old)

	expired := p.member(ca, "n1", Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: time.Hour})
	foreign := p.member(other, "n1", Options{})
	n2 := p.member(ca, "n2", Options{})
	bad := []struct {
		name string
		set  pemSet
		want error
	}{
		{"garbage certificate", pemSet{ca: first.ca, cert: []byte("garbage"), key: first.key}, ErrBadMaterial},
		{"key mismatch", pemSet{ca: first.ca, cert: first.cert, key: n2.key}, ErrBadMaterial},
		{"expired", expired, ErrNotValidNow},
		{"empty CA bundle", pemSet{ca: []byte{}, cert: first.cert, key: first.key}, ErrBadMaterial},
		{"untrusted", pemSet{ca: first.ca, cert: foreign.cert, key: foreign.key}, ErrUntrusted},
		{"another member", n2, ErrIdentityChanged},
	}
	for i, tc := range bad {
		p.install(f, tc.set)
		if err := r.Reload(); !errors.Is(err, tc.want) {
			t.Fatalf("%s: reload %v, want %v", tc.name, err, tc.want)
		}
		if got := testutil.ToFloat64(r.reloads.WithLabelValues("error")); got != float64(i+1) {
			t.Fatalf("%s: %v errors counted, want %d", tc.name, got, i+1)
		}
		c, err := dial(addr, "localhost", clientR.ClientConfig())
		if err != nil {
			t.Fatalf("%s: a new handshake after a bad reload: %v", tc.name, err)
		}
		if serial(c).Cmp(firstSerial) != 0 {
			t.Fatalf("%s: a bad reload changed the served certificate", tc.name)
		}
		_ = c.Close()
	}

	second := p.member(ca, "n1", Options{Validity: 2 * time.Hour})
	p.install(f, second)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(r.reloads.WithLabelValues("ok")); got != 1 {
		t.Fatalf("%v ok reloads, want 1", got)
	}
	c, err := dial(addr, "localhost", clientR.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if serial(c).Cmp(firstSerial) == 0 {
		t.Fatal("a new handshake after the reload got the old certificate")
	}
	if err := roundTrip(old); err != nil {
		t.Fatalf("the connection opened before the reload: %v", err)
	}
	if n, err := testutil.GatherAndCount(reg, "metad_tls_cert_expiry_seconds"); err != nil || n != 2 {
		t.Fatalf("expiry series %d (%v), want one per listener", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "metad_tls_cert_expiry_seconds" {
			for _, m := range mf.GetMetric() {
				if v := m.GetGauge().GetValue(); v <= 0 || v > 2*3600 {
					t.Fatalf("expiry %v s, want the second certificate's, under 2 h", v)
				}
			}
		}
	}
}

// TestReloaderServerUsesReloadedCABundle: a listener that requires client certificates trusts a
// new CA from the next handshake after its bundle is reloaded (the overlap bundle of a CA
// rotation), and stops trusting one removed from it.
func TestReloaderServerUsesReloadedCABundle(t *testing.T) {
	p := pki{t}
	ca1, ca2 := p.newCA(), p.newCA()
	node := p.member(ca1, "n1", Options{})
	f := filesIn(t.TempDir())
	p.install(f, node)
	r := newReloader(t, f)
	addr := echoServer(t, r.ServerConfig(tls.RequireAndVerifyClientCert))

	clientFiles := func(s pemSet) *Reloader {
		cf := filesIn(t.TempDir())
		p.install(cf, s)
		return newReloader(t, cf)
	}
	alice := p.client(ca1, "alice")
	alice.ca = append(append([]byte{}, caPEM(ca1)...), caPEM(ca2)...) // alice trusts servers of both CAs
	bob := p.client(ca2, "bob")
	bob.ca = append(append([]byte{}, caPEM(ca2)...), node.ca...) // bob trusts the servers' CA too
	aliceR, bobR := clientFiles(alice), clientFiles(bob)

	if err := try(addr, "127.0.0.1", aliceR.ClientConfig()); err != nil {
		t.Fatalf("a client of the trusted CA: %v", err)
	}
	if err := try(addr, "127.0.0.1", bobR.ClientConfig()); err == nil {
		t.Fatal("a client certificate of an untrusted CA was accepted")
	}
	if err := try(addr, "127.0.0.1", newReloader(t, Files{CA: f.CA}).ClientConfig()); err == nil {
		t.Fatal("a client without a certificate was accepted under RequireAndVerifyClientCert")
	}
	overlap := node
	overlap.ca = append(append([]byte{}, caPEM(ca1)...), caPEM(ca2)...)
	p.install(f, overlap)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	for name, cr := range map[string]*Reloader{"ca1": aliceR, "ca2": bobR} {
		if err := try(addr, "127.0.0.1", cr.ClientConfig()); err != nil {
			t.Fatalf("client of %s under the overlap bundle: %v", name, err)
		}
	}
	n1ca2 := p.member(ca2, "n1", Options{})
	n1ca2.ca = caPEM(ca2)
	p.install(f, n1ca2)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := try(addr, "127.0.0.1", aliceR.ClientConfig()); err == nil {
		t.Fatal("a client of a CA removed from the bundle was accepted")
	}
}

// TestReloaderClientVerifiesServer: a dialer verifies the server against its current bundle, the
// dialed DNS name, and the server usage of the certificate.
func TestReloaderClientVerifiesServer(t *testing.T) {
	p := pki{t}
	ca1, ca2 := p.newCA(), p.newCA()
	srvFiles := filesIn(t.TempDir())
	p.install(srvFiles, p.member(ca2, "n1", Options{}))
	addr := echoServer(t, newReloader(t, srvFiles).ServerConfig(tls.NoClientCert))

	cf := Files{CA: filepath.Join(t.TempDir(), "ca.pem")}
	p.install(cf, pemSet{ca: caPEM(ca1)})
	cr := newReloader(t, cf)
	if err := try(addr, "localhost", cr.ClientConfig()); err == nil {
		t.Fatal("a server of an untrusted CA was accepted")
	}
	p.install(cf, pemSet{ca: append(caPEM(ca1), caPEM(ca2)...)})
	if err := cr.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := try(addr, "localhost", cr.ClientConfig()); err != nil {
		t.Fatalf("after the bundle reload: %v", err)
	}
	if err := try(addr, "other.example", cr.ClientConfig()); err == nil {
		t.Fatal("a server certificate not valid for the dialed name was accepted")
	}

	// A principal's certificate (client usage only) cannot serve.
	pf := filesIn(t.TempDir())
	p.install(pf, p.client(ca1, "mallory"))
	paddr := echoServer(t, newReloader(t, pf).ServerConfig(tls.NoClientCert))
	if err := try(paddr, "localhost", cr.ClientConfig()); err == nil {
		t.Fatal("a client certificate was accepted as a server's")
	}
}

// TestReloaderRunFollowsFileChanges: Run loads a changed file within a few ticks, and tries a bad
// content once, not at every tick.
func TestReloaderRunFollowsFileChanges(t *testing.T) {
	p := pki{t}
	ca := p.newCA()
	f := filesIn(t.TempDir())
	p.install(f, p.member(ca, "n1", Options{}))
	r := newReloader(t, f)
	before := r.NotAfter()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()

	p.install(f, p.member(ca, "n1", Options{Validity: time.Hour}))
	deadline := time.Now().Add(5 * time.Second)
	for r.NotAfter().Equal(before) {
		if time.Now().After(deadline) {
			t.Fatal("Run did not load the changed files within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done

	p.install(f, pemSet{ca: caPEM(ca), cert: []byte("garbage"), key: []byte("garbage")})
	for range 3 {
		_ = r.reload(false) // what each tick of Run does
	}
	if got := testutil.ToFloat64(r.reloads.WithLabelValues("error")); got != 1 {
		t.Fatalf("an unchanged bad content counted %v times, want once", got)
	}
	if err := r.Reload(); err == nil {
		t.Fatal("Reload (SIGHUP) did not try the bad content again")
	}
	if err := os.Remove(f.Key); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_ = r.reload(false)
	}
	if got := testutil.ToFloat64(r.reloads.WithLabelValues("error")); got != 3 {
		t.Fatalf("a missing file: %v errors counted in all, want 3 (once more for the missing file)", got)
	}
}

// try dials as dial does and closes the connection.
func try(addr, server string, cfg *tls.Config) error {
	c, err := dial(addr, server, cfg)
	if err == nil {
		_ = c.Close()
	}
	return err
}
