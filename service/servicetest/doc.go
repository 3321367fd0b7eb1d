// Package servicetest is the in-memory backend the tests of the service (package service) and of
// its gRPC adapter (package server) share: a service.Backend over a real fsm.FSM with no Raft,
// whose Propose encodes the command in an envelope and applies it as the next log entry at once.
// It leads unless told otherwise, and its knobs make the faults a real node meets: a follower that
// knows a leader (SetLeader), a leader deposed without noticing (Deposed), an answer lost after
// apply (LoseAnswer), a proposal that fails (FailNextPropose), a state change committed between a
// leader's check and its command's apply (BeforeNextApply, RestoreBeforeNextApply,
// AuthChangeBeforeEachApply), a stale auth revision (StaleAuth), the leader lease (Lease), a
// silent leader (Silent) and the members of the configuration (SetMembers).
//
// The package also holds what tests around the backend need: a settable clock (Clock), commands
// applied to the state directly (MustApply, NewKey, Grant, RevokeRole, RevokeKey) and snapshot
// files of the state (SavedState).
//
// It imports neither service nor server, so that tests of both packages, internal ones included,
// can use it; the service's tests assert that *Backend implements service.Backend.
//
//	b := servicetest.NewBackend(t, clk.Now)
//	lead := service.NewLeadership(b.Store, clk.Now)
//	b.SetLeadershipHook(lead.Changed)
//	svc, _ := service.New(b, b.FSM(), lead, cfg, reg, nil)
package servicetest
