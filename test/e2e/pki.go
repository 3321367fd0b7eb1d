package e2e

import (
	"crypto/tls"
	"errors"
	"os"
	"testing"

	"metad/client"
	"metad/tlsconf"
)

// PKI is a cluster CA and its certificates in one directory laid out as `metactl cert` lays it out
// (tlsconf's file names), so that metactl's --certs-dir finds the CA and root's client certificate.
type PKI struct {
	Dir string
	CA  *tlsconf.CA
}

// NewPKI creates a CA in a fresh temp dir, a node certificate for each member (valid for
// 127.0.0.1 and localhost) and a client certificate for the bootstrap admin principal, root.
func NewPKI(tb testing.TB, members ...string) *PKI {
	tb.Helper()
	p := &PKI{Dir: tb.TempDir()}
	ca, err := tlsconf.CreateCA(p.Dir, tlsconf.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	p.CA = ca
	for _, m := range members {
		if _, _, err := ca.IssueMember(p.Dir, m, []string{"127.0.0.1", "localhost"}, tlsconf.Options{}); err != nil {
			tb.Fatal(err)
		}
	}
	p.Principal(tb, client.RootPrincipal)
	return p
}

// MemberFlags are the metad flags that give member name its certificate and the cluster's CA.
func (p *PKI) MemberFlags(name string) []string {
	cert, key := tlsconf.MemberFiles(p.Dir, name)
	return []string{"--cacert", p.CAFile(), "--cert", cert, "--key", key}
}

// CAFile is the path of the CA bundle.
func (p *PKI) CAFile() string { return p.Dir + string(os.PathSeparator) + tlsconf.CACertFile }

// Principal issues a client certificate for principal name, unless it exists, and returns its
// certificate and key paths.
func (p *PKI) Principal(tb testing.TB, name string) (cert, key string) {
	tb.Helper()
	cert, key, err := p.CA.IssueClient(p.Dir, name, tlsconf.Options{})
	if errors.Is(err, tlsconf.ErrExists) {
		cert, key = tlsconf.ClientFiles(p.Dir, name)
	} else if err != nil {
		tb.Fatal(err)
	}
	return cert, key
}

// ClientTLS returns a client TLS configuration that trusts the CA and presents principal's
// certificate; principal "" presents none (for a client that authenticates by API key).
func (p *PKI) ClientTLS(tb testing.TB, principal string) *tls.Config {
	tb.Helper()
	var cert, key string
	if principal != "" {
		cert, key = p.Principal(tb, principal)
	}
	cfg, err := client.TLSFromFiles(p.CAFile(), cert, key)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// MetricValueTLS is MetricValue over HTTPS, verifying the node with tlsCfg (a client
// configuration that trusts the cluster CA, such as ClientTLS's, and presents a certificate the
// metrics address serves: a member's, or a reader's or admin's such as root's); nil reads plain
// HTTP.
func MetricValueTLS(tlsCfg *tls.Config, addr, name string) (float64, error) {
	return metricValue(tlsCfg, addr, name)
}
