package fsm

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
	"metad/store/alloc"
	"metad/tlsconf"
)

// The auth state: API keys and role bindings, replicated through the log (CreateKey, RevokeKey,
// GrantRole, RevokeRole) and carried in snapshots. The cluster keeps only the SHA-256 of a key's
// secret; the leader draws ids and secrets (crypto/rand, package service) and stamps the times, so
// apply stays a function of (state, entry). Every auth command that changes the state bumps the
// revision; a command authorized against an older revision is refused at apply
// (AUTH_REVISION_STALE, runCommand), so a key or role revoked between a request's check and its
// commit cannot slip the request in.

// RootPrincipal is the bootstrap principal: admin always, a binding that is not stored and cannot
// be revoked. It may hold API keys (a key for root is how an operator's first admin key works).
const RootPrincipal = "root"

// Limits of the auth state. Apply refuses a command past one with AUTH_LIMIT_EXCEEDED.
const (
	// MaxKeys bounds the API keys recorded.
	MaxKeys = 65536
	// MaxPrincipals bounds the principals with at least one role binding.
	MaxPrincipals = 65536
	// MaxRolesPerPrincipal bounds one principal's role bindings.
	MaxRolesPerPrincipal = 64
	// MaxKeyTTL bounds a key's lifetime (expires - created).
	MaxKeyTTL = 10 * 365 * 24 * time.Hour
)

// Token format: "mtd_<id>_<secret>", id KeyIDLen lowercase hex characters (8 random bytes),
// secret SecretLen characters of unpadded base64url (32 random bytes).
const (
	TokenPrefix = "mtd_"
	KeyIDLen    = 16
	SecretBytes = 32
	SecretLen   = 43
	TokenLen    = len(TokenPrefix) + KeyIDLen + 1 + SecretLen
)

// Errors of VerifyToken and ParseRole.
var (
	// ErrBadToken: the token is malformed, or its secret does not match its key.
	ErrBadToken = errors.New("fsm: bad API token")
	// ErrUnknownKey: the token names a key id that is not recorded (never created, or revoked).
	ErrUnknownKey = errors.New("fsm: unknown API key")
	// ErrKeyExpired: the token's key has expired.
	ErrKeyExpired = errors.New("fsm: API key expired")
	// ErrBadRole: a role that ParseRole does not accept.
	ErrBadRole = errors.New("fsm: bad role")
)

// APIKey is one API key as the state records it. ExpiresMs 0: never expires.
type APIKey struct {
	ID, Principal        string
	Hash                 [32]byte // SHA-256 of the secret
	CreatedMs, ExpiresMs int64    // Unix milliseconds, the leader's time
}

// Expired reports whether the key has expired at nowMs (Unix milliseconds).
func (k APIKey) Expired(nowMs int64) bool { return k.ExpiresMs != 0 && nowMs >= k.ExpiresMs }

// RoleKind is the kind of a role.
type RoleKind uint8

// The role kinds.
const (
	// RoleAdmin: everything.
	RoleAdmin RoleKind = iota + 1
	// RoleReader: status and listings.
	RoleReader
	// RoleWorker: the segments and liveness of one client id (Role.Arg, canonical UUID form).
	RoleWorker
	// RoleTenant: the object calls of one tenant (Role.Arg).
	RoleTenant
)

// Role is one role binding's role. Arg is the client id of a worker role (canonical lower-case
// 8-4-4-4-12 form) and the tenant id of a tenant role; empty for the others.
type Role struct {
	Kind RoleKind
	Arg  string
}

// String is the role's text form, the one ParseRole reads: "admin", "reader", "worker:<client-id>",
// "tenant:<tenant-id>".
func (r Role) String() string {
	switch r.Kind {
	case RoleAdmin:
		return "admin"
	case RoleReader:
		return "reader"
	case RoleWorker:
		return "worker:" + r.Arg
	case RoleTenant:
		return "tenant:" + r.Arg
	}
	return fmt.Sprintf("RoleKind(%d):%s", r.Kind, r.Arg)
}

// compareRoles orders roles by their text form (the order of Roles and of the snapshot records).
func compareRoles(a, b Role) int { return strings.Compare(a.String(), b.String()) }

