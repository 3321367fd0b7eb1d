package fsm

import (
	"maps"
	"sync/atomic"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// State is the replicated state, whole: the store (tenants, objects, segments, tasks, drains,
// arenas), the member records, the client sessions and the auth state. The FSM holds one State
// behind one pointer: Snapshot captures every part of that one value, and Restore builds a new
// State from the file and swaps it in with one store, so no instant holds parts of two states. A
// reader that loads the State once (FSM.State) reads all of its parts from one lineage.
//
// Concurrency: the store and the session table are safe for concurrent use (the apply goroutine
// writes them in place); the member records and the auth state are immutable values that apply
// replaces, each behind its own pointer inside the State, so a reader holds one version of each
// for its whole read.
type State struct {
	store    *store.Store
	sessions *sessionTable
	members  atomic.Pointer[map[string]Member] // copy-on-write (SetMember, ForgetMember)
	auth     atomic.Pointer[auth.State]        // copy-on-write (the auth commands)
}

func newState(s *store.Store, members map[string]Member, sessions *sessionTable, a *auth.State) *State {
	st := &State{store: s, sessions: sessions}
	if members == nil {
		members = map[string]Member{}
	}
	st.members.Store(&members)
	st.auth.Store(a)
	return st
}

// Member is one cluster member's record: its addresses and the feature level of its binary
// (FeatureLevel; 0 when it was recorded by a binary that did not record one).
type Member struct {
	Name       string
	PeerAddr   string
	ClientAddr string
	Level      uint32
}

// Store returns the state's store.
func (st *State) Store() *store.Store { return st.store }

// Members returns the member records (a copy, any order).
func (st *State) Members() map[string]Member { return maps.Clone(*st.members.Load()) }

// Member returns the record of member name, without copying the others.
func (st *State) Member(name string) (Member, bool) {
	m, ok := (*st.members.Load())[name]
	return m, ok
}

// Auth returns the auth state; never nil.
func (st *State) Auth() *auth.State { return st.auth.Load() }

func (st *State) setMembers(m map[string]Member) { st.members.Store(&m) }

// Replay returns the answer the state keeps for the session header's (session, seq): the result of
// the command that applied with that header, if the session still keeps it and principal opened
// it. The leader answers a retried request with it instead of deciding anything again.
func (st *State) Replay(h *metadv1.SessionHeader, principal string) (store.Result, bool) {
	if h.GetSessionId() == 0 {
		return store.Result{}, false
	}
	return st.sessions.replay(h, principal)
}

// NextSessionID returns the id the next OpenSession assigns.
func (st *State) NextSessionID() uint64 {
	t := st.sessions
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.next
}

// SessionOpen reports whether the state holds session id and principal is known to have opened it
// (it may still expire at the next entry that uses it). A session of another principal, or of no
// known one, is not open to principal.
func (st *State) SessionOpen(id uint64, principal string) bool {
	t := st.sessions
	t.mu.RLock()
	defer t.mu.RUnlock()
	ss, ok := t.byID[id]
	return ok && ss.owner.is(principal)
}

// Sessions returns the open sessions and the answers they keep.
func (st *State) Sessions() (sessions, results int) { return st.sessions.counts() }

// Carried is what a snapshot restore keeps of this state in the state it installs
// (snapshot.Rewrite): the next state epoch, a session counter no lower, this cluster's auth
// state, its member records by name (the caller limits them to the Raft configuration), and the
// file format its members read (fileVersion).
func (st *State) Carried() snapshot.Carried {
	c := snapshot.Carried{Epoch: st.store.Epoch() + 1, NextSession: st.NextSessionID(), Auth: st.Auth().Records()}
	ms := sortedMembers(*st.members.Load())
	for _, m := range ms {
		c.Members = append(c.Members, m.record())
	}
	c.FileVersion = fileVersion(ms)
	return c
}

// record is m as its snapshot record.
func (m Member) record() *metadv1.MemberRecord {
	return &metadv1.MemberRecord{Name: m.Name, PeerAddress: m.PeerAddr, ClientAddress: m.ClientAddr, FeatureLevel: m.Level}
}
