package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
)

// TestSecureCluster: three metad processes with TLS on every listener (the peers' Raft traffic
// included) and authentication on. root administers by certificate (the Go client and metactl's
// certificates directory); a tenant's API key works on every node for its own tenant only; a
// plaintext client gets nothing; the metrics page is HTTPS; and once a revoke of the key has
// committed, every node refuses the key as soon as it has applied the revoke.
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
	if v, err := c.MetricValue(c.Nodes[0], "metad_tls_cert_expiry_seconds"); err != nil || v <= 0 {
		t.Fatalf("metad_tls_cert_expiry_seconds over HTTPS: %v, %v", v, err)
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
