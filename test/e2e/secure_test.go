package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"metad/client"
	metadv1 "metad/proto/metadv1"
	"metad/tlsconf"
)

// TestSecureCluster: three metad processes with TLS on every listener (the peers' Raft traffic
// included) and authentication on. root administers by certificate (the Go client and metactl's
// certificates directory); a tenant's API key works on every node for its own tenant only; a
// plaintext client gets nothing; a member certificate of a name outside the cluster acts for
// nobody, and a member that joins records itself and forwards; the metrics page is HTTPS, for
// root's certificate and not without one; a client session is its opener's alone; and once a revoke of the key has committed, every node
// refuses the key as soon as it has applied the revoke.
func TestSecureCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs processes")
	}
	c := NewSecureCluster(t, 3)
	root := c.Client()
	c.Leader(root, 20*time.Second)
	c.StartWorker(2, "64MiB")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	waitUntil(t, 20*time.Second, "the worker's segments", func() bool {
		segs, err := root.ListSegments(ctx, client.SegmentFilter{})
		return err == nil && len(segs) == 2
	})
	for _, tenant := range []string{"acme", "other"} {
		if _, err := root.RegisterTenant(ctx, tenant, 0); err != nil {
			t.Fatalf("register %s: %v", tenant, err)
		}
	}
	if out, err := c.Metactl("role", "grant", "acme-app", "tenant:acme"); err != nil {
		t.Fatalf("metactl role grant: %v\n%s", err, out)
	}
	key, err := root.CreateKey(ctx, "acme-app", time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// The key, alone and over TLS, on each node: its own tenant (named or empty) works, another
	// tenant is refused before any lookup.
	perNode := make([]*client.Client, len(c.Nodes))
	for i, p := range c.Nodes {
		cl, err := client.New(client.Config{Endpoints: []string{p.Client}, TLS: c.PKI.ClientTLS(t, ""), APIKey: key.GetToken()})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		perNode[i] = cl
		k := "k-" + p.Name
		if _, err := cl.Put(ctx, "acme", k, 4096, nil); err != nil {
			t.Fatalf("put through %s: %v", p.Name, err)
		}
		if _, err := cl.Get(ctx, "", k); err != nil {
			t.Fatalf("get through %s with the tenant left empty: %v", p.Name, err)
		}
		if _, err := cl.Put(ctx, "other", k, 4096, nil); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("put into another tenant through %s: %v, want PermissionDenied", p.Name, err)
		}
	}

	sessionsBelongToTheirOpener(t, ctx, c, root, key.GetToken())

	plain, err := client.New(client.Config{Endpoints: c.Endpoints(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	if _, err := plain.Get(pctx, "acme", "k-n1"); err == nil {
		t.Fatal("a plaintext client was answered by a TLS cluster")
	}
	pcancel()
	// n9 was never added: its member certificate, from the cluster's CA, is believed by no node.
	if _, _, err := c.PKI.CA.IssueMember(c.PKI.Dir, "n9", []string{"127.0.0.1"}, tlsconf.Options{}); err != nil {
		t.Fatal(err)
	}
	n9Cert, n9Key := tlsconf.MemberFiles(c.PKI.Dir, "n9")
	n9 := clientTLS(t, c.PKI.CAFile(), n9Cert, n9Key)
	for _, p := range c.Nodes {
		cc, err := grpc.NewClient(p.Client, grpc.WithTransportCredentials(credentials.NewTLS(n9)))
		if err != nil {
			t.Fatal(err)
		}
		asRoot := metadata.AppendToOutgoingContext(ctx, "x-metad-principal", client.RootPrincipal)
		_, err = metadv1.NewAdminClient(cc).ListKeys(asRoot, &metadv1.ListKeysRequest{})
		_ = cc.Close()
		if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "member n9") {
			t.Fatalf("ListKeys through %s by n9's certificate for root: %v, want Unauthenticated naming n9", p.Name, err)
		}
	}

	// n4 joins as a learner: it records its own client address (RecordMember as itself, once the
	// leader's configuration holds it), answers the leader's question of its progress (Status as
	// itself), is promoted once caught up, and the leader believes the principals it forwards for.
	if _, _, err := c.PKI.CA.IssueMember(c.PKI.Dir, "n4", []string{"127.0.0.1", "localhost"}, tlsconf.Options{}); err != nil {
		t.Fatal(err)
	}
	n4 := c.AddNode("n4")
	c.Start(n4)
	if out, err := c.Metactl("member", "add", "--learner", "n4", n4.Peer); err != nil {
		t.Fatalf("metactl member add --learner n4: %v\n%s", err, out)
	}
	n4Row := func() memberRow {
		t.Helper()
		out, err := c.Metactl("-o", "json", "member", "ls")
		if err != nil {
			t.Fatalf("metactl member ls: %v\n%s", err, out)
		}
		var ml struct{ Members []memberRow }
		if err := json.Unmarshal([]byte(out), &ml); err != nil {
			t.Fatalf("member ls: %v\n%s", err, out)
		}
		for _, m := range ml.Members {
			if m.Name == "n4" {
				return m
			}
		}
		t.Fatalf("no n4 in member ls:\n%s", out)
		return memberRow{}
	}
	waitUntil(t, 20*time.Second, "n4 a caught-up learner with its client address in member ls", func() bool {
		m := n4Row()
		return m.ClientAddress == n4.Client && m.Role == "learner" && m.Lag != nil && *m.Lag < 100
	})
	if out, err := c.Metactl("member", "promote", "n4"); err != nil {
		t.Fatalf("metactl member promote n4: %v\n%s", err, out)
	}
	if m := n4Row(); m.Role != "voter" || !m.Voter {
		t.Fatalf("n4 after member promote: %+v", m)
	}
	viaN4, err := client.New(client.Config{Endpoints: []string{n4.Client}, TLS: c.PKI.ClientTLS(t, ""), APIKey: key.GetToken()})
	if err != nil {
		t.Fatal(err)
	}
	defer viaN4.Close()
	if _, err := viaN4.Put(ctx, "acme", "k-n4", 4096, nil); err != nil {
		t.Fatalf("put through the new member n4: %v", err)
	}

	if v, err := c.MetricValue(c.Nodes[0], "metad_tls_cert_expiry_seconds"); err != nil || v <= 0 {
		t.Fatalf("metad_tls_cert_expiry_seconds over HTTPS: %v, %v", v, err)
	}
	if code := scrapeStatus(t, c.PKI.ClientTLS(t, ""), c.Nodes[0].Metrics); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a client certificate: %d, want 401", code)
	}
	if out, err := c.Metactl("status"); err != nil || !strings.Contains(out, "leader") {
		t.Fatalf("metactl status with the certificates directory: %v\n%s", err, out)
	}

	if err := root.RevokeKey(ctx, key.GetKeyId()); err != nil {
		t.Fatal(err)
	}
	for i, cl := range perNode {
		waitUntil(t, 10*time.Second, "node "+c.Nodes[i].Name+" refusing the revoked key", func() bool {
			_, err := cl.Exist(ctx, "acme", "k-n1")
			return status.Code(err) == codes.Unauthenticated
		})
	}
}