// ParseRole parses a role's text form. A worker's client id must be a non-zero UUID (8-4-4-4-12 or
// 32 hex digits, either case; kept in the canonical lower-case form) and a tenant's id a valid
// tenant id (store.ValidateTenant). Errors wrap ErrBadRole.
func ParseRole(s string) (Role, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	switch {
	case kind == "admin" && !hasArg:
		return Role{Kind: RoleAdmin}, nil
	case kind == "reader" && !hasArg:
		return Role{Kind: RoleReader}, nil
	case kind == "worker" && hasArg:
		id, err := alloc.ParseID(arg)
		if err == nil {
			err = store.ValidateClient(id)
		}
		if err != nil {
			return Role{}, fmt.Errorf("%w %q: worker client id: %v", ErrBadRole, s, err)
		}
		return Role{Kind: RoleWorker, Arg: id.String()}, nil
	case kind == "tenant" && hasArg:
		if err := store.ValidateTenant(arg); err != nil {
			return Role{}, fmt.Errorf("%w %q: %v", ErrBadRole, s, err)
		}
		return Role{Kind: RoleTenant, Arg: arg}, nil
	}
	return Role{}, fmt.Errorf("%w %q: want admin, reader, worker:<client-id> or tenant:<tenant-id>", ErrBadRole, s)
}

// AuthState is the replicated auth state at one revision. It is immutable: apply builds a new one
// for every change and swaps it in (FSM.Auth), so a reader holds one state for its whole read, from
// any goroutine.
type AuthState struct {
	revision uint64
	keys     map[string]APIKey // by id
	roles    map[string][]Role // by principal; sorted (compareRoles), distinct, never empty
}

var emptyAuth = &AuthState{keys: map[string]APIKey{}, roles: map[string][]Role{}}

// Revision is the number of auth commands that changed the state; 0 in a fresh cluster.
func (a *AuthState) Revision() uint64 { return a.revision }

// Roles returns principal's roles, sorted (a copy); nil when it has none. RootPrincipal always has
// RoleAdmin.
func (a *AuthState) Roles(principal string) []Role {
	rs := a.roles[principal]
	if principal == RootPrincipal && !slices.Contains(rs, Role{Kind: RoleAdmin}) {
		out := append([]Role{{Kind: RoleAdmin}}, rs...)
		slices.SortFunc(out, compareRoles)
		return out
	}
	return slices.Clone(rs)
}

// Bindings returns every stored role binding by principal (copies). RootPrincipal's implicit admin
// role is not among them.
func (a *AuthState) Bindings() map[string][]Role {
	out := make(map[string][]Role, len(a.roles))
	for p, rs := range a.roles {
		out[p] = slices.Clone(rs)
	}
	return out
}

// Principals returns the principals with stored role bindings, sorted.
func (a *AuthState) Principals() []string { return slices.Sorted(maps.Keys(a.roles)) }

// Key returns the key with this id.
func (a *AuthState) Key(id string) (APIKey, bool) {
	k, ok := a.keys[id]
	return k, ok
}

