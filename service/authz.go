package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// Authorization: which principal may make which call (the roles of the security design), decided
// here so that the service can decide again when the auth state changes between the check and
// the commit of a command.
//
// The gRPC adapter (package server) authenticates each call (a certificate's identity, or an API
// key: VerifyToken) and calls Authorize with the caller, the method and the decoded request before
// the service sees it. Authorize looks the method up in methodRules (deny by default), checks the
// caller's roles in the auth state current at that moment, writes the caller's own tenant into a
// request that names none, and returns a context that carries the call. Every command the service
// proposes for that context carries the caller's principal and the auth revision the check ran
// against (stamped); apply refuses one whose revision is older than its state's
// (AUTH_REVISION_STALE), and the service then checks the call again against the current state and
// proposes again, at most MaxAuthStale times (proposeAuthed). A context without a call (
// authentication off, or the service's own work: client expiry, eviction) is never stamped.

// MaxAuthStale bounds how often one command is checked and proposed again after apply refused it
// with AUTH_REVISION_STALE.
const MaxAuthStale = 3

// Errors of authentication and authorization. Their messages say why and never hold a secret.
var (
	// ErrUnauthenticated: the call carries no credentials this cluster accepts (gRPC
	// UNAUTHENTICATED).
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: the caller is known, and its roles do not allow the call (gRPC
	// PERMISSION_DENIED).
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnknownKey is what VerifyToken wraps (with ErrUnauthenticated) for a key this node's state
	// does not hold: on a follower, a key created moments ago that it has not applied yet.
	ErrUnknownKey = auth.ErrUnknownKey
	// ErrKeyExpired is what VerifyToken and Authorize wrap (with ErrUnauthenticated) for a key
	// past its expiry.
	ErrKeyExpired = auth.ErrKeyExpired
)

// expiredKeyError is a plain value: a key past its expiry. It is ErrUnauthenticated and
// ErrKeyExpired.
type expiredKeyError struct{ id string }

func (e *expiredKeyError) Error() string {
	return fmt.Sprintf("%v: API key %s has expired", ErrUnauthenticated, e.id)
}

func (e *expiredKeyError) Unwrap() []error { return []error{ErrUnauthenticated, ErrKeyExpired} }

// Caller is a plain value: who makes a call, as the adapter authenticated it. Exactly one of
// Principal and Member is set.
type Caller struct {
	// Principal names the API principal (a client certificate's, or an API key's).
	Principal string
	// KeyID is the API key the principal authenticated with ("" for a certificate); it is
	// checked again, with the principal's roles, at every authorization.
	KeyID string
	// Member names a cluster member that calls as itself (a member certificate, nothing
	// forwarded on behalf of a principal).
	Member string
}

func (c Caller) String() string {
	switch {
	case c.Member != "":
		return "member " + c.Member
	case c.KeyID != "":
		return fmt.Sprintf("principal %q (API key %s)", c.Principal, c.KeyID)
	}
	return fmt.Sprintf("principal %q", c.Principal)
}

// Verified is a plain value: the outcome of VerifyToken, with what AuthStale needs to tell when it
// must be verified again.
type Verified struct {
	Caller    Caller
	Revision  uint64 // the auth revision it was verified at
	ExpiresMs int64  // the key's expiry, Unix ms; 0: never
}

// rule is what a method requires of its caller.
type rule int

const (
	ruleAdmin  rule = iota + 1 // admin only
	ruleReader                 // reader or admin
	ruleTenant                 // the request's tenant among the caller's tenant roles, or admin
	ruleWorker                 // the request's client id that of a worker role of the caller, or admin
	ruleAnyone                 // any authenticated caller
	ruleMember                 // a member recording itself, or admin
)

// methodRules maps every method of the Metadata and Admin services to its rule; a method missing
// here is refused to everyone (a test checks that every method of both services has one).
var methodRules = map[string]rule{
	metadv1.Metadata_PutStart_FullMethodName:            ruleTenant,
	metadv1.Metadata_PutEnd_FullMethodName:              ruleTenant,
	metadv1.Metadata_PutRevoke_FullMethodName:           ruleTenant,
	metadv1.Metadata_UpsertStart_FullMethodName:         ruleTenant,
	metadv1.Metadata_UpsertEnd_FullMethodName:           ruleTenant,
	metadv1.Metadata_UpsertRevoke_FullMethodName:        ruleTenant,
	metadv1.Metadata_Get_FullMethodName:                 ruleTenant,
	metadv1.Metadata_Exist_FullMethodName:               ruleTenant,
	metadv1.Metadata_Remove_FullMethodName:              ruleTenant,
	metadv1.Metadata_RemoveAll_FullMethodName:           ruleTenant,
	metadv1.Metadata_RemoveGroup_FullMethodName:         ruleTenant,
	metadv1.Metadata_ListGroup_FullMethodName:           ruleTenant,
	metadv1.Metadata_BatchPutStart_FullMethodName:       ruleTenant,
	metadv1.Metadata_BatchPutEnd_FullMethodName:         ruleTenant,
	metadv1.Metadata_BatchPutRevoke_FullMethodName:      ruleTenant,
	metadv1.Metadata_BatchGet_FullMethodName:            ruleTenant,
	metadv1.Metadata_BatchExist_FullMethodName:          ruleTenant,
	metadv1.Metadata_BatchRemove_FullMethodName:         ruleTenant,
	metadv1.Metadata_MountSegment_FullMethodName:        ruleWorker,
	metadv1.Metadata_UnmountSegment_FullMethodName:      ruleWorker,
	metadv1.Metadata_Ping_FullMethodName:                ruleWorker,
	metadv1.Metadata_MountLocalDisk_FullMethodName:      ruleWorker,
	metadv1.Metadata_UnmountLocalDisk_FullMethodName:    ruleWorker,
	metadv1.Metadata_NotifyOffload_FullMethodName:       ruleWorker,
	metadv1.Metadata_EvictDiskReplica_FullMethodName:    ruleWorker,
	metadv1.Metadata_PromotionAllocStart_FullMethodName: ruleWorker,
	metadv1.Metadata_NotifyPromotion_FullMethodName:     ruleWorker,
	metadv1.Metadata_ListObjectKeys_FullMethodName:      ruleTenant,
	metadv1.Metadata_GetByRegex_FullMethodName:          ruleTenant,
	metadv1.Metadata_RemoveByRegex_FullMethodName:       ruleTenant,
	metadv1.Metadata_BatchReplicaClear_FullMethodName:   ruleWorker,
	metadv1.Metadata_OpenSession_FullMethodName:         ruleAnyone,
	metadv1.Metadata_CloseSession_FullMethodName:        ruleAnyone,
	metadv1.Metadata_Watch_FullMethodName:               ruleTenant, // all_tenants: ruleReader (authorize)
	// Copy and move of replicas, and master-scheduled tasks.
	metadv1.Metadata_CopyStart_FullMethodName:          ruleTenant,
	metadv1.Metadata_CopyEnd_FullMethodName:            ruleTenant,
	metadv1.Metadata_CopyRevoke_FullMethodName:         ruleTenant,
	metadv1.Metadata_MoveStart_FullMethodName:          ruleTenant,
	metadv1.Metadata_MoveEnd_FullMethodName:            ruleTenant,
	metadv1.Metadata_MoveRevoke_FullMethodName:         ruleTenant,
	metadv1.Metadata_CreateCopyTask_FullMethodName:     ruleTenant,
	metadv1.Metadata_CreateMoveTask_FullMethodName:     ruleTenant,
	metadv1.Metadata_QueryTask_FullMethodName:          ruleTenant,
	metadv1.Metadata_FetchTasks_FullMethodName:         ruleWorker,
	metadv1.Metadata_MarkTaskToComplete_FullMethodName: ruleWorker,
	metadv1.Metadata_ListTasks_FullMethodName:          ruleTenant,

	metadv1.Admin_RegisterTenant_FullMethodName:   ruleAdmin,
	metadv1.Admin_UnregisterTenant_FullMethodName: ruleAdmin,
	metadv1.Admin_ListTenants_FullMethodName:      ruleReader,
	metadv1.Admin_SetQuota_FullMethodName:         ruleAdmin,
	metadv1.Admin_GetQuota_FullMethodName:         ruleTenant,
	metadv1.Admin_ListSegments_FullMethodName:     ruleReader,
	metadv1.Admin_ListMembers_FullMethodName:      ruleReader,
	metadv1.Admin_AddMember_FullMethodName:        ruleAdmin,
	metadv1.Admin_RemoveMember_FullMethodName:     ruleAdmin,
	metadv1.Admin_PromoteMember_FullMethodName:    ruleAdmin,
	metadv1.Admin_TransferLeader_FullMethodName:   ruleAdmin,
	metadv1.Admin_RecordMember_FullMethodName:     ruleMember,
	metadv1.Admin_Status_FullMethodName:           ruleReader,
	metadv1.Admin_SnapshotSave_FullMethodName:     ruleAdmin,
	metadv1.Admin_SnapshotRestore_FullMethodName:  ruleAdmin,
	metadv1.Admin_CreateKey_FullMethodName:        ruleAdmin,
	metadv1.Admin_RevokeKey_FullMethodName:        ruleAdmin,
	metadv1.Admin_ListKeys_FullMethodName:         ruleAdmin,
	metadv1.Admin_GrantRole_FullMethodName:        ruleAdmin,
	metadv1.Admin_RevokeRole_FullMethodName:       ruleAdmin,
	metadv1.Admin_ListRoles_FullMethodName:        ruleAdmin,
	metadv1.Admin_StartDrain_FullMethodName:       ruleAdmin,
	metadv1.Admin_DrainStatus_FullMethodName:      ruleAdmin,
	metadv1.Admin_CancelDrain_FullMethodName:      ruleAdmin,
	metadv1.Admin_SetLimit_FullMethodName:         ruleAdmin,
	metadv1.Admin_ListLimits_FullMethodName:       ruleAdmin,
}

// tenantField is the request field that names the tenant of a ruleTenant method.
const tenantField protoreflect.Name = "tenant"

// call is what a context carries from Authorize to the proposals of the call: who, what, and the
// auth revision of the last check. It is owned by the call's goroutine (and by the one proposal
// ha.ProposeMarked runs for it, which the call's goroutine hands it to and no longer touches).
type call struct {
	caller Caller
	method string
	req    proto.Message
	rev    uint64
}

// callKey carries a *call in a context.
type callKey struct{}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// VerifyToken authenticates an API key ("mtd_<id>_<secret>") against this node's auth state at the
// service's clock. Its errors wrap ErrUnauthenticated, and ErrUnknownKey when this node's state
// does not hold the key.
func (s *Service) VerifyToken(token string) (Verified, error) {
	a := s.st.Auth()
	k, err := a.VerifyToken(token, s.cfg.Now().UnixMilli())
	if err != nil {
		return Verified{}, tokenErr(token, err)
	}
	return Verified{Caller: Caller{Principal: k.Principal, KeyID: k.ID}, Revision: a.Revision(), ExpiresMs: k.ExpiresMs}, nil
}

// AuthStale reports whether v must be verified again: the auth state changed since (a key may
// have been revoked), or the key has expired by the service's clock.
func (s *Service) AuthStale(v Verified) bool {
	return s.st.Auth().Revision() != v.Revision || v.ExpiresMs != 0 && s.cfg.Now().UnixMilli() >= v.ExpiresMs
}

// tokenErr is the error of a token that did not verify, naming the key id when the token has the
// shape of one (never the secret).
func tokenErr(token string, err error) error {
	id := "with no id"
	if rest, ok := strings.CutPrefix(token, auth.TokenPrefix); ok {
		if i := strings.IndexByte(rest, '_'); i == auth.KeyIDLen {
			id = rest[:i]
		}
	}
	switch {
	case errors.Is(err, auth.ErrUnknownKey):
		return &unknownKeyError{id: id}
	case errors.Is(err, auth.ErrKeyExpired):
		return &expiredKeyError{id: id}
	case errors.Is(err, auth.ErrBadToken):
		return fmt.Errorf("%w: API key %s does not match (want the token CreateKey returned: mtd_<id>_<secret>)", ErrUnauthenticated, id)
	}
	return fmt.Errorf("%w: API key %s refused", ErrUnauthenticated, id)
}

// unknownKeyError is a plain value: a key this node's state does not hold. It is ErrUnauthenticated
// and ErrUnknownKey.
type unknownKeyError struct{ id string }

func (e *unknownKeyError) Error() string {
	return fmt.Sprintf("%v: API key %s is unknown (never created, or revoked)", ErrUnauthenticated, e.id)
}

func (e *unknownKeyError) Unwrap() []error { return []error{ErrUnauthenticated, ErrUnknownKey} }

// Authorize checks that c may call method with req, against the auth state current now, and
// returns ctx carrying the call, for the proposals it makes (stamped with c's principal and that
// state's revision). A ruleTenant request with an empty tenant gets the caller's own tenant when
// it holds exactly one tenant role (written into req). The error wraps ErrUnauthenticated (c's key
// is gone or expired) or ErrPermissionDenied; nothing is looked up in the store before it.
func (s *Service) Authorize(ctx context.Context, c Caller, method string, req proto.Message) (context.Context, error) {
	cl := &call{caller: c, method: method, req: req}
	if err := s.authorize(cl); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, callKey{}, cl), nil
}

