package client

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"metad/proto/metadv1"
)

// fakeNode is a gRPC server on 127.0.0.1:0 that serves Metadata and Admin with programmable
// answers. Safe for concurrent use; its counters are read after the calls they count.
type fakeNode struct {
	addr  string
	srv   *grpc.Server
	calls atomic.Int64 // RPCs received, every method

	mu sync.Mutex
	// fail, if set, decides the error of every RPC before the method runs (nil = proceed).
	fail func(method string) error
	// batchSizes records the item count of every batch request, in arrival order.
	batchSizes []int

	// hang, while set, makes the methods that call stall, and the health service, wait for their
	// context to end before answering: a paused or cut-off node.
	hang atomic.Bool
	// slow, while set, makes Get and RemoveAll take 300 ms while health answers at once: a live
	// node with a slow call.
	slow atomic.Bool
	// healthDelay, when not 0, makes health answer after that many ns (or when its context ends):
	// a live node on a busy machine.
	healthDelay atomic.Int64
	// snapPrep, snapChunks and snapGap shape SnapshotSave: it waits snapPrep ns (the capture),
	// then sends snapChunks chunks of 4 bytes snapGap ns apart. It stalls first, like Get. With
	// snapFreezeAfter > 0 it freezes after that many chunks, waiting for its context to end.
	snapPrep, snapChunks, snapGap, snapFreezeAfter atomic.Int64
	// getBound, when not 0, makes BatchGet answer at most that many keys of a request and the rest
	// RESPONSE_LIMIT_REACHED, as a server whose response reached its size bound does.
	getBound atomic.Int64
}

// fakeHealth answers health checks SERVING, or not at all while the node hangs.
type fakeHealth struct {
	healthpb.UnimplementedHealthServer
	n *fakeNode
}

func (h *fakeHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.n.hang.Load() {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if err := wait(ctx, time.Duration(h.n.healthDelay.Load())); err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

type fakeMetadata struct {
	metadv1.UnimplementedMetadataServer
	n *fakeNode
}

type fakeAdmin struct {
	metadv1.UnimplementedAdminServer
	n *fakeNode
}

// startFake starts a fake node; it stops when the test ends.
func startFake(t *testing.T) *fakeNode {
	t.Helper()
	return startFakeB(t)
}

// startFakeB is startFake for tests and benchmarks; opts configure its gRPC server (TLS,
// interceptors).
func startFakeB(t testing.TB, opts ...grpc.ServerOption) *fakeNode {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{addr: lis.Addr().String(), srv: grpc.NewServer(opts...)}
	metadv1.RegisterMetadataServer(n.srv, &fakeMetadata{n: n})
	metadv1.RegisterAdminServer(n.srv, &fakeAdmin{n: n})
	healthpb.RegisterHealthServer(n.srv, &fakeHealth{n: n})
	go func() { _ = n.srv.Serve(lis) }()
	t.Cleanup(n.srv.Stop)
	return n
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func (n *fakeNode) setFail(f func(method string) error) {
	n.mu.Lock()
	n.fail = f
	n.mu.Unlock()
}

// enter counts a call and returns the programmed error, if any.
func (n *fakeNode) enter(method string) error {
	n.calls.Add(1)
	n.mu.Lock()
	f := n.fail
	n.mu.Unlock()
	if f != nil {
		return f(method)
	}
	return nil
}

// stall waits for ctx to end while hang is set and returns its error (nil when not hanging); while
// slow is set it waits 300 ms (or for ctx).
func (n *fakeNode) stall(ctx context.Context) error {
	switch {
	case n.hang.Load():
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	case n.slow.Load():
		t := time.NewTimer(300 * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
	return nil
}

// wait waits d (nothing when d <= 0), or returns ctx's status error when it ends first.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-t.C:
		return nil
	}
}

func (n *fakeNode) recordBatch(size int) {
	n.mu.Lock()
	n.batchSizes = append(n.batchSizes, size)
	n.mu.Unlock()
}

func (n *fakeNode) batches() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]int(nil), n.batchSizes...)
}