// scrapeStatus is the HTTP status of GET /metrics at addr over HTTPS with tlsCfg.
func scrapeStatus(t *testing.T, tlsCfg *tls.Config, addr string) int {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// sessionsBelongToTheirOpener: a session acme-app opened is useless to another tenant's principal
// on every node (directly on the leader, forwarded by a follower): replaying, planting or
// acknowledging in it answers SESSION_EXPIRED, as for an unknown session, and acme-app's next
// write in it is taken.
func sessionsBelongToTheirOpener(t *testing.T, ctx context.Context, c *Cluster, root *client.Client, acmeToken string) {
	t.Helper()
	if out, err := c.Metactl("role", "grant", "other-app", "tenant:other"); err != nil {
		t.Fatalf("metactl role grant: %v\n%s", err, out)
	}
	otherKey, err := root.CreateKey(ctx, "other-app", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	as := func(token string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	acme, other := as(acmeToken), as(otherKey.GetToken())
	worker := client.NewUUID()
	for i, p := range c.Nodes {
		cc, err := grpc.NewClient(p.Client, grpc.WithTransportCredentials(credentials.NewTLS(c.PKI.ClientTLS(t, ""))))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		meta := metadv1.NewMetadataClient(cc)
		sess, err := meta.OpenSession(acme, &metadv1.OpenSessionRequest{})
		if err != nil {
			t.Fatalf("OpenSession through %s: %v", p.Name, err)
		}
		id := sess.GetSessionId()
		mine := fmt.Sprintf("sess-%d", i)
		put := func(ctx context.Context, tenant, key string, h *metadv1.SessionHeader) error {
			_, err := meta.PutStart(ctx, &metadv1.PutStartRequest{Tenant: tenant, ClientId: worker[:], Key: []byte(key), Size: 4096, Session: h})
			return err
		}
		if err := put(acme, "acme", mine, &metadv1.SessionHeader{SessionId: id, Seq: 1}); err != nil {
			t.Fatalf("acme-app's PutStart in its session through %s: %v", p.Name, err)
		}
		for what, h := range map[string]*metadv1.SessionHeader{
			"replaying seq 1":          {SessionId: id, Seq: 1},
			"planting seq 2":           {SessionId: id, Seq: 2},
			"acknowledging up to 1000": {SessionId: id, Seq: 1000, FirstUnackedSeq: 1000},
		} {
			err := put(other, "other", mine+"-"+strings.ReplaceAll(what, " ", "-"), h)
			if d := detailOf(err); d == nil || d.GetReason() != metadv1.Reason_REASON_SESSION_EXPIRED {
				t.Fatalf("other-app %s in acme-app's session through %s: %v, want SESSION_EXPIRED", what, p.Name, err)
			}
		}
		if err := put(acme, "acme", mine+"-next", &metadv1.SessionHeader{SessionId: id, Seq: 2}); err != nil {
			t.Fatalf("acme-app's seq 2 after the other principal's attempts, through %s: %v", p.Name, err)
		}
	}
}

// detailOf is the ErrorDetail of a call's error, nil if none.
func detailOf(err error) *metadv1.ErrorDetail {
	for _, d := range status.Convert(err).Details() {
		if ed, ok := d.(*metadv1.ErrorDetail); ok {
			return ed
		}
	}
	return nil
}

// memberRow is a member as `metactl -o json member ls` prints it.
type memberRow struct {
	Name          string  `json:"name"`
	ClientAddress string  `json:"client_address"`
	Voter         bool    `json:"voter"`
	Role          string  `json:"role"`
	Lag           *uint64 `json:"lag"`
}
