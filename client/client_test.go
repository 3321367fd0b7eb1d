package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"metad/proto/metadv1"
)

func TestRedirectOnNotLeaderToUnknownAddress(t *testing.T) {
	follower, leader := startFake(t), startFake(t)
	follower.setFail(func(string) error { return notLeader("n2", leader.addr) })
	c := newTestClient(t, Config{Endpoints: []string{follower.addr}})
	ctx := testCtx(t)

	got, err := c.Get(ctx, "", "k1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.GetSize() != 2 {
		t.Fatalf("Get answered by the wrong node: %v", got)
	}
	if follower.calls.Load() != 1 || leader.calls.Load() != 1 {
		t.Fatalf("calls: follower %d leader %d, want 1 and 1", follower.calls.Load(), leader.calls.Load())
	}
	if c.Leader() != leader.addr {
		t.Fatalf("Leader() = %s, want %s", c.Leader(), leader.addr)
	}
	if eps := c.Endpoints(); len(eps) != 2 || eps[1] != leader.addr {
		t.Fatalf("Endpoints() = %v, want the leader added", eps)
	}
	// Later calls go straight to the leader.
	if _, err := c.Exist(ctx, "", "k1"); err != nil {
		t.Fatal(err)
	}
	if follower.calls.Load() != 1 || leader.calls.Load() != 2 {
		t.Fatalf("calls: follower %d leader %d, want 1 and 2", follower.calls.Load(), leader.calls.Load())
	}
}

func TestRedirectOnNotLeaderToKnownAddress(t *testing.T) {
	a, b, leader := startFake(t), startFake(t), startFake(t)
	a.setFail(func(string) error { return notLeader("n3", leader.addr) })
	c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr, leader.addr}})
	if err := c.PutEnd(testCtx(t), "", "k", metadv1.Tier_TIER_UNSPECIFIED); err != nil {
		t.Fatal(err)
	}
	if b.calls.Load() != 0 || leader.calls.Load() != 1 || len(c.Endpoints()) != 3 {
		t.Fatalf("calls b=%d leader=%d endpoints=%v", b.calls.Load(), leader.calls.Load(), c.Endpoints())
	}
}

func TestNotLeaderWithoutAddressFailsOver(t *testing.T) {
	a, b := startFake(t), startFake(t)
	a.setFail(func(string) error { return notLeader("", "") })
	c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr}})
	if _, err := c.Get(testCtx(t), "", "k"); err != nil {
		t.Fatal(err)
	}
	if c.Leader() != b.addr {
		t.Fatalf("Leader() = %s, want %s", c.Leader(), b.addr)
	}
}

func TestRedirectLoopIsBounded(t *testing.T) {
	a, b := startFake(t), startFake(t)
	a.setFail(func(string) error { return notLeader("b", b.addr) })
	b.setFail(func(string) error { return notLeader("a", a.addr) })
	c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr}, MaxRetries: 6})
	_, err := c.Get(testCtx(t), "", "k")
	if ReasonOf(err) != metadv1.Reason_REASON_NOT_LEADER {
		t.Fatalf("err = %v, want NOT_LEADER", err)
	}
	if n := a.calls.Load() + b.calls.Load(); n != 7 {
		t.Fatalf("%d attempts, want 1 + MaxRetries = 7", n)
	}
}

func TestFailoverWhenEndpointDown(t *testing.T) {
	live := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{deadAddr(t), deadAddr(t), live.addr}})
	ctx := testCtx(t)
	for i := range 3 {
		if _, err := c.Get(ctx, "", fmt.Sprint("k", i)); err != nil {
			t.Fatalf("Get %d: %v", i, err)
		}
	}
	if c.Leader() != live.addr {
		t.Fatalf("Leader() = %s, want %s", c.Leader(), live.addr)
	}
	if live.calls.Load() != 3 {
		t.Fatalf("live node got %d calls, want 3", live.calls.Load())
	}
}

func TestFailoverOnUnavailableReason(t *testing.T) {
	a, b := startFake(t), startFake(t)
	a.setFail(func(string) error { return unavailable() })
	c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr}})
	if _, err := c.Put(testCtx(t), "t1", "k", 10, nil); err != nil {
		t.Fatal(err)
	}
	if a.calls.Load() != 1 || b.calls.Load() != 2 {
		t.Fatalf("calls a=%d b=%d, want 1 and 2", a.calls.Load(), b.calls.Load())
	}
}

