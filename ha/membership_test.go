package ha_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"metad/ha"
)

// TestMembershipRequestsChecked: a malformed name or address is INVALID_PARAMS and a name that is
// not in the configuration MEMBER_NOT_FOUND, as *InvalidMemberError and *MemberNotFoundError values
// and with nothing appended to the log; transferring leadership to the leader itself is a no-op that names it.
// InConfiguration follows an addition and a removal.
func TestMembershipRequestsChecked(t *testing.T) {
	c := newCluster(t, 1, nil)
	l := c.WaitLeader().Node()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.WaitFor("the leader to record its own addresses", 5*time.Second, l.SelfRecorded)
	last := l.Status().LastLogIndex

	for _, tc := range []struct{ name, addr string }{
		{"n2\x01", "127.0.0.1:7002"},
		{"", "127.0.0.1:7002"},
		{"_n2", "127.0.0.1:7002"},
		{"n2", "127.0.0.1"},
		{"n2", "127.0.0.1:0"},
		{"n2", "127.0.0.1:70000"},
		{"n2", ":7002"},
		{"n2", "127.0.0.1:7002\n"},
	} {
		if _, err := l.AddMember(ctx, tc.name, tc.addr); !errors.Is(err, ha.ErrInvalidMember) {
			t.Errorf("AddMember(%q, %q) = %v, want INVALID_PARAMS", tc.name, tc.addr, err)
		}
	}
	if err := l.RemoveMember(ctx, "ghost"); !errors.Is(err, ha.ErrMemberNotFound) {
		t.Errorf("RemoveMember of an unknown member = %v, want MEMBER_NOT_FOUND", err)
	}
	if err := l.RemoveMember(ctx, ""); !errors.Is(err, ha.ErrInvalidMember) {
		t.Errorf("RemoveMember of no name = %v, want INVALID_PARAMS", err)
	}
	if _, err := l.TransferLeader(ctx, "ghost"); !errors.Is(err, ha.ErrMemberNotFound) {
		t.Errorf("TransferLeader to an unknown member = %v, want MEMBER_NOT_FOUND", err)
	}
	if got := l.Status().LastLogIndex; got != last {
		t.Fatalf("refused membership requests appended entries %d..%d", last+1, got)
	}
	ms, err := l.Members()
	if err != nil || len(ms) != 1 {
		t.Fatalf("members %v (%v), want only n1", ms, err)
	}
	name, err := l.TransferLeader(ctx, "n1")
	if err != nil || name != "n1" || !l.IsLeader() {
		t.Fatalf("TransferLeader to the leader itself = %q, %v (leader %v), want a no-op naming n1", name, err, l.IsLeader())
	}

	// A member whose name predates the rules (added straight through Raft here, as a non-voter so
	// the quorum stays) is looked up, not checked: it can be removed.
	if err := l.Raft().AddNonvoter("old\x01name", "127.0.0.1:7009", 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if !l.InConfiguration("old\x01name") || !l.InConfiguration("n1") || l.InConfiguration("ghost") {
		t.Fatal("InConfiguration does not follow the configuration {n1, old\\x01name}")
	}
	if err := l.RemoveMember(ctx, "old\x01name"); err != nil {
		t.Fatalf("RemoveMember of a member added before the name rules: %v", err)
	}
	if ms, err := l.Members(); err != nil || len(ms) != 1 {
		t.Fatalf("members %v (%v), want only n1", ms, err)
	}
	if l.InConfiguration("old\x01name") {
		t.Fatal("InConfiguration holds a removed member")
	}
}

// TestRemoveMemberRetried: a removal whose answer was lost after Raft removed the member (or whose
// ForgetMember failed) is retried; the retry finds the name gone from the configuration but still
// recorded, forgets the record and succeeds.
func TestRemoveMemberRetried(t *testing.T) {
	c := newCluster(t, 1, nil)
	lm := c.WaitLeader()
	l := lm.Node()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.Raft().AddNonvoter("n9", "127.0.0.1:7009", 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordMember(ctx, ha.MemberRecord{Name: "n9", PeerAddr: "127.0.0.1:7009", ClientAddr: "127.0.0.1:7019"}); err != nil {
		t.Fatal(err)
	}
	// The first RemoveMember's configuration change, without its ForgetMember.
	if err := l.Raft().RemoveServer("n9", 0, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := l.RemoveMember(ctx, "n9"); err != nil {
		t.Fatalf("retried RemoveMember: %v", err)
	}
	if _, ok := lm.FSM().Members()["n9"]; ok {
		t.Fatal("the retried removal left n9's record")
	}
	if err := l.RemoveMember(ctx, "n9"); !errors.Is(err, ha.ErrMemberNotFound) {
		t.Fatalf("RemoveMember once nothing is left = %v, want MEMBER_NOT_FOUND", err)
	}
}
