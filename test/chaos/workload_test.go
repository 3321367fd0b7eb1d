package chaos

import (
	"context"
	"testing"
	"time"

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
