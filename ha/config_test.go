package ha

import (
	"testing"

	"github.com/hashicorp/raft"
)

// TestConfigRefusesBadMemberNames: a node's own name and its initial cluster's follow the member
// name rules, so a SetMember it proposes always applies.
func TestConfigRefusesBadMemberNames(t *testing.T) {
	empty := testConfig("", t.TempDir())
	if err := empty.Validate(); err == nil {
		t.Error("empty name accepted")
	}
	// A member named before the rules keeps starting; only a new cluster's names are checked.
	old := testConfig("_n1", t.TempDir())
	if err := old.Validate(); err != nil {
		t.Errorf("an existing member's old-style name refused: %v", err)
	}
	for _, name := range []string{"_n1", "n\x01", string(make([]byte, 65))} {
		cfg := testConfig("n1", t.TempDir())
		cfg.Bootstrap, cfg.InitialCluster = true, []Peer{{Name: "n1", PeerAddr: "127.0.0.1:1"}, {Name: name, PeerAddr: "127.0.0.1:2"}}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if err := cfg.validateNew(); err == nil {
			t.Errorf("a new cluster with member %q accepted", name)
		}
	}
}

// TestConfigWithTransport: with a given transport the node listens on nothing, so PeerListen is not
// needed, PeerAddr is the transport's address, and peer TLS (which only the TCP transport has) is
// refused.
func TestConfigWithTransport(t *testing.T) {
	addr, tr := raft.NewInmemTransport("n1.raft:7000")
	cfg := testConfig("n1", t.TempDir())
	cfg.PeerListen, cfg.PeerAddr, cfg.Transport = "", "", tr
	if err := cfg.Validate(); err != nil || cfg.PeerAddr != string(addr) {
		t.Fatalf("Validate with a transport: %v, peer address %q, want %q", err, cfg.PeerAddr, addr)
	}
	cfg.PeerTLS = &PeerTLS{}
	if err := cfg.Validate(); err == nil {
		t.Fatal("peer TLS accepted with a given transport")
	}
}
