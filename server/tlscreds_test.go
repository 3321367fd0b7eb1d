package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"metad/tlsconf"
)

// TestServerTLSRefusalsSayWhy: a client the TLS listener refuses learns why from its error, on
// every attempt: a client without a certificate where one is required, one whose certificate
// another CA issued (both refused by the TLS handshake: UNAVAILABLE naming the TLS alert), and a
// plaintext client (UNAUTHENTICATED, saying the node serves TLS). (The refusal must reach the client before the
// connection closes: a reset loses it, and the client sees only "broken pipe" or "connection
// reset".) A client with a certificate of the CA is served.
func TestServerTLSRefusalsSayWhy(t *testing.T) {
	dir, otherDir := t.TempDir(), t.TempDir()
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlsconf.CreateCA(otherDir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pair := func(ca *tlsconf.CA, dir string, member bool, name string) tls.Certificate {
		cert, key, err := ca.IssueClient(dir, name, tlsconf.Options{})
		if member {
			cert, key, err = ca.IssueMember(dir, name, []string{"127.0.0.1"}, tlsconf.Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srvCfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair(ca, dir, true, "n1")},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	gs := grpc.NewServer(grpc.Creds(TLSCredentials(srvCfg)))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	clientTLS := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, Certificates: certs})
	}
	check := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := check(clientTLS(pair(ca, dir, false, "alice"))); err != nil {
		t.Fatalf("a client certificate of the CA: %v", err)
	}
	for _, tc := range []struct {
		name  string
		creds credentials.TransportCredentials
		code  codes.Code
		want  string
	}{
		{"no certificate", clientTLS(), codes.Unavailable, "certificate required"},
		{"another CA's certificate", clientTLS(pair(other, otherDir, false, "eve")), codes.Unavailable, "unknown certificate authority"},
		{"plaintext", insecure.NewCredentials(), codes.Unauthenticated, PlaintextRefusal},
	} {
		for i := range 20 {
			err := check(tc.creds)
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s, attempt %d: %v; want %v saying %q", tc.name, i, err, tc.code, tc.want)
			}
		}
	}
}
