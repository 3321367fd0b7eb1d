package service

import (
	"context"
	"fmt"
	"sync"
	"time"

	"metad/ha"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Learners: AddMember with learner set adds a non-voter (Backend.AddLearner), which catches up
// from the leader without voting; PromoteMember makes it a voter once it is within max_lag
// entries of the leader's commit index. How far a member has applied is its own to say: the
// leader asks it (MemberProgress, the adapter's call of the member's Status), as ListMembers
// does for every member.

// DefaultPromoteMaxLag is how far behind the leader's commit index a learner may be when it is
// promoted, when the request names no bound: about the entries a busy leader appends in a
// fraction of a second, so that the new voter is needed for no quorum before it has caught up.
const DefaultPromoteMaxLag = 1000

// progressTimeout bounds one question of a member's progress.
const progressTimeout = time.Second

// MemberProgress asks the member whose client address is addr the index of the last entry it has
// applied.
type MemberProgress func(ctx context.Context, addr string) (applied uint64, err error)

// SetMemberProgress sets how the service asks a member its progress (the adapter's, which can
// reach the members); without one, every member's progress is unknown and no learner is promoted.
func (s *Service) SetMemberProgress(p MemberProgress) {
	s.hooksMu.Lock()
	s.progress = p
	s.hooksMu.Unlock()
}

// memberLag asks m how far it has applied and returns its lag behind this leader's commit index.
func (s *Service) memberLag(ctx context.Context, m ha.Member, commit uint64) (applied, lag uint64, err error) {
	if m.Leader {
		st := s.b.Status()
		return st.AppliedIndex, commit - min(commit, st.AppliedIndex), nil
	}
	s.hooksMu.Lock()
	p := s.progress
	s.hooksMu.Unlock()
	switch {
	case p == nil:
		return 0, 0, fmt.Errorf("this member cannot ask others their progress")
	case m.ClientAddr == "":
		return 0, 0, fmt.Errorf("member %s has recorded no client address yet", m.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, progressTimeout)
	defer cancel()
	applied, err = p(ctx, m.ClientAddr)
	if err != nil {
		return 0, 0, fmt.Errorf("member %s at %s did not say how far it has applied: %w", m.Name, m.ClientAddr, err)
	}
	return applied, commit - min(commit, applied), nil
}

// withProgress fills out's members' applied index and lag, asking them all at once.
func (s *Service) withProgress(ctx context.Context, ms []ha.Member, out []*metadv1.Member) {
	commit := s.b.Status().CommitIndex
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			if applied, lag, err := s.memberLag(ctx, m, commit); err == nil {
				out[i].AppliedIndex, out[i].Lag, out[i].ProgressKnown = applied, lag, true
			}
		})
	}
	wg.Wait()
}

// PromoteMember makes a learner a voter once it is within the request's max_lag of the leader's
// commit index (LEARNER_NOT_CAUGHT_UP otherwise, or when it does not answer); a voter is left as
// it is (index 0). MEMBER_NOT_FOUND when the name is not in the configuration.
func (s *Service) PromoteMember(ctx context.Context, req *metadv1.PromoteMemberRequest) (*metadv1.PromoteMemberResponse, error) {
	if req.GetName() == "" {
		return nil, fail(badf("name", "must not be empty"), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	ms, err := s.b.Members()
	if err != nil {
		return nil, fail(err, "", nil)
	}
	var m *ha.Member
	for i := range ms {
		if ms[i].Name == req.GetName() {
			m = &ms[i]
		}
	}
	switch {
	case m == nil:
		return nil, fail(&ha.MemberNotFoundError{Name: req.GetName()}, "", nil)
	case m.Voter:
		return &metadv1.PromoteMemberResponse{}, nil
	}
	bound := req.GetMaxLag()
	if bound == 0 {
		bound = DefaultPromoteMaxLag
	}
	commit := s.b.Status().CommitIndex
	_, lag, err := s.memberLag(ctx, *m, commit)
	if err != nil {
		return nil, fail(&store.Error{Reason: store.LearnerNotCaughtUp, Msg: err.Error() + "; it is not promoted"}, "", nil)
	}
	if lag > bound {
		return nil, fail(&store.Error{Reason: store.LearnerNotCaughtUp, Msg: fmt.Sprintf(
			"learner %s is %d entries behind the leader's commit index %d, more than %d: wait until it catches up", m.Name, lag, commit, bound)}, "", nil)
	}
	idx, err := s.b.PromoteMember(ctx, m.Name)
	if err != nil {
		return nil, fail(err, "", nil)
	}
	return &metadv1.PromoteMemberResponse{Index: idx, Lag: lag}, nil
}

// autoPromoteSweeps is how many of Run's sweeps pass between two looks for learners to promote
// (Config.AutoPromote: about a second at the default sweep): each look asks every learner its
// progress.
const autoPromoteSweeps = 5

// autoPromote promotes every learner within DefaultPromoteMaxLag of the leader's commit index.
func (s *Service) autoPromote(ctx context.Context) {
	ms, err := s.b.Members()
	if err != nil {
		return
	}
	for _, m := range ms {
		if m.Voter {
			continue
		}
		if _, err := s.PromoteMember(ctx, &metadv1.PromoteMemberRequest{Name: m.Name}); err != nil {
			s.log.Debug("learner not promoted yet", "member", m.Name, "err", err)
			continue
		}
		s.log.Info("promoted a caught-up learner to a voter", "member", m.Name)
	}
}
