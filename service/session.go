package service

import (
	"context"
	"fmt"

	"metad/fsm"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Client sessions (exactly-once writes). A write request may carry a SessionHeader; the service
// puts it on the request's command, and apply runs the command at most once per (session, seq),
// keeping the result of one that applied (package fsm, sessions.go). Before it decides anything
// from its own state for such a request (a precheck refusal, a removal's prepare), the leader
// looks for the result its state keeps for (session, seq) and, when there is one, answers with it:
// so a retry of a write that applied gets the first answer, from any node, even after a leader
// change, and changes nothing. When the state holds no such session (expired, dropped, or ended by
// an operator's snapshot restore) it answers SESSION_EXPIRED, as apply would, never a refusal from
// the state. A request without a header behaves as before: at most once, its outcome unknown when
// the answer is lost.
//
// A session belongs to the principal that opened it (the principal its OpenSession command
// carries, stampAuth), and the leader treats a session it does not know to be the caller's (one
// another principal opened, or one of no known owner: fsm/sessions.go) as one it does not hold: the
// request is answered SESSION_EXPIRED, with the very message of an unknown session, before
// anything is looked up or proposed (answered, and proposeAuthed for every command that carries a
// header); a PutStart with such a header is not answered from the arenas (ownSession).
// Apply refuses such a command too, so a leader of an older release changes nothing either.
//
// Requests that take a header: the puts and upserts (start, end, revoke, and their batch forms),
// Remove, BatchRemove, RemoveGroup, MountSegment, UnmountSegment, RegisterTenant,
// UnregisterTenant, SetQuota. RemoveAll takes none: it is several commands, and a retry removes
// what is left and answers for that.

// sessionKey carries a request's session header in its context, from the handler that validated
// it to the helpers that propose (proposeChecked, proposeMarked) and prepare.
type sessionKey struct{}

// withSession validates a request's session header and returns ctx carrying it (nil: ctx as it
// is). A header names a session (id > 0) and a sequence number (1 <= seq <= fsm.MaxSessionSeq) no
// smaller than its first_unacked_seq.
func withSession(ctx context.Context, h *metadv1.SessionHeader) (context.Context, error) {
	if h == nil {
		return ctx, nil
	}
	switch {
	case h.GetSessionId() == 0:
		return ctx, badf("session.session_id", "must not be 0")
	case h.GetSeq() == 0:
		return ctx, badf("session.seq", "must be at least 1")
	case h.GetSeq() > fsm.MaxSessionSeq:
		return ctx, badf("session.seq", "%d above %d", h.GetSeq(), uint64(fsm.MaxSessionSeq))
	case h.GetFirstUnackedSeq() > h.GetSeq():
		return ctx, badf("session.first_unacked_seq", "%d above seq %d", h.GetFirstUnackedSeq(), h.GetSeq())
	}
	return context.WithValue(ctx, sessionKey{}, h), nil
}

// sessionOf returns the session header ctx carries, or nil.
func sessionOf(ctx context.Context) *metadv1.SessionHeader {
	h, _ := ctx.Value(sessionKey{}).(*metadv1.SessionHeader)
	return h
}

// stamped returns cmd carrying ctx's session header, and the principal and auth revision of ctx's
// call (authz.go) when it has one.
func stamped(ctx context.Context, cmd *metadv1.Command) *metadv1.Command {
	if h := sessionOf(ctx); h != nil {
		cmd.Session = h
	}
	stampAuth(ctx, cmd)
	return cmd
}

// principalOf is the principal that the commands proposed for ctx carry (stampAuth): the caller's;
// "" for a member calling as itself, for the service's own work and on a cluster that
// authenticates nothing.
func principalOf(ctx context.Context) string {
	if cl := callOf(ctx); cl != nil && cl.caller.Member == "" {
		return cl.caller.Principal
	}
	return ""
}

// answered returns the answer the state already holds for ctx's (session, seq), if any: the result
// it keeps for it, or SESSION_EXPIRED when it holds no such session of the caller's (expired,
// dropped, replaced by a snapshot restore, or opened by another principal), where apply would
// answer the same. A request with an answer is answered with it, never refused from the state:
// its first attempt may have applied.
func (s *Service) answered(ctx context.Context) (store.Result, bool) {
	h := sessionOf(ctx)
	if h == nil {
		return store.Result{}, false
	}
	p := principalOf(ctx)
	if r, ok := s.st.Replay(h, p); ok {
		return r, true
	}
	if !s.st.SessionOpen(h.GetSessionId(), p) {
		return unknownSession(h.GetSessionId()), true
	}
	return store.Result{}, false
}

// foreignSession returns SESSION_EXPIRED for a command whose session header names a session that
// the state does not hold for the principal the command carries: the leader proposes no such
// command (proposeAuthed), so an apply of an older release, which does not check owners, never
// runs one that this release refuses.
func (s *Service) foreignSession(cmd *metadv1.Command) (store.Result, bool) {
	if id := cmd.GetSession().GetSessionId(); id != 0 && !s.st.SessionOpen(id, cmd.GetPrincipal()) {
		return unknownSession(id), true
	}
	return store.Result{}, false
}

// ownSession returns ctx's session header (nil: none), own false when the state does not hold
// that session for the caller: such a PutStart is not answered from the arenas, where a retry is
// known by its (session, seq), but through the log, which answers SESSION_EXPIRED (answered).
func (s *Service) ownSession(ctx context.Context) (h *metadv1.SessionHeader, own bool) {
	h = sessionOf(ctx)
	return h, h == nil || s.st.SessionOpen(h.GetSessionId(), principalOf(ctx))
}

// unknownSession is the answer to a request whose session the state does not hold for its caller;
// the same, word for word, as apply's (fsm), so that it tells nothing of another's session.
func unknownSession(id uint64) store.Result {
	return store.Result{Reason: store.SessionExpired, Message: fmt.Sprintf("session %d is unknown or expired", id)}
}

// OpenSession opens a client session: a replicated command whose id the log assigns, with the
// service's ttl and window.
func (s *Service) OpenSession(ctx context.Context, req *metadv1.OpenSessionRequest) (*metadv1.OpenSessionResponse, error) {
	if len(req.GetClientId()) > 0 {
		if _, err := clientOf("client_id", req.GetClientId()); err != nil {
			return nil, fail(err, "", nil)
		}
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := stamped(ctx, &metadv1.Command{Op: &metadv1.Command_OpenSession{OpenSession: &metadv1.OpenSession{
		TtlMs: ms(s.cfg.SessionTTL), Window: s.cfg.SessionWindow}}})
	res, err := s.proposeAuthed(ctx, cmd)
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := rejected(&res, "", nil); err != nil {
		return nil, err
	}
	if res.Session == 0 {
		return nil, internalf("OpenSession applied without a session id")
	}
	return &metadv1.OpenSessionResponse{SessionId: res.Session, TtlMs: ms(s.cfg.SessionTTL), Window: s.cfg.SessionWindow}, nil
}

// CloseSession ends a session of the caller's (a replicated command): its kept answers go at once.
// A session that is not open to the caller (unknown, expired, or another principal's) is answered
// SESSION_EXPIRED, word for word as for an unknown session, with no log entry. A cluster with a
// member of an older binary refuses it (ha.ErrFeatureLevel), and the session ends at its ttl.
func (s *Service) CloseSession(ctx context.Context, req *metadv1.CloseSessionRequest) (*metadv1.CloseSessionResponse, error) {
	id := req.GetSessionId()
	if id == 0 {
		return nil, fail(badf("session_id", "must not be 0"), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := stamped(ctx, &metadv1.Command{Op: &metadv1.Command_CloseSession{CloseSession: &metadv1.CloseSession{SessionId: id}}})
	var res store.Result
	if _, err := s.fromState(ctx, func(*store.Store) (bool, error) {
		if !s.st.SessionOpen(id, cmd.GetPrincipal()) {
			res = unknownSession(id)
			return false, nil
		}
		return true, nil
	}); err != nil {
		return nil, fail(err, "", nil)
	}
	if res.Reason == store.OK {
		var err error
		if res, err = s.proposeAuthed(ctx, cmd); err != nil {
			return nil, fail(err, "", nil)
		}
	}
	if err := rejected(&res, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.CloseSessionResponse{}, nil
}

// validSessionConfig checks the session settings against the state machine's limits.
func validSessionConfig(c Config) error {
	if c.SessionTTL < fsm.MinSessionTTL || c.SessionWindow < 1 || c.SessionWindow > fsm.MaxSessionWindow {
		return fmt.Errorf("service: session_ttl %s (at least %s) or session window %d (1..%d) out of range",
			c.SessionTTL, fsm.MinSessionTTL, c.SessionWindow, fsm.MaxSessionWindow)
	}
	return nil
}