// authorize checks cl against the current auth state and records its revision in cl.
func (s *Service) authorize(cl *call) error {
	a := s.st.Auth()
	if err := authorize(a, s.cfg.Now().UnixMilli(), cl.caller, cl.method, cl.req); err != nil {
		return err
	}
	cl.rev = a.Revision()
	return nil
}

// authorize is the rule of method applied to c in the auth state a at nowMs.
func authorize(a *auth.State, nowMs int64, c Caller, method string, req proto.Message) error {
	if c.KeyID != "" {
		k, ok := a.Key(c.KeyID)
		switch {
		case !ok || k.Principal != c.Principal:
			return fmt.Errorf("%w: API key %s is unknown (revoked)", ErrUnauthenticated, c.KeyID)
		case k.ExpiresMs != 0 && nowMs >= k.ExpiresMs:
			return &expiredKeyError{id: c.KeyID}
		}
	}
	r, ok := methodRules[method]
	if !ok {
		return fmt.Errorf("%w: %s: no rule allows method %s", ErrPermissionDenied, c, method)
	}
	if w, ok := req.(*metadv1.WatchRequest); ok && w.GetAllTenants() {
		r = ruleReader // every tenant's events: what a reader may list
	}
	if c.Member != "" {
		switch {
		case r == ruleAnyone:
			return nil
		case method == metadv1.Admin_Status_FullMethodName: // the leader asks a learner its progress
			return nil
		case r == ruleMember:
			if rm, ok := req.(*metadv1.RecordMemberRequest); ok && rm.GetName() != c.Member {
				return fmt.Errorf("%w: %s may record only itself, not %q", ErrPermissionDenied, c, rm.GetName())
			}
			return nil
		}
		return fmt.Errorf("%w: %s calls only as itself (RecordMember, OpenSession, Status); %s needs a principal", ErrPermissionDenied, c, method)
	}
	admin := a.IsAdmin(c.Principal)
	switch r {
	case ruleAnyone:
		return nil
	case ruleAdmin, ruleMember:
		if admin {
			return nil
		}
		return fmt.Errorf("%w: %s lacks the admin role that %s needs", ErrPermissionDenied, c, method)
	case ruleReader:
		if a.Holds(c.Principal, auth.RoleReader) {
			return nil
		}
		return fmt.Errorf("%w: %s lacks the reader (or admin) role that %s needs", ErrPermissionDenied, c, method)
	case ruleTenant:
		return authorizeTenant(c, admin, a.Args(c.Principal, auth.RoleTenant), method, req)
	case ruleWorker:
		return authorizeWorker(c, admin, a.Args(c.Principal, auth.RoleWorker), method, req)
	}
	return fmt.Errorf("%w: %s: no rule allows method %s", ErrPermissionDenied, c, method)
}