func TestNoRetryOnDeterministicError(t *testing.T) {
	reasons := []struct {
		code   codes.Code
		reason metadv1.Reason
	}{
		{codes.NotFound, metadv1.Reason_REASON_OBJECT_NOT_FOUND},
		{codes.AlreadyExists, metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS},
		{codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS},
		{codes.ResourceExhausted, metadv1.Reason_REASON_TENANT_QUOTA_EXCEEDED},
		{codes.FailedPrecondition, metadv1.Reason_REASON_OBJECT_HAS_LEASE},
		{codes.ResourceExhausted, metadv1.Reason_REASON_RATE_LIMITED}, // the caller decides when to go again (RetryAfterOf)
	}
	for _, r := range reasons {
		t.Run(ReasonName(r.reason), func(t *testing.T) {
			a, b := startFake(t), startFake(t)
			a.setFail(func(string) error { return rejection(r.code, r.reason, "tenant \"default\" key \"k\"", "", "") })
			c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr}})
			_, err := c.Get(testCtx(t), "", "k")
			if ReasonOf(err) != r.reason || status.Code(err) != r.code {
				t.Fatalf("err = %v, want %v with code %v", err, r.reason, r.code)
			}
			if !strings.Contains(status.Convert(err).Message(), `key "k"`) {
				t.Fatalf("message lost: %v", err)
			}
			if a.calls.Load() != 1 || b.calls.Load() != 0 {
				t.Fatalf("calls a=%d b=%d, want 1 and 0", a.calls.Load(), b.calls.Load())
			}
		})
	}
}

func TestPlainStatusWithoutDetailIsNotRetried(t *testing.T) {
	a, b := startFake(t), startFake(t)
	a.setFail(func(string) error { return status.Error(codes.Internal, "boom") })
	c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr}})
	_, err := c.Get(testCtx(t), "", "k")
	if status.Code(err) != codes.Internal || a.calls.Load() != 1 || b.calls.Load() != 0 {
		t.Fatalf("err %v calls a=%d b=%d", err, a.calls.Load(), b.calls.Load())
	}
}

func TestDeadlineRespected(t *testing.T) {
	a, b := startFake(t), startFake(t)
	for _, n := range []*fakeNode{a, b} {
		n.setFail(func(string) error { return unavailable() })
	}
	c := newTestClient(t, Config{
		Endpoints:    []string{a.addr, b.addr},
		MaxRetries:   1 << 20,
		RetryBackoff: Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond},
	})
	const budget = 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	_, err := c.Get(ctx, "", "k")
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("Get succeeded against nodes that are always unavailable")
	}
	if status.Code(err) != codes.Unavailable && status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want Unavailable or DeadlineExceeded", err)
	}
	if elapsed > budget+250*time.Millisecond { // scheduling slack on a loaded machine
		t.Fatalf("Get returned after %v, past its %v deadline", elapsed, budget)
	}
	if n := a.calls.Load() + b.calls.Load(); n < 3 {
		t.Fatalf("only %d attempts in %v: the call did not retry", n, elapsed)
	}
	t.Logf("%d attempts in %v", a.calls.Load()+b.calls.Load(), elapsed)
}

func TestMaxRetriesWithoutDeadline(t *testing.T) {
	a := startFake(t)
	a.setFail(func(string) error { return unavailable() })
	c := newTestClient(t, Config{Endpoints: []string{a.addr}, MaxRetries: 3})
	_, err := c.Get(context.Background(), "", "k")
	if ReasonOf(err) != metadv1.Reason_REASON_UNAVAILABLE {
		t.Fatalf("err = %v", err)
	}
	if a.calls.Load() != 4 {
		t.Fatalf("%d attempts, want 4", a.calls.Load())
	}

	c2 := newTestClient(t, Config{Endpoints: []string{a.addr}, MaxRetries: -1})
	before := a.calls.Load()
	if _, err := c2.Get(context.Background(), "", "k"); err == nil {
		t.Fatal("want an error")
	}
	if a.calls.Load()-before != 1 {
		t.Fatalf("MaxRetries -1 made %d attempts, want 1", a.calls.Load()-before)
	}
}

