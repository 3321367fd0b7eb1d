package ha

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/hashicorp/raft"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
)

// Membership: the Raft configuration (voters and learners) as this node knows it, and the
// leader's changes to it.

// Members lists the cluster members from Raft's configuration, with recorded client addresses.
func (n *Node) Members() ([]Member, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	recorded := n.sm.Members()
	leader, _ := n.Leader()
	var out []Member
	for _, s := range f.Configuration().Servers {
		name := string(s.ID)
		out = append(out, Member{Name: name, PeerAddr: string(s.Address), ClientAddr: recorded[name].ClientAddr,
			Voter: s.Suffrage == raft.Voter, Leader: name == leader, Level: recorded[name].Level})
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// InConfiguration reports whether name is a server (voter or not) of the latest Raft
// configuration this node knows: the last configuration entry in its log, committed or not. It
// reads the configuration Raft keeps for readers, copying nothing, so it is cheap enough for every
// call that relies on it (package server believes a member's connection only while it holds).
func (n *Node) InConfiguration(name string) bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	return slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return string(s.ID) == name })
}

func (n *Node) leaderOnly() error {
	if n.raft.State() != raft.Leader {
		name, addr := n.Leader()
		return &NotLeaderError{LeaderName: name, LeaderAddr: addr}
	}
	return nil
}

// Membership requests are checked before Raft sees them: a bad name or address for a new member
// is INVALID_PARAMS (*InvalidMemberError) and a name that is not in the configuration
// MEMBER_NOT_FOUND (*MemberNotFoundError), so nothing is appended to the log for them. Removal and
// transfer only look the name up, so a member added before the name rules can still go.

// AddMember adds a voter; the new node must have been started with the existing cluster's state
// (--initial-cluster-state existing) at peerAddr. The name must be valid (fsm.ValidateMemberName)
// and peerAddr host:port (fsm.ValidateMemberAddress).
func (n *Node) AddMember(ctx context.Context, name, peerAddr string) (uint64, error) {
	return n.addMember(ctx, name, peerAddr, false)
}

// AddLearner adds a learner: a non-voter, which replicates the log and applies it but neither
// votes nor counts toward a quorum (and so never leads) until PromoteMember makes it a voter.
// Adding a member already in the configuration as a voter does not demote it.
func (n *Node) AddLearner(ctx context.Context, name, peerAddr string) (uint64, error) {
	return n.addMember(ctx, name, peerAddr, true)
}

// addMember adds name as a voter or a learner and returns the index of the configuration entry
// that holds it.
func (n *Node) addMember(ctx context.Context, name, peerAddr string, learner bool) (uint64, error) {
	if err := invalidMember(fsm.ValidateMemberName(name)); err != nil {
		return 0, err
	}
	if err := invalidMember(fsm.ValidateMemberAddress(peerAddr)); err != nil {
		return 0, err
	}
	if err := n.leaderOnly(); err != nil {
		return 0, err
	}
	id, addr, timeout := raft.ServerID(name), raft.ServerAddress(peerAddr), timeoutOf(ctx, n.cfg.ApplyTimeout)
	var f raft.IndexFuture
	if learner {
		f = n.raft.AddNonvoter(id, addr, 0, timeout)
	} else {
		f = n.raft.AddVoter(id, addr, 0, timeout)
	}
	if err := n.mapRaftErr(f.Error()); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// PromoteMember makes the learner name a voter (at its address in the configuration); a voter
// is left as it is. It returns the configuration's index, 0 when nothing changed. Whether the
// learner has caught up is the caller's to decide (package service asks it).
func (n *Node) PromoteMember(ctx context.Context, name string) (uint64, error) {
	if err := n.leaderOnly(); err != nil {
		return 0, err
	}
	m, err := n.member(name)
	if err != nil {
		return 0, err
	}
	if m.Voter {
		return 0, nil
	}
	f := n.raft.AddVoter(raft.ServerID(name), raft.ServerAddress(m.PeerAddr), 0, timeoutOf(ctx, n.cfg.ApplyTimeout))
	if err := n.mapRaftErr(f.Error()); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// RemoveMember removes a member of the configuration and forgets its recorded addresses.
func (n *Node) RemoveMember(ctx context.Context, name string) error {
	if name == "" {
		return &InvalidMemberError{Msg: "member name: empty"}
	}
	if err := n.leaderOnly(); err != nil {
		return err
	}
	if _, err := n.member(name); err != nil {
		if _, recorded := n.sm.Member(name); !recorded || !errors.Is(err, ErrMemberNotFound) {
			return err
		}
		// Removed from the configuration by an earlier call whose answer was lost, or whose
		// ForgetMember failed: finish the job, so that a retried removal succeeds.
		_, err := n.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_ForgetMember{ForgetMember: &metadv1.ForgetMember{Name: name}}})
		return err
	}
	if err := n.mapRaftErr(n.raft.RemoveServer(raft.ServerID(name), 0, timeoutOf(ctx, n.cfg.ApplyTimeout)).Error()); err != nil {
		return err
	}
	if name == n.cfg.Name {
		return nil // this node just left; it cannot propose any more
	}
	_, err := n.Propose(ctx, &metadv1.Command{Op: &metadv1.Command_ForgetMember{ForgetMember: &metadv1.ForgetMember{Name: name}}})
	return err
}

// member returns the named member of the configuration, or MEMBER_NOT_FOUND.
func (n *Node) member(name string) (Member, error) {
	ms, err := n.Members()
	if err != nil {
		return Member{}, n.mapRaftErr(err)
	}
	i := slices.IndexFunc(ms, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, &MemberNotFoundError{Name: name}
	}
	return ms[i], nil
}
