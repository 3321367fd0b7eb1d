package server

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"metad/auth"
	"metad/service/servicetest"
)

// TestScrapeNeedsACertificateThatMaySeeTenants: behind ScrapeAuth, a page is served to a member
// of the configuration and to a principal with the reader or admin role (root always); no
// certificate is 401, and a principal without those roles, a member outside the configuration or
// a member name without serverAuth is 403, each saying why.
func TestScrapeNeedsACertificateThatMaySeeTenants(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.SetMembers("n1", "n2")
	n.b.MustApply(t, servicetest.Grant("rita", "reader"))
	n.b.MustApply(t, servicetest.Grant("ops", "admin"))
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "metad_server_tenant_charged_bytes")
	})
	hs := httptest.NewUnstartedServer(n.srv.ScrapeAuth(page))
	hs.TLS = &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.member(t, "n1")},
		ClientCAs: p.pool, ClientAuth: tls.VerifyClientCertIfGiven}
	hs.StartTLS()
	defer hs.Close()
	get := func(certs ...tls.Certificate) (int, string) {
		t.Helper()
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: p.clientTLS(certs...)}, Timeout: 5 * time.Second}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(hs.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		code  int
		says  string
	}{
		{"no certificate", nil, http.StatusUnauthorized, "needs a verified client certificate"},
		{"a tenant's principal", []tls.Certificate{p.client(t, "alice")}, http.StatusForbidden, "reader"},
		{"a reader", []tls.Certificate{p.client(t, "rita")}, http.StatusOK, "metad_server_tenant"},
		{"an admin", []tls.Certificate{p.client(t, "ops")}, http.StatusOK, "metad_server_tenant"},
		{"root", []tls.Certificate{p.client(t, auth.RootPrincipal)}, http.StatusOK, "metad_server_tenant"},
		{"a member", []tls.Certificate{p.member(t, "n2")}, http.StatusOK, "metad_server_tenant"},
		{"a member outside the configuration", []tls.Certificate{p.member(t, "n9")}, http.StatusForbidden, "not in this node's Raft configuration"},
		{"a member name without serverAuth", []tls.Certificate{memberWithoutServerAuth(t, p, "n2")}, http.StatusForbidden, "serverAuth"},
	} {
		code, body := get(tc.certs...)
		if code != tc.code || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.name, code, body, tc.code, tc.says)
		}
	}
}