// authorizeTenant is ruleTenant: the request's tenant ("" = the caller's own when it holds exactly
// one tenant role, written into req; otherwise "" is the default tenant, as everywhere) must be one
// of the caller's tenant roles, unless the caller is admin.
func authorizeTenant(c Caller, admin bool, tenants []string, method string, req proto.Message) error {
	m := req.ProtoReflect()
	fd := m.Descriptor().Fields().ByName(tenantField)
	if fd == nil || fd.Kind() != protoreflect.StringKind {
		return fmt.Errorf("%w: %s: the request names no tenant", ErrPermissionDenied, method)
	}
	raw := m.Get(fd).String()
	if raw == "" && len(tenants) == 1 {
		raw = tenants[0]
		m.Set(fd, protoreflect.ValueOfString(raw))
	}
	if admin {
		return nil
	}
	t := store.NormalizeTenant(raw)
	if slices.Contains(tenants, t) {
		return nil
	}
	if len(tenants) == 0 {
		return fmt.Errorf("%w: %s holds no tenant role; %s on tenant %q needs tenant:%s", ErrPermissionDenied, c, method, t, t)
	}
	return fmt.Errorf("%w: %s may not use tenant %q (its tenants: %s)", ErrPermissionDenied, c, t, strings.Join(tenants, ", "))
}

