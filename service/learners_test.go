package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
	"metad/store"
)

// TestPromoteOnlyACaughtUpLearner: a learner further behind the leader's commit index than the
// bound, or one that does not answer, is refused with LEARNER_NOT_CAUGHT_UP and stays a learner;
// within the bound it becomes a voter; a voter is left as it is; ListMembers shows each member's
// progress as it answered.
func TestPromoteOnlyACaughtUpLearner(t *testing.T) {
	h := newHarness(t, servicetest.NewClock())
	ctx := tctx(t)
	h.b.SetMembers("self", "l1", "v2")
	h.b.SetLearner("l1")
	var applied atomic.Uint64
	var down atomic.Bool
	h.svc.SetMemberProgress(func(_ context.Context, addr string) (uint64, error) {
		switch {
		case addr == "l1-addr" && down.Load():
			return 0, errors.New("connection refused")
		case addr == "l1-addr":
			return applied.Load(), nil
		}
		return h.b.AppliedIndex(), nil
	})
	for i := range 5 { // some entries for the learner to be behind
		h.b.MustApply(t, servicetest.RegisterTenant(fmt.Sprint("t", i)))
	}
	commit := h.b.Status().CommitIndex
	if commit < 5 {
		t.Fatalf("commit index %d", commit)
	}
	resp, err := h.svc.ListMembers(ctx, &metadv1.ListMembersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range resp.GetMembers() {
		if !m.GetProgressKnown() || (m.GetName() == "l1") != !m.GetVoter() {
			t.Fatalf("member %v", m)
		}
		if m.GetName() == "l1" && m.GetLag() != commit {
			t.Fatalf("l1's lag %d, want %d (it has applied nothing)", m.GetLag(), commit)
		}
	}
	_, err = h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: "l1", MaxLag: 2})
	wantReason(t, err, store.LearnerNotCaughtUp)
	down.Store(true)
	_, err = h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: "l1"})
	wantReason(t, err, store.LearnerNotCaughtUp)
	down.Store(false)
	applied.Store(commit - 2)
	p, err := h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: "l1", MaxLag: 2})
	if err != nil || p.GetIndex() == 0 || p.GetLag() != 2 {
		t.Fatalf("promotion within the bound: %v %v", p, err)
	}
	if p, err := h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: "v2"}); err != nil || p.GetIndex() != 0 {
		t.Fatalf("a voter's promotion changes nothing: %v %v", p, err)
	}
	_, err = h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: "ghost"})
	wantReason(t, err, store.MemberNotFound)
	_, err = h.svc.PromoteMember(ctx, &metadv1.PromoteMemberRequest{})
	wantReason(t, err, store.InvalidParams)
}

// TestAutoPromote: with AutoPromote, the leader's loop asks each learner its progress and
// promotes it once it is within the default bound, not before.
func TestAutoPromote(t *testing.T) {
	cfg := testConfig()
	cfg.AutoPromote = true
	h := start(t, servicetest.NewBackend(t, nil), cfg)
	for i := range service.DefaultPromoteMaxLag + 10 { // the learner, at 0, will be further behind than the bound
		h.b.MustApply(t, servicetest.RegisterTenant(fmt.Sprint("t", i)))
	}
	h.b.SetMembers("self", "l1")
	h.b.SetLearner("l1")
	var applied, asked atomic.Uint64
	h.svc.SetMemberProgress(func(_ context.Context, addr string) (uint64, error) {
		if addr == "l1-addr" {
			asked.Add(1)
			return applied.Load(), nil
		}
		return 0, errors.New("only l1 is asked")
	})
	learner := func() bool {
		ms, _ := h.b.Members()
		for _, m := range ms {
			if m.Name == "l1" {
				return !m.Voter
			}
		}
		return false
	}
	pollUntil(t, "the loop to ask the learner three times", 5*time.Second, func() bool { return asked.Load() >= 3 })
	if !learner() {
		t.Fatal("a learner more than the bound behind was promoted")
	}
	applied.Store(h.b.Status().CommitIndex)
	pollUntil(t, "the caught-up learner promoted", 5*time.Second, func() bool { return !learner() })
}