// Keys returns every key, sorted by id.
func (a *AuthState) Keys() []APIKey {
	out := slices.Collect(maps.Values(a.keys))
	slices.SortFunc(out, func(x, y APIKey) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// ParseToken splits a token "mtd_<id>_<secret>" into its key id and its secret's bytes; errors
// wrap ErrBadToken.
func ParseToken(token string) (id string, secret []byte, err error) {
	if len(token) != TokenLen || !strings.HasPrefix(token, TokenPrefix) || token[len(TokenPrefix)+KeyIDLen] != '_' {
		return "", nil, fmt.Errorf("%w: want %s<%d hex>_<%d base64url>", ErrBadToken, TokenPrefix, KeyIDLen, SecretLen)
	}
	id = token[len(TokenPrefix) : len(TokenPrefix)+KeyIDLen]
	if !validKeyID(id) {
		return "", nil, fmt.Errorf("%w: key id is not %d lowercase hex characters", ErrBadToken, KeyIDLen)
	}
	secret, err = base64.RawURLEncoding.Strict().DecodeString(token[len(TokenPrefix)+KeyIDLen+1:])
	if err != nil || len(secret) != SecretBytes {
		return "", nil, fmt.Errorf("%w: secret is not %d bytes of unpadded base64url", ErrBadToken, SecretBytes)
	}
	return id, secret, nil
}

// FormatToken is the token of key id with secret (SecretBytes bytes).
func FormatToken(id string, secret []byte) string {
	return TokenPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(secret)
}

// VerifyToken authenticates a bearer token at nowMs (Unix milliseconds): the key it names, if it is
// recorded, its secret matches (constant time) and it has not expired. Errors wrap ErrBadToken
// (malformed, or the wrong secret), ErrUnknownKey or ErrKeyExpired; none holds the secret.
func (a *AuthState) VerifyToken(token string, nowMs int64) (APIKey, error) {
	id, secret, err := ParseToken(token)
	if err != nil {
		return APIKey{}, err
	}
	k, ok := a.keys[id]
	if !ok {
		return APIKey{}, fmt.Errorf("%w: key %s", ErrUnknownKey, id)
	}
	sum := sha256.Sum256(secret)
	if subtle.ConstantTimeCompare(sum[:], k.Hash[:]) != 1 {
		return APIKey{}, fmt.Errorf("%w: key %s: the secret does not match", ErrBadToken, id)
	}
	if k.Expired(nowMs) {
		return APIKey{}, fmt.Errorf("%w: key %s expired at %s", ErrKeyExpired, id, time.UnixMilli(k.ExpiresMs).UTC().Format(time.RFC3339))
	}
	return k, nil
}

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

func (a *AuthState) createKeyVerdict(m *metadv1.CreateKey) store.Result {
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

func (a *AuthState) revokeKeyVerdict(m *metadv1.RevokeKey) store.Result {
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
func (a *AuthState) grantVerdict(m *metadv1.GrantRole) (Role, bool, store.Result) {
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

func (a *AuthState) revokeRoleVerdict(m *metadv1.RevokeRole) (Role, store.Result) {
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

// CheckAuth is Check for the auth commands: refused is true when applying c to state a would be
// refused, and r is that refusal. It runs the verdicts apply runs and changes nothing; any other
// command is never refused here.
func CheckAuth(a *AuthState, c *metadv1.Command) (r store.Result, refused bool) {
	switch op := c.GetOp().(type) {
	case *metadv1.Command_CreateKey:
		r = a.createKeyVerdict(op.CreateKey)
	case *metadv1.Command_RevokeKey:
		r = a.revokeKeyVerdict(op.RevokeKey)
	case *metadv1.Command_GrantRole:
		_, _, r = a.grantVerdict(op.GrantRole)
	case *metadv1.Command_RevokeRole:
		_, r = a.revokeRoleVerdict(op.RevokeRole)
	}
	return r, r.Reason != store.OK
}

// next returns a copy of a at the next revision, for apply to change before it swaps it in.
func (a *AuthState) next() *AuthState {
	n := &AuthState{revision: a.revision + 1, keys: maps.Clone(a.keys), roles: maps.Clone(a.roles)}
	if n.keys == nil {
		n.keys = map[string]APIKey{}
	}
	if n.roles == nil {
		n.roles = map[string][]Role{}
	}
	return n
}

// Auth returns the current auth state; never nil.
func (f *FSM) Auth() *AuthState { return f.auth.Load() }

func (f *FSM) applyCreateKey(_ *store.Store, _ env, c *metadv1.Command) store.Result {
	m := c.GetCreateKey()
	a := f.auth.Load()
	if r := a.createKeyVerdict(m); r.Reason != store.OK {
		return r
	}
	n := a.next()
	k := APIKey{ID: m.GetId(), Principal: m.GetPrincipal(), CreatedMs: m.GetCreatedMs(), ExpiresMs: m.GetExpiresMs()}
	copy(k.Hash[:], m.GetSha256())
	n.keys[k.ID] = k
	f.auth.Store(n)
	return store.Result{}
}

func (f *FSM) applyRevokeKey(_ *store.Store, _ env, c *metadv1.Command) store.Result {
	m := c.GetRevokeKey()
	a := f.auth.Load()
	if r := a.revokeKeyVerdict(m); r.Reason != store.OK {
		return r
	}
	n := a.next()
	delete(n.keys, m.GetId())
	f.auth.Store(n)
	return store.Result{}
}

func (f *FSM) applyGrantRole(_ *store.Store, _ env, c *metadv1.Command) store.Result {
	m := c.GetGrantRole()
	a := f.auth.Load()
	r, exists, res := a.grantVerdict(m)
	if res.Reason != store.OK || exists {
		return res
	}
	n := a.next()
	rs := append(slices.Clone(n.roles[m.GetPrincipal()]), r)
	slices.SortFunc(rs, compareRoles)
	n.roles[m.GetPrincipal()] = rs
	f.auth.Store(n)
	return store.Result{}
}

func (f *FSM) applyRevokeRole(_ *store.Store, _ env, c *metadv1.Command) store.Result {
	m := c.GetRevokeRole()
	a := f.auth.Load()
	r, res := a.revokeRoleVerdict(m)
	if res.Reason != store.OK {
		return res
	}
	n := a.next()
	rs := slices.DeleteFunc(slices.Clone(n.roles[m.GetPrincipal()]), func(x Role) bool { return x == r })
	if len(rs) == 0 {
		delete(n.roles, m.GetPrincipal())
	} else {
		n.roles[m.GetPrincipal()] = rs
	}
	f.auth.Store(n)
	return store.Result{}
}

// staleAuth is the refusal of a command authorized against an auth revision older than the
// state's (see Command.auth_revision); ok is false when the command may run.
func staleAuth(a *AuthState, c *metadv1.Command) (store.Result, bool) {
	if rev := c.GetAuthRevision(); rev != 0 && rev < a.revision {
		return refuse(store.AuthRevisionStale, "authorized at auth revision %d; the auth state has since changed (revision %d)",
			rev, a.revision), true
	}
	return store.Result{}, false
}

// Records returns the state as snapshot records: keys by id, bindings by principal (roles in
// their order), and the revision.
func (a *AuthState) Records() *snapshot.Auth {
	out := &snapshot.Auth{Revision: a.revision}
	for _, k := range a.Keys() {
		out.Keys = append(out.Keys, &metadv1.KeyRecord{Id: k.ID, Principal: k.Principal, Sha256: k.Hash[:],
			CreatedMs: k.CreatedMs, ExpiresMs: k.ExpiresMs})
	}
	for _, p := range a.Principals() {
		rr := &metadv1.RoleRecord{Principal: p}
		for _, r := range a.roles[p] {
			rr.Roles = append(rr.Roles, r.String())
		}
		out.Roles = append(out.Roles, rr)
	}
	return out
}

// authBuilder reads an auth state from snapshot records, checking what the state's soundness needs:
// valid and unique ids in ascending order, valid principals, 32-byte hashes, an expiry after the
// creation, roles in their canonical form, sorted and distinct, principals in ascending order. It
// does not check the limits (MaxKeys, MaxKeyTTL...): a state recorded before a limit restores.
type authBuilder struct {
	a          *AuthState
	lastKey    string
	lastPrinc  string
	rolesFound bool
}

func newAuthBuilder(revision uint64) *authBuilder {
	return &authBuilder{a: &AuthState{revision: revision, keys: map[string]APIKey{}, roles: map[string][]Role{}}}
}

func (b *authBuilder) addKey(r *metadv1.KeyRecord) error {
	if err := ValidateKeyID(r.GetId()); err != nil {
		return fmt.Errorf("key record: id: %v", err)
	}
	if b.rolesFound || len(b.a.keys) > 0 && r.GetId() <= b.lastKey {
		return fmt.Errorf("key record %s: not in ascending order, before the role records", r.GetId())
	}
	if err := ValidatePrincipal(r.GetPrincipal()); err != nil {
		return fmt.Errorf("key record %s: %v", r.GetId(), err)
	}
	if len(r.GetSha256()) != sha256.Size || r.GetCreatedMs() < 0 || r.GetExpiresMs() != 0 && r.GetExpiresMs() <= r.GetCreatedMs() {
		return fmt.Errorf("key record %s: hash of %d bytes, created %d, expires %d", r.GetId(), len(r.GetSha256()),
			r.GetCreatedMs(), r.GetExpiresMs())
	}
	k := APIKey{ID: r.GetId(), Principal: r.GetPrincipal(), CreatedMs: r.GetCreatedMs(), ExpiresMs: r.GetExpiresMs()}
	copy(k.Hash[:], r.GetSha256())
	b.a.keys[k.ID] = k
	b.lastKey = k.ID
	return nil
}

func (b *authBuilder) addRoles(r *metadv1.RoleRecord) error {
	p := r.GetPrincipal()
	if err := ValidatePrincipal(p); err != nil {
		return fmt.Errorf("role record: %v", err)
	}
	if b.rolesFound && p <= b.lastPrinc {
		return fmt.Errorf("role record %s: principals not in ascending order", p)
	}
	if len(r.GetRoles()) == 0 {
		return fmt.Errorf("role record %s: no role", p)
	}
	rs := make([]Role, 0, len(r.GetRoles()))
	for i, s := range r.GetRoles() {
		role, err := ParseRole(s)
		if err != nil || role.String() != s || i > 0 && s <= r.GetRoles()[i-1] {
			return fmt.Errorf("role record %s: role %q is not canonical, sorted and distinct (%v)", p, s, err)
		}
		rs = append(rs, role)
	}
	b.a.roles[p] = rs
	b.lastPrinc, b.rolesFound = p, true
	return nil
}