// clientRequest is a request that names a client id (MountSegment, UnmountSegment, Ping).
type clientRequest interface{ GetClientId() []byte }

// authorizeWorker is ruleWorker: the request's client id must be that of one of the caller's
// worker roles, unless the caller is admin.
func authorizeWorker(c Caller, admin bool, workers []string, method string, req proto.Message) error {
	if admin {
		return nil
	}
	cr, ok := req.(clientRequest)
	if !ok {
		return fmt.Errorf("%w: %s: the request names no client", ErrPermissionDenied, method)
	}
	id, err := clientOf("client_id", cr.GetClientId())
	if err != nil {
		return err // invalid input: refused as such, nothing done
	}
	for _, arg := range workers {
		if w, err := alloc.ParseID(arg); err == nil && w == id {
			return nil
		}
	}
	if len(workers) == 0 {
		return fmt.Errorf("%w: %s holds no worker role; %s for client %s needs worker:%s", ErrPermissionDenied, c, method, id, id)
	}
	return fmt.Errorf("%w: %s is no worker of client %s", ErrPermissionDenied, c, id)
}

// stampAuth puts ctx's call (principal and the revision it was checked at) on cmd.
func stampAuth(ctx context.Context, cmd *metadv1.Command) {
	if cl := callOf(ctx); cl != nil && cl.caller.Member == "" {
		cmd.Principal, cmd.AuthRevision = cl.caller.Principal, cl.rev
	}
}

// proposeAuthed proposes cmd (already stamped) through the Backend. When apply refuses it with
// AUTH_REVISION_STALE (the auth state changed between the check and the commit), the call is
// checked again against the current state and, if still allowed, proposed again stamped with the
// new revision, at most MaxAuthStale times; then the refusal stands. A call no longer allowed
// fails with the check's error, and nothing more is proposed. A command whose session the state
// does not hold for its principal is answered SESSION_EXPIRED, not proposed (foreignSession).
func (s *Service) proposeAuthed(ctx context.Context, cmd *metadv1.Command) (store.Result, error) {
	if r, foreign := s.foreignSession(cmd); foreign { // session.go
		return r, nil
	}
	for n := 0; ; n++ {
		res, err := s.b.Propose(ctx, cmd)
		cl := callOf(ctx)
		if err != nil || res.Reason != store.AuthRevisionStale || cl == nil || n == MaxAuthStale {
			return res, err
		}
		if err := s.authorize(cl); err != nil {
			return store.Result{}, err
		}
		stampAuth(ctx, cmd)
	}
}
