package auth

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

	"metad/store"
	"metad/store/alloc"
)

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
	ErrBadToken = errors.New("auth: bad API token")
	// ErrUnknownKey: the token names a key id that is not recorded (never created, or revoked).
	ErrUnknownKey = errors.New("auth: unknown API key")
	// ErrKeyExpired: the token's key has expired.
	ErrKeyExpired = errors.New("auth: API key expired")
	// ErrBadRole: a role that ParseRole does not accept.
	ErrBadRole = errors.New("auth: bad role")
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

// State is the replicated auth state at one revision. It is immutable: apply builds a new one
// for every change (Apply) and the state machine swaps it in, so a reader holds one state for its
// whole read, from any goroutine.
type State struct {
	revision uint64
	keys     map[string]APIKey     // by id
	roles    map[string][]Role     // by principal; sorted (compareRoles), distinct, never empty
	limits   map[LimitTarget]Limit // never a zero Limit; nil when none (limits.go)
}

// Empty is the state of a fresh cluster: no key, no binding, revision 0.
var Empty = &State{keys: map[string]APIKey{}, roles: map[string][]Role{}}

// Revision is the number of auth commands that changed the state; 0 in a fresh cluster.
func (a *State) Revision() uint64 { return a.revision }

// Roles returns principal's roles, sorted (a copy); nil when it has none. RootPrincipal always has
// RoleAdmin.
func (a *State) Roles(principal string) []Role {
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
func (a *State) Bindings() map[string][]Role {
	out := make(map[string][]Role, len(a.roles))
	for p, rs := range a.roles {
		out[p] = slices.Clone(rs)
	}
	return out
}

// Principals returns the principals with stored role bindings, sorted.
func (a *State) Principals() []string { return slices.Sorted(maps.Keys(a.roles)) }

// Key returns the key with this id.
func (a *State) Key(id string) (APIKey, bool) {
	k, ok := a.keys[id]
	return k, ok
}

// Keys returns every key, sorted by id.
func (a *State) Keys() []APIKey {
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
func (a *State) VerifyToken(token string, nowMs int64) (APIKey, error) {
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

// The role check: what a principal's roles grant, in the terms package service's method rules
// use (which role each method needs, and the tenant or client id a request names).

// IsAdmin reports whether principal holds the admin role (RootPrincipal always does).
func (a *State) IsAdmin(principal string) bool {
	return principal == RootPrincipal || slices.ContainsFunc(a.roles[principal], func(r Role) bool { return r.Kind == RoleAdmin })
}

// Holds reports whether principal holds a role of kind (with any Arg), or is admin.
func (a *State) Holds(principal string, kind RoleKind) bool {
	return a.IsAdmin(principal) || slices.ContainsFunc(a.roles[principal], func(r Role) bool { return r.Kind == kind })
}

// Args returns the Args of principal's roles of kind (its tenants, or its workers' client ids), in
// role order; nil when it has none.
func (a *State) Args(principal string, kind RoleKind) []string {
	var out []string
	for _, r := range a.roles[principal] {
		if r.Kind == kind {
			out = append(out, r.Arg)
		}
	}
	return out
}
