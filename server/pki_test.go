package server

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"metad/tlsconf"
)

// pki is a cluster CA in a test's temporary directory, with the certificates tests ask of it.
type pki struct {
	dir  string
	ca   *tlsconf.CA
	pool *x509.CertPool
}

func newPKI(t testing.TB) *pki {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, tlsconf.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no CA certificate in ca.crt")
	}
	return &pki{dir: dir, ca: ca, pool: pool}
}

// member is member name's certificate (for 127.0.0.1), issued once per name.
func (p *pki) member(t testing.TB, name string) tls.Certificate {
	t.Helper()
	c, k := tlsconf.MemberFiles(p.dir, name)
	if _, err := os.Stat(c); err != nil {
		if _, _, err := p.ca.IssueMember(p.dir, name, []string{"127.0.0.1"}, tlsconf.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := tls.LoadX509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// client is principal name's client certificate, issued once per name.
func (p *pki) client(t testing.TB, name string) tls.Certificate {
	t.Helper()
	c, k := tlsconf.ClientFiles(p.dir, name)
	if _, err := os.Stat(c); err != nil {
		if _, _, err := p.ca.IssueClient(p.dir, name, tlsconf.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := tls.LoadX509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// clientTLS verifies the server against the CA and presents certs (none: no client certificate).
func (p *pki) clientTLS(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: p.pool, Certificates: certs}
}