func TestCallerCancellationStopsRetries(t *testing.T) {
	c := newTestClient(t, Config{Endpoints: []string{deadAddr(t)}, MaxRetries: 1 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, err := c.Get(ctx, "", "k"); err == nil {
		t.Fatal("want an error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v to end the call", d)
	}
}

func TestPutRevokesWhenPutEndFails(t *testing.T) {
	a := startFake(t)
	var mu sync.Mutex
	var methods []string
	a.setFail(func(m string) error {
		mu.Lock()
		methods = append(methods, m)
		mu.Unlock()
		if m == "PutEnd" {
			return rejection(codes.FailedPrecondition, metadv1.Reason_REASON_INVALID_WRITE, "no write", "", "")
		}
		return nil
	})
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	_, err := c.Put(testCtx(t), "", "k", 100, &PutOptions{MemoryReplicas: 2})
	if ReasonOf(err) != metadv1.Reason_REASON_INVALID_WRITE {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(methods, ","); got != "PutStart,PutEnd,PutRevoke" {
		t.Fatalf("methods %s", got)
	}
}

func TestPutMarksReplicasComplete(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	reps, err := c.Put(testCtx(t), "", "k", 100, nil)
	if err != nil || len(reps) != 1 || reps[0].GetStatus() != metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE {
		t.Fatalf("Put = %v, %v", reps, err)
	}
}

func TestPingAndTransferLeaderMoveTheLeader(t *testing.T) {
	a, b := startFake(t), startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	ctx := testCtx(t)
	resp, err := c.Ping(ctx)
	if err != nil || resp.GetClientTtlMs() != 10000 {
		t.Fatalf("Ping = %v, %v", resp, err)
	}
	if _, err := c.TransferLeader(ctx, b.addr); err != nil {
		t.Fatal(err)
	}
	if c.Leader() != b.addr {
		t.Fatalf("after TransferLeader, Leader() = %s, want %s", c.Leader(), b.addr)
	}
	if _, err := c.Ping(ctx); err != nil || c.Leader() != b.addr {
		t.Fatalf("Ping: %v, leader %s", err, c.Leader())
	}
}

func TestListGroupPages(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	keys, err := c.ListGroup(testCtx(t), "", "g", Stale())
	if err != nil || strings.Join(keys, "") != "abcde" {
		t.Fatalf("ListGroup = %v, %v", keys, err)
	}
	if a.calls.Load() != 3 {
		t.Fatalf("%d pages fetched, want 3", a.calls.Load())
	}
}

func TestStatusAllMarksUnreachable(t *testing.T) {
	a := startFake(t)
	dead := deadAddr(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr, dead}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	all := c.StatusAll(ctx)
	if len(all) != 2 || all[0].Err != nil || all[0].Status.GetClientAddress() != a.addr || all[1].Err == nil {
		t.Fatalf("StatusAll = %+v", all)
	}
	if all[1].Endpoint != dead || ReasonOf(all[1].Err) != metadv1.Reason_REASON_UNAVAILABLE {
		t.Fatalf("unreachable node: %+v", all[1])
	}
	// Status of an address not in the list dials it just for the call.
	other := startFake(t)
	st, err := c.Status(ctx, other.addr)
	if err != nil || st.GetClientAddress() != other.addr || len(c.Endpoints()) != 2 {
		t.Fatalf("Status(other) = %v, %v; endpoints %v", st, err, c.Endpoints())
	}
}

func TestClosedClient(t *testing.T) {
	a := startFake(t)
	c := newTestClient(t, Config{Endpoints: []string{a.addr}})
	c.Close()
	if _, err := c.Get(context.Background(), "", "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestReasonAndLeaderOf(t *testing.T) {
	cases := []struct {
		err    error
		reason metadv1.Reason
		name   string
		addr   string
	}{
		{nil, metadv1.Reason_REASON_UNSPECIFIED, "", ""},
		{errors.New("local"), metadv1.Reason_REASON_UNSPECIFIED, "", ""},
		{status.Error(codes.Unavailable, "connection refused"), metadv1.Reason_REASON_UNAVAILABLE, "", ""},
		{status.Error(codes.Internal, "x"), metadv1.Reason_REASON_UNSPECIFIED, "", ""},
		{notLeader("n2", "127.0.0.1:6002"), metadv1.Reason_REASON_NOT_LEADER, "n2", "127.0.0.1:6002"},
		{fmt.Errorf("wrapped: %w", notLeader("n3", "h:3")), metadv1.Reason_REASON_NOT_LEADER, "n3", "h:3"},
		{&ItemError{Reason: metadv1.Reason_REASON_OBJECT_NOT_FOUND}, metadv1.Reason_REASON_OBJECT_NOT_FOUND, "", ""},
	}
	for i, tc := range cases {
		if got := ReasonOf(tc.err); got != tc.reason {
			t.Errorf("%d: ReasonOf = %v, want %v", i, got, tc.reason)
		}
		if n, a := LeaderOf(tc.err); n != tc.name || a != tc.addr {
			t.Errorf("%d: LeaderOf = %q %q, want %q %q", i, n, a, tc.name, tc.addr)
		}
	}
	if ReasonName(metadv1.Reason_REASON_OBJECT_NOT_FOUND) != "OBJECT_NOT_FOUND" || ReasonName(0) != "OK" {
		t.Error("ReasonName")
	}
	limited := status.New(codes.ResourceExhausted, "rate limited")
	limited, _ = limited.WithDetails(&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_RATE_LIMITED, RetryAfterMs: 250})
	if got := RetryAfterOf(fmt.Errorf("wrapped: %w", limited.Err())); got != 250*time.Millisecond {
		t.Errorf("RetryAfterOf = %v, want 250ms", got)
	}
	if got := RetryAfterOf(notLeader("n2", "h:2")); got != 0 {
		t.Errorf("RetryAfterOf(NOT_LEADER) = %v, want 0", got)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		act  retryAction
		dest string
	}{
		{notLeader("n2", "b:1"), actRedirect, "b:1"},
		{notLeader("n1", "a:1"), actFailover, ""}, // names itself: do not loop on it
		{notLeader("", ""), actFailover, ""},
		{unavailable(), actFailover, ""},
		{status.Error(codes.Unavailable, "refused"), actFailover, ""},
		{rejection(codes.Unavailable, metadv1.Reason_REASON_OBJECT_HAS_LEASE, "", "", ""), actStop, ""},
		{status.Error(codes.DeadlineExceeded, "late"), actStop, ""},
		{errors.New("local"), actStop, ""},
	}
	for i, tc := range cases {
		act, dest := classify(tc.err, "a:1")
		if act != tc.act || dest != tc.dest {
			t.Errorf("%d: classify(%v) = %v %q, want %v %q", i, tc.err, act, dest, tc.act, tc.dest)
		}
	}
}

// TestAttemptTimeoutFailsOver: a call to a node that never answers (paused, cut off) moves to the
// next endpoint after AttemptTimeout, not after the caller's deadline, and later calls stay away
// from the silent node.
func TestAttemptTimeoutFailsOver(t *testing.T) {
	silent, live := startFake(t), startFake(t)
	silent.hang.Store(true)
	c := newTestClient(t, Config{Endpoints: []string{silent.addr, live.addr}, AttemptTimeout: 100 * time.Millisecond})
	ctx := testCtx(t) // 10 s
	start := time.Now()
	if _, err := c.Get(ctx, "", "k"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Get took %s with a 100ms attempt timeout", took)
	}
	if c.Leader() != live.addr || silent.calls.Load() != 1 || live.calls.Load() != 1 {
		t.Fatalf("leader %s, calls silent=%d live=%d", c.Leader(), silent.calls.Load(), live.calls.Load())
	}
	for range 3 {
		if _, err := c.Exist(ctx, "", "k"); err != nil {
			t.Fatal(err)
		}
	}
	if silent.calls.Load() != 1 {
		t.Fatalf("the silent node got %d calls, want 1", silent.calls.Load())
	}
}

// TestRedirectToSuspectNodeFailsOver: a NOT_LEADER naming a node whose attempt just timed out (a
// follower that has not heard of the election names the leader it last knew) is not followed; the
// call goes to the next node that is not suspect.
func TestRedirectToSuspectNodeFailsOver(t *testing.T) {
	old, stale, live := startFake(t), startFake(t), startFake(t)
	old.hang.Store(true)
	stale.setFail(func(string) error { return notLeader("n1", old.addr) })
	c := newTestClient(t, Config{Endpoints: []string{old.addr, stale.addr, live.addr}, AttemptTimeout: 100 * time.Millisecond})
	if _, err := c.Get(testCtx(t), "", "k"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	if old.calls.Load() != 1 || stale.calls.Load() != 1 || live.calls.Load() != 1 {
		t.Fatalf("calls old=%d stale=%d live=%d, want 1 each", old.calls.Load(), stale.calls.Load(), live.calls.Load())
	}
}

// TestEverySuspectStillTried: when every endpoint has timed out, calls still go somewhere (the one
// whose suspicion ends first) and succeed once a node answers again.
func TestEverySuspectStillTried(t *testing.T) {
	a, b := startFake(t), startFake(t)
	a.hang.Store(true)
	b.hang.Store(true)
	c := newTestClient(t, Config{Endpoints: []string{a.addr, b.addr}, AttemptTimeout: 50 * time.Millisecond, MaxRetries: 1})
	if _, err := c.Get(testCtx(t), "", "k"); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "stopped answering") {
		t.Fatalf("Get with every node silent: %v, want Unavailable: stopped answering", err)
	}
	a.hang.Store(false)
	if _, err := c.Get(testCtx(t), "", "k"); err != nil {
		t.Fatalf("Get once a node answers again: %v", err)
	}
	if c.Leader() != a.addr {
		t.Fatalf("leader %s, want %s", c.Leader(), a.addr)
	}
}

// TestSlowNodeIsNotAbandoned: a call that takes several attempt timeouts on a node that still
// answers its health is waited for, never retried elsewhere (a write retried there could be
// applied twice); RemoveAll likewise.
func TestSlowNodeIsNotAbandoned(t *testing.T) {
	slow, other := startFake(t), startFake(t)
	slow.slow.Store(true) // Get and RemoveAll answer after 300 ms; health at once
	c := newTestClient(t, Config{Endpoints: []string{slow.addr, other.addr}, AttemptTimeout: 50 * time.Millisecond})
	ctx := testCtx(t)
	if _, err := c.Get(ctx, "", "k"); err != nil {
		t.Fatalf("Get: %v", err)
	}
	resp, err := c.RemoveAll(ctx, "", false)
	if err != nil || resp.GetRemoved() != 7 {
		t.Fatalf("RemoveAll: %v %v", resp, err)
	}
	if slow.calls.Load() != 2 || other.calls.Load() != 0 || c.Leader() != slow.addr {
		t.Fatalf("calls slow=%d other=%d leader %s, want 2, 0 and the slow node", slow.calls.Load(), other.calls.Load(), c.Leader())
	}
}

// TestPingFailsOverWithinAttemptTimeout: a worker's Ping to a paused leader reaches the next node
// after one attempt timeout, far within the client ttl, and the leader it names becomes current.
func TestPingFailsOverWithinAttemptTimeout(t *testing.T) {
	paused, leader := startFake(t), startFake(t)
	paused.hang.Store(true)
	c := newTestClient(t, Config{Endpoints: []string{paused.addr, leader.addr}, AttemptTimeout: 100 * time.Millisecond})
	start := time.Now()
	resp, err := c.Ping(testCtx(t))
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Ping took %s", took)
	}
	if resp.GetLeaderAddress() != leader.addr || c.Leader() != leader.addr {
		t.Fatalf("leader %s (answer names %s), want %s", c.Leader(), resp.GetLeaderAddress(), leader.addr)
	}
}

func TestFilePath(t *testing.T) {
	if got := FilePath("/mnt/shared/c1/", "", "k/../1"); got != "/mnt/shared/c1/64656661756c74/6b2f2e2e2f31" {
		t.Fatalf("FilePath = %q", got)
	}
	if got := FilePath("dir", "t", "\x00"); got != "dir/74/00" {
		t.Fatalf("FilePath = %q", got)
	}
}
