package auth

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/tlsconf"
)

func validKeyID(id string) bool {
	if len(id) != KeyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func refuse(r store.Reason, format string, args ...any) store.Result {
	return store.Result{Reason: r, Message: fmt.Sprintf(format, args...)}
}

// ValidateKeyID checks a key id: KeyIDLen lowercase hex characters. The error does not name the
// field; the caller does.
func ValidateKeyID(id string) error {
	if !validKeyID(id) {
		return fmt.Errorf("%q: want %d lowercase hex characters", id, KeyIDLen)
	}
	return nil
}

// ValidatePrincipal checks a principal name (tlsconf.ValidName).
func ValidatePrincipal(p string) error {
	if err := tlsconf.ValidName(p); err != nil {
		return fmt.Errorf("principal: %w", err)
	}
	return nil
}

// The verdicts: what apply and Check decide for each auth command in state a. OK means apply
// changes the state (or, for a grant that exists, that it is an applied no-op).

func (a *State) createKeyVerdict(m *metadv1.CreateKey) store.Result {
	if err := ValidateKeyID(m.GetId()); err != nil {
		return refuse(store.InvalidParams, "create_key.id: %v", err)
	}
	if err := ValidatePrincipal(m.GetPrincipal()); err != nil {
		return refuse(store.InvalidParams, "create_key.%v", err)
	}
	if len(m.GetSha256()) != sha256.Size {
		return refuse(store.InvalidParams, "create_key.sha256: %d bytes, want %d", len(m.GetSha256()), sha256.Size)
	}
	if m.GetCreatedMs() < 0 {
		return refuse(store.InvalidParams, "create_key.created_ms: %d is negative", m.GetCreatedMs())
	}
	if e := m.GetExpiresMs(); e != 0 && (e <= m.GetCreatedMs() || e-m.GetCreatedMs() > MaxKeyTTL.Milliseconds()) {
		return refuse(store.InvalidParams, "create_key.expires_ms: %d not in (created_ms, created_ms + %s] (created_ms %d)",
			e, MaxKeyTTL, m.GetCreatedMs())
	}
	if _, ok := a.keys[m.GetId()]; ok {
		return refuse(store.KeyAlreadyExists, "key %s exists", m.GetId())
	}
	if len(a.keys) >= MaxKeys {
		return refuse(store.AuthLimitExceeded, "the cluster holds %d keys, the most it keeps; revoke some first", MaxKeys)
	}
	return store.Result{}
}

func (a *State) revokeKeyVerdict(m *metadv1.RevokeKey) store.Result {
	if _, ok := a.keys[m.GetId()]; !ok {
		return refuse(store.KeyNotFound, "key %q is not recorded", m.GetId())
	}
	return store.Result{}
}

// roleOf checks a role command's principal and role; field names the command.
func roleOf(field, principal, role string) (Role, store.Result) {
	if err := ValidatePrincipal(principal); err != nil {
		return Role{}, refuse(store.InvalidParams, "%s.%v", field, err)
	}
	r, err := ParseRole(role)
	if err != nil {
		return Role{}, refuse(store.InvalidParams, "%s.role: %v", field, err)
	}
	return r, store.Result{}
}

// grantVerdict also reports whether the binding exists already (an applied no-op).
func (a *State) grantVerdict(m *metadv1.GrantRole) (Role, bool, store.Result) {
	r, res := roleOf("grant_role", m.GetPrincipal(), m.GetRole())
	if res.Reason != store.OK {
		return r, false, res
	}
	rs, has := a.roles[m.GetPrincipal()]
	if slices.Contains(rs, r) || m.GetPrincipal() == RootPrincipal && r.Kind == RoleAdmin {
		return r, true, store.Result{}
	}
	if !has && len(a.roles) >= MaxPrincipals {
		return r, false, refuse(store.AuthLimitExceeded, "%d principals hold roles, the most the cluster keeps", MaxPrincipals)
	}
	if len(rs) >= MaxRolesPerPrincipal {
		return r, false, refuse(store.AuthLimitExceeded, "principal %s holds %d roles, the most one may hold", m.GetPrincipal(), MaxRolesPerPrincipal)
	}
	return r, false, store.Result{}
}

func (a *State) revokeRoleVerdict(m *metadv1.RevokeRole) (Role, store.Result) {
	r, res := roleOf("revoke_role", m.GetPrincipal(), m.GetRole())
	if res.Reason != store.OK {
		return r, res
	}
	if m.GetPrincipal() == RootPrincipal && r.Kind == RoleAdmin {
		return r, refuse(store.InvalidParams, "revoke_role: %s's admin role cannot be revoked", RootPrincipal)
	}
	if !slices.Contains(a.roles[m.GetPrincipal()], r) {
		return r, refuse(store.RoleNotFound, "principal %s has no role %s", m.GetPrincipal(), r)
	}
	return r, store.Result{}
}

// Check is the leader's check of an auth command: refused is true when applying c to state a would be
// refused, and r is that refusal. It runs the verdicts apply runs and changes nothing; any other
// command is never refused here.
func Check(a *State, c *metadv1.Command) (r store.Result, refused bool) {
	switch op := c.GetOp().(type) {
	case *metadv1.Command_CreateKey:
		r = a.createKeyVerdict(op.CreateKey)
	case *metadv1.Command_RevokeKey:
		r = a.revokeKeyVerdict(op.RevokeKey)
	case *metadv1.Command_GrantRole:
		_, _, r = a.grantVerdict(op.GrantRole)
	case *metadv1.Command_RevokeRole:
		_, r = a.revokeRoleVerdict(op.RevokeRole)
	case *metadv1.Command_SetLimit:
		_, r = a.setLimitVerdict(op.SetLimit)
	}
	return r, r.Reason != store.OK
}

// next returns a copy of a at the next revision, for apply to change before it swaps it in.
func (a *State) next() *State {
	n := &State{revision: a.revision + 1, keys: maps.Clone(a.keys), roles: maps.Clone(a.roles), limits: a.limits}
	if n.keys == nil {
		n.keys = map[string]APIKey{}
	}
	if n.roles == nil {
		n.roles = map[string][]Role{}
	}
	return n
}

// Stale is the refusal of a command authorized against an auth revision older than the
// state's (see Command.auth_revision); ok is false when the command may run.
func Stale(a *State, c *metadv1.Command) (store.Result, bool) {
	if rev := c.GetAuthRevision(); rev != 0 && rev < a.revision {
		return refuse(store.AuthRevisionStale, "authorized at auth revision %d; the auth state has since changed (revision %d)",
			rev, a.revision), true
	}
	return store.Result{}, false
}

// Apply applies an auth command (CreateKey, RevokeKey, GrantRole, RevokeRole, SetLimit) to state a: it returns
// the state after it (a itself when nothing changed: a refusal, or a grant that exists) and the
// command's result. a is not changed. Any other command is a programming error.
func Apply(a *State, c *metadv1.Command) (*State, store.Result) {
	switch op := c.GetOp().(type) {
	case *metadv1.Command_CreateKey:
		return a.createKey(op.CreateKey)
	case *metadv1.Command_RevokeKey:
		return a.revokeKey(op.RevokeKey)
	case *metadv1.Command_GrantRole:
		return a.grantRole(op.GrantRole)
	case *metadv1.Command_RevokeRole:
		return a.revokeRole(op.RevokeRole)
	case *metadv1.Command_SetLimit:
		return a.setLimit(op.SetLimit)
	}
	panic(fmt.Sprintf("auth: Apply of a command that is not an auth command: %T", c.GetOp()))
}

func (a *State) createKey(m *metadv1.CreateKey) (*State, store.Result) {
	if r := a.createKeyVerdict(m); r.Reason != store.OK {
		return a, r
	}
	n := a.next()
	k := APIKey{ID: m.GetId(), Principal: m.GetPrincipal(), CreatedMs: m.GetCreatedMs(), ExpiresMs: m.GetExpiresMs()}
	copy(k.Hash[:], m.GetSha256())
	n.keys[k.ID] = k
	return n, store.Result{}
}

func (a *State) revokeKey(m *metadv1.RevokeKey) (*State, store.Result) {
	if r := a.revokeKeyVerdict(m); r.Reason != store.OK {
		return a, r
	}
	n := a.next()
	delete(n.keys, m.GetId())
	return n, store.Result{}
}

func (a *State) grantRole(m *metadv1.GrantRole) (*State, store.Result) {
	r, exists, res := a.grantVerdict(m)
	if res.Reason != store.OK || exists {
		return a, res
	}
	n := a.next()
	rs := append(slices.Clone(n.roles[m.GetPrincipal()]), r)
	slices.SortFunc(rs, compareRoles)
	n.roles[m.GetPrincipal()] = rs
	return n, store.Result{}
}

func (a *State) revokeRole(m *metadv1.RevokeRole) (*State, store.Result) {
	r, res := a.revokeRoleVerdict(m)
	if res.Reason != store.OK {
		return a, res
	}
	n := a.next()
	rs := slices.DeleteFunc(slices.Clone(n.roles[m.GetPrincipal()]), func(x Role) bool { return x == r })
	if len(rs) == 0 {
		delete(n.roles, m.GetPrincipal())
	} else {
		n.roles[m.GetPrincipal()] = rs
	}
	return n, store.Result{}
}