// rejection builds a status error with an ErrorDetail, as the server does.
func rejection(code codes.Code, reason metadv1.Reason, msg string, leaderName, leaderAddr string) error {
	st, err := status.New(code, msg).WithDetails(&metadv1.ErrorDetail{
		Reason: reason, LeaderName: leaderName, LeaderAddress: leaderAddr,
	})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func notLeader(name, addr string) error {
	return rejection(codes.FailedPrecondition, metadv1.Reason_REASON_NOT_LEADER, "not the leader", name, addr)
}

func unavailable() error {
	return rejection(codes.Unavailable, metadv1.Reason_REASON_UNAVAILABLE, "no quorum", "", "")
}

func (m *fakeMetadata) Get(ctx context.Context, req *metadv1.GetRequest) (*metadv1.GetResponse, error) {
	if err := m.n.enter("Get"); err != nil {
		return nil, err
	}
	if err := m.n.stall(ctx); err != nil {
		return nil, err
	}
	return &metadv1.GetResponse{Size: uint64(len(req.GetKey())), LeaseTtlMs: 10000}, nil
}

func (m *fakeMetadata) Exist(_ context.Context, req *metadv1.ExistRequest) (*metadv1.ExistResponse, error) {
	if err := m.n.enter("Exist"); err != nil {
		return nil, err
	}
	return &metadv1.ExistResponse{Exists: true}, nil
}

func (m *fakeMetadata) PutStart(_ context.Context, req *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	if err := m.n.enter("PutStart"); err != nil {
		return nil, err
	}
	return &metadv1.PutStartResponse{Replicas: []*metadv1.Replica{{
		ReplicaId: 1, Tier: metadv1.Tier_TIER_MEMORY, Size: req.GetSize(), Status: metadv1.ReplicaStatus_REPLICA_STATUS_PROCESSING,
	}}}, nil
}

func (m *fakeMetadata) PutEnd(context.Context, *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	if err := m.n.enter("PutEnd"); err != nil {
		return nil, err
	}
	return &metadv1.PutEndResponse{}, nil
}

func (m *fakeMetadata) PutRevoke(context.Context, *metadv1.PutRevokeRequest) (*metadv1.PutRevokeResponse, error) {
	if err := m.n.enter("PutRevoke"); err != nil {
		return nil, err
	}
	return &metadv1.PutRevokeResponse{}, nil
}

func (m *fakeMetadata) Ping(ctx context.Context, _ *metadv1.PingRequest) (*metadv1.PingResponse, error) {
	if err := m.n.enter("Ping"); err != nil {
		return nil, err
	}
	if err := m.n.stall(ctx); err != nil {
		return nil, err
	}
	return &metadv1.PingResponse{ClientTtlMs: 10000, LeaderName: "n1", LeaderAddress: m.n.addr, Term: 3}, nil
}

func (m *fakeMetadata) ListGroup(_ context.Context, req *metadv1.ListGroupRequest) (*metadv1.ListGroupResponse, error) {
	if err := m.n.enter("ListGroup"); err != nil {
		return nil, err
	}
	all := []string{"a", "b", "c", "d", "e"}
	var out [][]byte
	for _, k := range all {
		if k > string(req.GetStartAfter()) && len(out) < 2 {
			out = append(out, []byte(k))
		}
	}
	last := ""
	if len(out) > 0 {
		last = string(out[len(out)-1])
	}
	return &metadv1.ListGroupResponse{Keys: out, Truncated: last < "e"}, nil
}

// RemoveAll answers like any call that stalls.
func (m *fakeMetadata) RemoveAll(ctx context.Context, _ *metadv1.RemoveAllRequest) (*metadv1.RemoveAllResponse, error) {
	if err := m.n.enter("RemoveAll"); err != nil {
		return nil, err
	}
	if err := m.n.stall(ctx); err != nil {
		return nil, err
	}
	return &metadv1.RemoveAllResponse{Removed: 7}, nil
}

// BatchGet answers each key with size = its index in the whole list, encoded in the key as
// decimal, so tests can check order across requests.
func (m *fakeMetadata) BatchGet(_ context.Context, req *metadv1.BatchGetRequest) (*metadv1.BatchGetResponse, error) {
	if err := m.n.enter("BatchGet"); err != nil {
		return nil, err
	}
	m.n.recordBatch(len(req.GetKeys()))
	resp := &metadv1.BatchGetResponse{LeaseTtlMs: 100000 - uint64(len(req.GetKeys()))}
	bound := int(m.n.getBound.Load())
	for i, k := range req.GetKeys() {
		if bound > 0 && i >= bound {
			resp.Results = append(resp.Results, &metadv1.BatchGetResponse_Result{
				Status: &metadv1.Status{Reason: metadv1.Reason_REASON_RESPONSE_LIMIT_REACHED, Message: "ask again"}})
			continue
		}
		resp.Results = append(resp.Results, &metadv1.BatchGetResponse_Result{Status: &metadv1.Status{}, Size: atou(string(k))})
	}
	return resp, nil
}

func (m *fakeMetadata) BatchPutStart(_ context.Context, req *metadv1.BatchPutStartRequest) (*metadv1.BatchPutStartResponse, error) {
	if err := m.n.enter("BatchPutStart"); err != nil {
		return nil, err
	}
	m.n.recordBatch(len(req.GetItems()))
	resp := &metadv1.BatchPutStartResponse{}
	for _, it := range req.GetItems() {
		r := &metadv1.BatchPutStartResponse_Result{Status: &metadv1.Status{}}
		if string(it.GetKey()) == "exists" {
			r.Status = &metadv1.Status{Reason: metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS, Message: "key \"exists\" exists"}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func (m *fakeMetadata) BatchPutEnd(_ context.Context, req *metadv1.BatchPutEndRequest) (*metadv1.BatchPutEndResponse, error) {
	if err := m.n.enter("BatchPutEnd"); err != nil {
		return nil, err
	}
	m.n.recordBatch(len(req.GetKeys()))
	resp := &metadv1.BatchPutEndResponse{}
	for range req.GetKeys() {
		resp.Results = append(resp.Results, &metadv1.Status{})
	}
	return resp, nil
}

// BatchRemove answers one result too few: a server bug the client must catch.
func (m *fakeMetadata) BatchRemove(_ context.Context, req *metadv1.BatchRemoveRequest) (*metadv1.BatchRemoveResponse, error) {
	if err := m.n.enter("BatchRemove"); err != nil {
		return nil, err
	}
	return &metadv1.BatchRemoveResponse{Results: make([]*metadv1.Status, len(req.GetKeys())-1)}, nil
}

func (a *fakeAdmin) Status(context.Context, *metadv1.StatusRequest) (*metadv1.StatusResponse, error) {
	if err := a.n.enter("Status"); err != nil {
		return nil, err
	}
	return &metadv1.StatusResponse{Name: "n-" + a.n.addr, ClientAddress: a.n.addr, Role: metadv1.NodeRole_NODE_ROLE_FOLLOWER}, nil
}

func (a *fakeAdmin) TransferLeader(_ context.Context, req *metadv1.TransferLeaderRequest) (*metadv1.TransferLeaderResponse, error) {
	if err := a.n.enter("TransferLeader"); err != nil {
		return nil, err
	}
	return &metadv1.TransferLeaderResponse{LeaderName: req.GetTarget(), LeaderAddress: req.GetTarget()}, nil
}

// SnapshotSave streams the snapshot snapPrep, snapChunks and snapGap describe: chunk i holds
// the 4 bytes "s" + 3 decimal digits of i.
func (a *fakeAdmin) SnapshotSave(_ *metadv1.SnapshotSaveRequest, stream metadv1.Admin_SnapshotSaveServer) error {
	ctx := stream.Context()
	if err := a.n.enter("SnapshotSave"); err != nil {
		return err
	}
	if err := a.n.stall(ctx); err != nil {
		return err
	}
	if err := wait(ctx, time.Duration(a.n.snapPrep.Load())); err != nil {
		return err
	}
	for i := range a.n.snapChunks.Load() {
		if i > 0 {
			if err := wait(ctx, time.Duration(a.n.snapGap.Load())); err != nil {
				return err
			}
		}
		if err := stream.Send(&metadv1.SnapshotChunk{Offset: uint64(4 * i), Data: fmt.Appendf(nil, "s%03d", i)}); err != nil {
			return err
		}
		if i+1 == a.n.snapFreezeAfter.Load() {
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	return nil
}

func atou(s string) uint64 {
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}

// newTestClient builds a client over eps with quick backoff; it is closed when the test ends.
func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.RetryBackoff.Initial == 0 {
		cfg.RetryBackoff = Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
