package chaos

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// noLeaderErr is a node's answer when it knows no leader: certainly not proposed, for that
// attempt.
func noLeaderErr(t *testing.T) error {
	st, err := status.New(codes.Unavailable, "not the leader, and no leader is known (election in progress or no quorum)").
		WithDetails(&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_UNAVAILABLE})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// TestSessionWriteNotProposedIsUnknown: a session write is one call with the Go client's retries
// inside, and the error it returns is its last attempt's. "No leader is known" from the last
// attempt says nothing of the earlier ones, one of which may have committed (its answer lost to a
// step-down), so the call's outcome is unknown; a routed write (one attempt per call) with the
// same answer certainly changed nothing.
func TestSessionWriteNotProposedIsUnknown(t *testing.T) {
	errNoLeader := noLeaderErr(t)
	if c, _ := classify(errNoLeader); c != clsNoop {
		t.Fatalf("classify(no leader known) = %v, want not proposed", c)
	}
	sess, err := client.New(client.Config{Endpoints: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	wl := &workload{cfg: workloadConfig{AttemptLimit: time.Second}, hist: newHistory(time.Now())}
	w := &wclient{wl: wl, sess: sess}
	ts := w.attempt(func(context.Context, *client.Client) error { return errNoLeader })
	if len(ts) != 1 || ts[0].cls != clsUnknown {
		t.Fatalf("session write answered %q: tries %+v, want one of unknown outcome", errNoLeader, ts)
	}
}

// lostOnce is a Metadata server whose PutStart succeeds and whose first PutEnd answers
// RESERVATION_LOST, as the leader after a leader change does; it records the calls.
type lostOnce struct {
	metadv1.UnimplementedMetadataServer
	mu    sync.Mutex // guards calls
	calls []string
}

func (f *lostOnce) PutStart(context.Context, *metadv1.PutStartRequest) (*metadv1.PutStartResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "PutStart")
	return &metadv1.PutStartResponse{}, nil
}

func (f *lostOnce) PutEnd(context.Context, *metadv1.PutEndRequest) (*metadv1.PutEndResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "PutEnd")
	if len(f.calls) == 2 {
		st, err := status.New(codes.Aborted, "a leader change since its PutStart lost its reservation: place the object again").
			WithDetails(&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_RESERVATION_LOST})
		if err != nil {
			return nil, err
		}
		return nil, st.Err()
	}
	return &metadv1.PutEndResponse{}, nil
}

// TestPutPlacesAgainAfterReservationLost: RESERVATION_LOST is a known answer (recorded as that
// reason, not as an unknown outcome), and the put places its object again.
func TestPutPlacesAgainAfterReservationLost(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := &lostOnce{}
	srv := grpc.NewServer()
	metadv1.RegisterMetadataServer(srv, fake)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	r, err := newRouter([]string{lis.Addr().String()}, client.NewUUID(), Auth{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	wl := &workload{cfg: workloadConfig{AttemptLimit: 5 * time.Second, MaxSize: 100}, hist: newHistory(time.Now()),
		ks: newKeyspace([]string{"t"}, 1, 0), stop: make(chan struct{})}
	// Seed 1 draws a PutEnd, not a PutRevoke, for both placements.
	w := &wclient{wl: wl, r: r, dirty: map[string]int{}, tasks: map[string]*openTask{}, rng: rand.New(rand.NewPCG(1, 1))}
	w.put()
	var got []string
	var sizes []uint64
	for _, op := range wl.hist.Ops() {
		got = append(got, op.In.Kind.String()+" "+op.Out.String())
		if op.In.Kind == opPutStart {
			sizes = append(sizes, op.In.Size)
		}
	}
	want := []string{"PutStart ok", "PutEnd RESERVATION_LOST", "PutStart ok", "PutEnd ok"}
	if len(got) != len(want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("history %q, want %q", got, want)
		}
	}
	if sizes[0] != sizes[1] {
		t.Fatalf("placed again with size %d, first %d: want the same object", sizes[1], sizes[0])
	}
	if len(w.dirty) != 0 {
		t.Fatalf("keys left to revoke: %v", w.dirty)
	}
}
