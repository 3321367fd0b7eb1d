package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/tlsconf"
)

// TestForwardDialsWithConfiguredCredentials: a follower reaches a leader that serves only TLS
// when Config.DialCredentials present its member certificate, and cannot without them.
func TestForwardDialsWithConfiguredCredentials(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlsconf.CreateCA(dir, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	member := func(name string) (cert, key string) {
		cert, key, err := ca.IssueMember(dir, name, []string{"127.0.0.1"}, tlsconf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	c1, k1 := member("n1")
	kp, err := tls.LoadX509KeyPair(c1, k1)
	if err != nil {
		t.Fatal(err)
	}
	// The leader: a TLS listener that requires a client certificate of the CA.
	lb := newFakeBackend(t, nil)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	srvCfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{kp}, NextProtos: []string{"h2"},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	lead := service.NewLeadership(lb.Store, testConfig().Now)
	lb.SetLeadershipHook(lead.Changed)
	_, _, _ = serve(t, lb, lb.FSM(), lead, testConfig(), tls.NewListener(lis, srvCfg))
	leaderAddr := lis.Addr().String()

	c2, k2 := member("n2")
	rl, err := tlsconf.NewReloader(tlsconf.Files{CA: filepath.Join(dir, tlsconf.CACertFile), Cert: c2, Key: k2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		creds credentials.TransportCredentials
		ok    bool
	}{{"with the member certificate", credentials.NewTLS(rl.ClientConfig()), true}, {"plaintext", nil, false}} {
		fb := newFakeBackend(t, nil)
		fb.SetLeader(false, "n1", leaderAddr)
		cfg := testConfig()
		cfg.Server.DialCredentials = tc.creds
		follower := start(t, fb, cfg)
		_, err := follower.meta.Get(tctx(t), &metadv1.GetRequest{Key: []byte("k")})
		if tc.ok {
			wantErr(t, err, codes.NotFound, rNotFound) // answered by the leader
		} else if status.Code(err) != codes.Unavailable {
			t.Fatalf("%s: %v, want Unavailable (the leader refuses the forward)", tc.name, err)
		}
	}
	if n := lb.Barriers.Load(); n != 1 {
		t.Fatalf("the leader served %d linearizable reads, want 1 (the forward with credentials)", n)
	}
}
