package server

import (
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/service/servicetest"
)

// TestWatchAuthenticatedWhenOpened: a Watch stream is authenticated when it opens, before it
// waits for its request: with no credentials, or with an API key that does not verify, it ends
// at once with UNAUTHENTICATED, though its client never sends the request; on a member that does
// not know the key yet (a follower catching up) it ends at once with UNAVAILABLE. A stream with a
// good key waits for its request, and is then authorized by the tenant it names.
func TestWatchAuthenticatedWhenOpened(t *testing.T) {
	p := newPKI(t)
	n := startAuth(t, p, newFakeBackend(t, nil), "n1")
	n.b.MustApply(t, servicetest.RegisterTenant("a"))
	n.b.MustApply(t, servicetest.Grant("alice", "tenant:a"))
	alice, _ := servicetest.NewKey(t, n.b, "alice", 0)
	unknown := "mtd_0123456789abcdef_" + alice[len("mtd_0123456789abcdef_"):]

	r := dialRawH2(t, n.addr, p.clientTLS())
	unauth := codes.Unauthenticated.String()
	// Streams open in increasing id order, as HTTP/2 requires (a lower id after a higher one is
	// a connection error).
	for _, c := range []struct {
		id uint32
		kv []string
	}{
		{1, nil},
		{3, []string{"authorization", "Bearer not-a-key"}},
		{5, []string{"authorization", "Bearer " + wrongSecret(alice)}}, // the secret does not match
	} {
		id, kv := c.id, c.kv
		r.open(id, metadv1.Metadata_Watch_FullMethodName, kv...)
		if o := r.await(id); o.reset || o.status != codeNumber(codes.Unauthenticated) {
			t.Fatalf("stream %d (%v) with no request ended %+v, want %s at once", id, kv, o, unauth)
		}
	}

	// A good key: the stream waits for its request, then is authorized by it.
	r.open(7, metadv1.Metadata_Watch_FullMethodName, "authorization", "Bearer "+alice)
	raw, err := proto.Marshal(&metadv1.WatchRequest{Tenant: "b"})
	if err != nil {
		t.Fatal(err)
	}
	r.send(7, raw)
	if o := r.await(7); o.status != codeNumber(codes.PermissionDenied) {
		t.Fatalf("alice's watch of tenant b ended %+v, want PERMISSION_DENIED", o)
	}

	// A follower that does not know the key (it might be one created moments ago).
	n.b.SetLeader(false, "n2", "127.0.0.1:1")
	r.open(9, metadv1.Metadata_Watch_FullMethodName, "authorization", "Bearer "+unknown)
	if o := r.await(9); o.status != codeNumber(codes.Unavailable) {
		t.Fatalf("a watch with a key this follower does not know ended %+v, want UNAVAILABLE at once", o)
	}
}

// wrongSecret is token with the last character of its secret changed: a key of the same id whose
// secret does not verify.
func wrongSecret(token string) string {
	last := "A"
	if strings.HasSuffix(token, last) {
		last = "B"
	}
	return token[:len(token)-1] + last
}

// codeNumber is code as grpc-status spells it.
func codeNumber(c codes.Code) string { return strconv.Itoa(int(c)) }
