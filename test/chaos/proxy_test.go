package chaos

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"metad/client"
	"metad/test/e2e"
	"metad/tlsconf"
)

// echo serves an echo server on loopback until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes a byte and waits up to d for it to come back.
func roundTrip(c net.Conn, d time.Duration) error {
	if _, err := c.Write([]byte{'x'}); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadFull(c, make([]byte, 1))
	return err
}

func TestProxyRules(t *testing.T) {
	if !Supported() {
		t.Skip("needs Linux /proc")
	}
	n := NewNet()
	t.Cleanup(n.Close)
	p, err := n.Listen(1, "peer")
	if err != nil {
		t.Fatal(err)
	}
	p.Serve(echo(t))
	// This process plays node 0.
	n.SetPID(0, os.Getpid())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatalf("pass: %v", err)
	}
	// Blackhole: the byte is held, then delivered when the link passes again.
	n.Set(0, 1, Blackhole)
	if err := roundTrip(c, 200*time.Millisecond); err == nil {
		t.Fatal("blackholed link delivered a byte")
	}
	n.Set(0, 1, Pass)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("held byte not delivered after heal: %v", err)
	}
	// Another source is not affected by node 0's rule.
	n.SetPID(0, 0)
	n.Set(0, 1, Drop)
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, 5*time.Second); err != nil {
		t.Fatalf("external connection through a rule for node 0: %v", err)
	}
	// Drop: node 0's connections are closed and new ones refused.
	n.SetPID(0, os.Getpid())
	n.Set(0, 1, Drop)
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := roundTrip(c3, 5*time.Second); err == nil {
		t.Fatal("dropped link delivered a byte")
	}
}

// TestProxyPassesTLS: a secure drill's connections cross the proxies as they are, so a mutual TLS
// handshake through a proxy verifies both ends: the member certificate names 127.0.0.1, the
// address the client dials (the proxy's), and the server sees the client's principal.
func TestProxyPassesTLS(t *testing.T) {
	pki := e2e.NewPKI(t, "n1")
	cert, key := tlsconf.MemberFiles(pki.Dir, "n1")
	member, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(pki.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{member}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	peers := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			peers <- "handshake: " + err.Error()
			return
		}
		id, err := tlsconf.IdentityOf(tc.ConnectionState().PeerCertificates[0])
		if err != nil {
			peers <- err.Error()
			return
		}
		peers <- id.Name
		_, _ = io.Copy(c, c)
	}()

	n := NewNet()
	t.Cleanup(n.Close)
	p, err := n.Listen(0, "client")
	if err != nil {
		t.Fatal(err)
	}
	p.Serve(ln.Addr().String())
	c, err := tls.Dial("tcp", p.Addr(), pki.ClientTLS(t, client.RootPrincipal))
	if err != nil {
		t.Fatalf("TLS through the proxy: %v", err)
	}
	defer c.Close()
	if err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatalf("round trip through the proxy: %v", err)
	}
	if got := <-peers; got != client.RootPrincipal {
		t.Fatalf("the server saw %q, want %q", got, client.RootPrincipal)
	}
}
