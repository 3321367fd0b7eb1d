package auth

import (
	"crypto/sha256"
	"fmt"

	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
)

// Records returns the state as snapshot records: keys by id, bindings by principal (roles in
// their order), limits (principals' by name, then roles'), and the revision.
func (a *State) Records() *snapshot.Auth {
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
	out.Limits = a.limitRecords()
	return out
}

// Builder reads an auth state (NewBuilder, then AddKey for each key record, AddRoles for each
// role record and AddLimit for each limit record, in the file's order, then State) from snapshot records, checking what the state's soundness needs:
// valid and unique ids in ascending order, valid principals, 32-byte hashes, an expiry after the
// creation, roles in their canonical form, sorted and distinct, principals in ascending order. It
// does not check the limits (MaxKeys, MaxKeyTTL...): a state recorded before a limit restores.
type Builder struct {
	a           *State
	lastKey     string
	lastPrinc   string
	rolesFound  bool
	lastLimit   LimitTarget
	limitsFound bool
}

func NewBuilder(revision uint64) *Builder {
	return &Builder{a: &State{revision: revision, keys: map[string]APIKey{}, roles: map[string][]Role{}}}
}

func (b *Builder) AddKey(r *metadv1.KeyRecord) error {
	if err := ValidateKeyID(r.GetId()); err != nil {
		return fmt.Errorf("key record: id: %v", err)
	}
	if b.rolesFound || b.limitsFound || len(b.a.keys) > 0 && r.GetId() <= b.lastKey {
		return fmt.Errorf("key record %s: not in ascending order, before the role and limit records", r.GetId())
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

func (b *Builder) AddRoles(r *metadv1.RoleRecord) error {
	p := r.GetPrincipal()
	if err := ValidatePrincipal(p); err != nil {
		return fmt.Errorf("role record: %v", err)
	}
	if b.limitsFound || b.rolesFound && p <= b.lastPrinc {
		return fmt.Errorf("role record %s: principals not in ascending order, before the limit records", p)
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

// State returns the state read so far.
func (b *Builder) State() *State { return b.a }
