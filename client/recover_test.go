package client

import (
	"context"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/proto/metadv1"
)

// lossyNode commits puts like the server (a pending write per key, owned by its writer) but loses
// the answer of the first loseFirst put requests, answering Unavailable as a broken connection
// would after the command was committed.
type lossyNode struct {
	metadv1.UnimplementedMetadataServer
	mu        sync.Mutex
	loseFirst int
	pending   map[string][]byte // key -> writer of a PROCESSING write
	complete  map[string]bool
	starts    int
}

func startLossy(t *testing.T, loseFirst int) (*lossyNode, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &lossyNode{loseFirst: loseFirst, pending: map[string][]byte{}, complete: map[string]bool{}}
	srv := grpc.NewServer()
	metadv1.RegisterMetadataServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return n, lis.Addr().String()
}

var lostAnswer = status.Error(codes.Unavailable, "transport is closing")

// startLocked places key for writer; the Status is the item outcome.
func (n *lossyNode) startLocked(key, writer []byte) *metadv1.Status {
	n.starts++
	if _, ok := n.pending[string(key)]; ok || n.complete[string(key)] {
		return &metadv1.Status{Reason: metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS, Message: "OBJECT_ALREADY_EXISTS: key " + string(key) + " exists"}
	}
	n.pending[string(key)] = writer
	return &metadv1.Status{}
}

func (n *lossyNode) revokeLocked(key, writer []byte) *metadv1.Status {
	w, ok := n.pending[string(key)]
	switch {
	case !ok:
		return &metadv1.Status{Reason: metadv1.Reason_REASON_INVALID_WRITE, Message: "no write in progress"}
	case string(w) != string(writer):
		return &metadv1.Status{Reason: metadv1.Reason_REASON_ILLEGAL_CLIENT, Message: "another writer"}
	}
	delete(n.pending, string(key))
	return &metadv1.Status{}
}

func itemToErr(s *metadv1.Status) error {
	if s.GetReason() == metadv1.Reason_REASON_UNSPECIFIED {
		return nil
	}
	return rejection(codes.FailedPrecondition, s.GetReason(), s.GetMessage(), "", "")
}

func (n *lossyNode) PutStart(_ context.Context, r *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := itemToErr(n.startLocked(r.GetKey(), r.GetClientId())); err != nil {
		return nil, err
	}
	if n.loseFirst > 0 {
		n.loseFirst--
		return nil, lostAnswer
	}
	return &metadv1.PutStartResponse{Replicas: []*metadv1.Replica{{ReplicaId: uint64(n.starts)}}}, nil
}

func (n *lossyNode) PutRevoke(_ context.Context, r *metadv1.PutRevokeRequest) (*metadv1.PutRevokeResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &metadv1.PutRevokeResponse{}, itemToErr(n.revokeLocked(r.GetKey(), r.GetClientId()))
}

func (n *lossyNode) BatchPutStart(_ context.Context, r *metadv1.BatchPutStartRequest) (*metadv1.BatchPutStartResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &metadv1.BatchPutStartResponse{}
	for _, it := range r.GetItems() {
		resp.Results = append(resp.Results, &metadv1.BatchPutStartResponse_Result{Status: n.startLocked(it.GetKey(), r.GetClientId())})
	}
	if n.loseFirst > 0 {
		n.loseFirst--
		return nil, lostAnswer
	}
	return resp, nil
}

func (n *lossyNode) BatchPutRevoke(_ context.Context, r *metadv1.BatchPutRevokeRequest) (*metadv1.BatchPutRevokeResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	resp := &metadv1.BatchPutRevokeResponse{}
	for _, k := range r.GetKeys() {
		resp.Results = append(resp.Results, n.revokeLocked(k, r.GetClientId()))
	}
	return resp, nil
}

func TestPutStartRecoversItsOwnLostAttempt(t *testing.T) {
	n, addr := startLossy(t, 1)
	c := newTestClient(t, Config{Endpoints: []string{addr}})
	reps, err := c.PutStart(testCtx(t), "", "k", 10, nil)
	if err != nil || len(reps) != 1 {
		t.Fatalf("PutStart after a lost answer: %v, %v", reps, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.starts != 3 || len(n.pending) != 1 {
		t.Fatalf("starts %d pending %v: want lost start, exists, restart", n.starts, n.pending)
	}
}

func TestPutStartKeepsOthersObject(t *testing.T) {
	n, addr := startLossy(t, 0)
	other := newTestClient(t, Config{Endpoints: []string{addr}})
	if _, err := other.PutStart(testCtx(t), "", "k", 10, nil); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.complete["k2"] = true
	n.mu.Unlock()
	c := newTestClient(t, Config{Endpoints: []string{addr}})
	// First attempt fails over a dead endpoint, so the call is retried; the retry meets another
	// client's pending write, which must not be revoked.
	c2 := newTestClient(t, Config{Endpoints: []string{deadAddr(t), addr}})
	for _, cl := range []*Client{c, c2} {
		if _, err := cl.PutStart(testCtx(t), "", "k", 10, nil); ReasonOf(err) != metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS {
			t.Fatalf("PutStart of another client's key: %v", err)
		}
		if _, err := cl.PutStart(testCtx(t), "", "k2", 10, nil); ReasonOf(err) != metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS {
			t.Fatalf("PutStart of a complete key: %v", err)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if string(n.pending["k"]) != string(other.idBytes) {
		t.Fatal("another client's pending write was revoked")
	}
}

func TestBatchPutStartRecoversItsOwnLostAttempt(t *testing.T) {
	n, addr := startLossy(t, 1)
	n.mu.Lock()
	n.complete["done"] = true
	n.mu.Unlock()
	c := newTestClient(t, Config{Endpoints: []string{addr}})
	res, err := c.BatchPutStart(testCtx(t), "", []BatchPutItem{{Key: "a", Size: 1}, {Key: "done", Size: 1}, {Key: "b", Size: 1}}, nil)
	if err != nil || len(res) != 3 {
		t.Fatalf("BatchPutStart: %v, %v", res, err)
	}
	if ItemErr(res[0].GetStatus()) != nil || ItemErr(res[2].GetStatus()) != nil {
		t.Fatalf("own items not recovered: %v", res)
	}
	if ReasonOf(ItemErr(res[1].GetStatus())) != metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS {
		t.Fatalf("complete item: %v", res[1])
	}
}

func TestMessageOf(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{rejection(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "OBJECT_NOT_FOUND: OBJECT_NOT_FOUND: key k", "", ""), "key k"},
		{rejection(codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "key k", "", ""), "key k"},
		{status.Error(codes.Unavailable, "UNAVAILABLE: refused"), "refused"},
		{status.Error(codes.Internal, "INTERNAL: x"), "INTERNAL: x"},
		{&ItemError{Reason: metadv1.Reason_REASON_INVALID_WRITE, Message: "INVALID_WRITE: no write"}, "no write"},
	}
	for _, tc := range cases {
		if got := MessageOf(tc.err); got != tc.want {
			t.Errorf("MessageOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if got := (&ItemError{Reason: metadv1.Reason_REASON_INVALID_WRITE, Message: "INVALID_WRITE: no write"}).Error(); got != "INVALID_WRITE: no write" {
		t.Errorf("ItemError.Error() = %q", got)
	}
}
