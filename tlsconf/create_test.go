package tlsconf

import (
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestIssuedCertificatesVerifyAndNameTheirIdentity(t *testing.T) {
	dir := t.TempDir()
	ca, err := CreateCA(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateCA(dir, Options{}); !errors.Is(err, ErrExists) {
		t.Fatalf("second CreateCA: %v, want ErrExists", err)
	}
	loaded, err := LoadCA(dir)
	if err != nil || !loaded.Cert.Equal(ca.Cert) {
		t.Fatalf("LoadCA: %v", err)
	}
	mc, _, err := loaded.IssueMember(dir, "n1", []string{"127.0.0.1", "localhost"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cc, _, err := loaded.IssueClient(dir, "alice", Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, c := range []struct {
		path  string
		usage x509.ExtKeyUsage
		want  Identity
	}{
		{mc, x509.ExtKeyUsageServerAuth, Identity{Member, "n1"}},
		{mc, x509.ExtKeyUsageClientAuth, Identity{Member, "n1"}},
		{cc, x509.ExtKeyUsageClientAuth, Identity{Principal, "alice"}},
	} {
		cert, err := readCert(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
			t.Errorf("%s for %v: %v", c.path, c.usage, err)
		}
		if got, err := IdentityOf(cert); err != nil || got != c.want {
			t.Errorf("IdentityOf(%s) = %v, %v; want %v", c.path, got, err, c.want)
		}
	}
	cert, _ := readCert(cc)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate verified for server use")
	}
	if _, _, err := loaded.IssueClient(dir, "bad name", Options{}); !errors.Is(err, ErrBadName) {
		t.Errorf("IssueClient(bad name): %v, want ErrBadName", err)
	}
	old, _, err := loaded.IssueClient(dir, "old", Options{NotBefore: time.Now().Add(-48 * time.Hour), Validity: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := readCert(old)
	if _, err := oc.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("an expired certificate verified")
	}
}

func TestIdentityOfRefusesAmbiguousOrMalformed(t *testing.T) {
	u := func(s string) *url.URL { v, _ := url.Parse(s); return v }
	for _, c := range []struct {
		uris []*url.URL
		want error
	}{
		{nil, ErrNoIdentity},
		{[]*url.URL{u("spiffe://x/y")}, ErrNoIdentity},
		{[]*url.URL{u("metad://member/")}, ErrNoIdentity},
		{[]*url.URL{u("metad://root/x")}, ErrNoIdentity},
		{[]*url.URL{u("metad://member/n1"), u("metad://principal/p")}, ErrManyIdentities},
		{[]*url.URL{u("metad://principal/a%2Fb")}, ErrBadName},
	} {
		if _, err := IdentityOf(&x509.Certificate{URIs: c.uris}); !errors.Is(err, c.want) {
			t.Errorf("IdentityOf(%v) = %v, want %v", c.uris, err, c.want)
		}
	}
}

// TestMemberOf: a certificate IssueMember wrote is a member certificate; a principal's is not, nor
// one that names a member without the serverAuth extended key usage.
func TestMemberOf(t *testing.T) {
	dir := t.TempDir()
	ca, err := CreateCA(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mp, _, err := ca.IssueMember(dir, "n1", []string{"127.0.0.1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, _, err := ca.IssueClient(dir, "alice", Options{})
	if err != nil {
		t.Fatal(err)
	}
	mc, _ := readCert(mp)
	cc, _ := readCert(cp)
	if name, err := MemberOf(mc); err != nil || name != "n1" {
		t.Fatalf("MemberOf(member certificate) = %q, %v", name, err)
	}
	if _, err := MemberOf(cc); !errors.Is(err, ErrNotMemberCert) {
		t.Fatalf("MemberOf(client certificate): %v, want ErrNotMemberCert", err)
	}
	clientOnly := &x509.Certificate{URIs: mc.URIs, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := MemberOf(clientOnly); !errors.Is(err, ErrNotMemberCert) || !strings.Contains(err.Error(), "serverAuth") {
		t.Fatalf("MemberOf(member URI without serverAuth): %v, want ErrNotMemberCert naming serverAuth", err)
	}
	if _, err := MemberOf(&x509.Certificate{}); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("MemberOf(no identity): %v, want ErrNoIdentity", err)
	}
}
