package auth

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// Rate limits: how much one principal may ask of each member, set per principal, per role (every
// principal holding it) or for every principal (AnyRole), as replicated auth state (SetLimit).
// The state holds the configuration only; each member enforces it with buckets of its own (package
// service). A limit of 0 is not set: the principal's own record decides a limit it sets, else the
// highest that the records of its roles set, else the AnyRole record's, else there is none
// (LimitOf). Limits do not change who may do what, so SetLimit does not bump the auth revision.

// AnyRole is the role of the record that holds for every principal (the last resort of LimitOf).
const AnyRole = "*"

// Bounds of the limits. SetLimit past one is INVALID_PARAMS; a record past MaxLimits is
// AUTH_LIMIT_EXCEEDED.
const (
	MaxLimits      = 65536
	MaxCallsPerSec = 1_000_000
	MaxKeysPerSec  = 1_000_000_000
	MaxStreams     = 1_000_000
)

// Limit is a plain value: the rate limits of one target, or those that apply to one principal.
// 0 is not set (no limit).
type Limit struct {
	CallsPerSec uint32 // calls per second on each member
	KeysPerSec  uint32 // keys per second on each member
	Streams     uint32 // watch streams open at once on each member
}

// IsZero reports whether l sets no limit.
func (l Limit) IsZero() bool { return l == Limit{} }

// LimitTarget is a plain value: what a limit record applies to. Exactly one of Principal and Role
// is set; Role is a role's canonical form (Role.String) or AnyRole.
type LimitTarget struct {
	Principal string
	Role      string
}

func (t LimitTarget) String() string {
	if t.Principal != "" {
		return "principal " + t.Principal
	}
	if t.Role == AnyRole {
		return "every principal (role *)"
	}
	return "role " + t.Role
}

// compareTargets orders targets as the records are listed: principals by name, then roles.
func compareTargets(a, b LimitTarget) int {
	if (a.Principal != "") != (b.Principal != "") {
		if a.Principal != "" {
			return -1
		}
		return 1
	}
	return cmp.Or(strings.Compare(a.Principal, b.Principal), strings.Compare(a.Role, b.Role))
}

// LimitEntry is a plain value: one limit record.
type LimitEntry struct {
	Target LimitTarget
	Limit  Limit
}

// Limits returns every limit record, principals' by name and then roles' by role.
func (a *State) Limits() []LimitEntry {
	out := make([]LimitEntry, 0, len(a.limits))
	for t, l := range a.limits {
		out = append(out, LimitEntry{Target: t, Limit: l})
	}
	slices.SortFunc(out, func(x, y LimitEntry) int { return compareTargets(x.Target, y.Target) })
	return out
}

// HasLimits reports whether any limit is set (when none is, nothing needs resolving).
func (a *State) HasLimits() bool { return len(a.limits) > 0 }

// LimitOf returns the limits that apply to principal: each one the principal's own record sets,
// else the highest the records of its roles set, else the AnyRole record's, else 0.
func (a *State) LimitOf(principal string) Limit {
	if len(a.limits) == 0 {
		return Limit{}
	}
	own := a.limits[LimitTarget{Principal: principal}]
	var roles Limit
	for _, r := range a.Roles(principal) {
		l := a.limits[LimitTarget{Role: r.String()}]
		roles.CallsPerSec = max(roles.CallsPerSec, l.CallsPerSec)
		roles.KeysPerSec = max(roles.KeysPerSec, l.KeysPerSec)
		roles.Streams = max(roles.Streams, l.Streams)
	}
	every := a.limits[LimitTarget{Role: AnyRole}]
	pick := func(vs ...uint32) uint32 {
		for _, v := range vs {
			if v != 0 {
				return v
			}
		}
		return 0
	}
	return Limit{
		CallsPerSec: pick(own.CallsPerSec, roles.CallsPerSec, every.CallsPerSec),
		KeysPerSec:  pick(own.KeysPerSec, roles.KeysPerSec, every.KeysPerSec),
		Streams:     pick(own.Streams, roles.Streams, every.Streams),
	}
}

// ValidateLimit checks a limit record's target and limits (not MaxLimits, which depends on the
// state) and returns the target with its role in canonical form. The error names the field.
func ValidateLimit(principal, role string, l Limit) (LimitTarget, error) {
	var t LimitTarget
	switch {
	case (principal == "") == (role == ""):
		return t, fmt.Errorf("principal, role: set exactly one (role %q: every principal)", AnyRole)
	case principal != "":
		if err := ValidatePrincipal(principal); err != nil {
			return t, err
		}
		t.Principal = principal
	case role == AnyRole:
		t.Role = AnyRole
	default:
		r, err := ParseRole(role)
		if err != nil {
			return t, fmt.Errorf("role: %v (or %q: every principal)", err, AnyRole)
		}
		t.Role = r.String()
	}
	switch {
	case l.CallsPerSec > MaxCallsPerSec:
		return t, fmt.Errorf("calls_per_sec: %d over %d", l.CallsPerSec, MaxCallsPerSec)
	case l.KeysPerSec > MaxKeysPerSec:
		return t, fmt.Errorf("keys_per_sec: %d over %d", l.KeysPerSec, MaxKeysPerSec)
	case l.Streams > MaxStreams:
		return t, fmt.Errorf("streams: %d over %d", l.Streams, MaxStreams)
	}
	return t, nil
}

func limitOf(m interface {
	GetCallsPerSec() uint32
	GetKeysPerSec() uint32
	GetStreams() uint32
}) Limit {
	return Limit{CallsPerSec: m.GetCallsPerSec(), KeysPerSec: m.GetKeysPerSec(), Streams: m.GetStreams()}
}

// setLimitVerdict is what apply and Check decide for SetLimit in state a: its target, and OK or
// the refusal. The role must already be in its canonical form (the service sends it so), so that
// a record is named one way only.
func (a *State) setLimitVerdict(m *metadv1.SetLimit) (LimitTarget, store.Result) {
	l := limitOf(m)
	t, err := ValidateLimit(m.GetPrincipal(), m.GetRole(), l)
	if err != nil {
		return t, refuse(store.InvalidParams, "set_limit.%v", err)
	}
	if t.Role != m.GetRole() {
		return t, refuse(store.InvalidParams, "set_limit.role: %q is not in its canonical form %q", m.GetRole(), t.Role)
	}
	if _, has := a.limits[t]; !has && !l.IsZero() && len(a.limits) >= MaxLimits {
		return t, refuse(store.AuthLimitExceeded, "the cluster holds %d limit records, the most it keeps; remove some first", MaxLimits)
	}
	return t, store.Result{}
}

// setLimit applies SetLimit: the target's record becomes m's limits, or goes when they are all 0.
// The revision stays: limits change no one's authorization.
func (a *State) setLimit(m *metadv1.SetLimit) (*State, store.Result) {
	t, r := a.setLimitVerdict(m)
	if r.Reason != store.OK {
		return a, r
	}
	l := limitOf(m)
	if old, has := a.limits[t]; has && old == l || !has && l.IsZero() {
		return a, store.Result{} // nothing changes
	}
	n := *a
	n.limits = maps.Clone(a.limits)
	if n.limits == nil {
		n.limits = map[LimitTarget]Limit{}
	}
	if l.IsZero() {
		delete(n.limits, t)
	} else {
		n.limits[t] = l
	}
	return &n, store.Result{}
}

// limitRecords is the state's limit records, in Limits's order.
func (a *State) limitRecords() []*metadv1.LimitRecord {
	var out []*metadv1.LimitRecord
	for _, e := range a.Limits() {
		out = append(out, &metadv1.LimitRecord{Principal: e.Target.Principal, Role: e.Target.Role,
			CallsPerSec: e.Limit.CallsPerSec, KeysPerSec: e.Limit.KeysPerSec, Streams: e.Limit.Streams})
	}
	return out
}

// AddLimit reads a limit record (after every key and role record, in Limits's order): a valid
// target in canonical form, limits within their bounds, at least one set.
func (b *Builder) AddLimit(r *metadv1.LimitRecord) error {
	l := limitOf(r)
	t, err := ValidateLimit(r.GetPrincipal(), r.GetRole(), l)
	if err != nil {
		return fmt.Errorf("limit record: %v", err)
	}
	switch {
	case t.Role != r.GetRole():
		return fmt.Errorf("limit record of role %q: not in its canonical form", r.GetRole())
	case l.IsZero():
		return fmt.Errorf("limit record of %s: sets no limit", t)
	case b.limitsFound && compareTargets(b.lastLimit, t) >= 0:
		return fmt.Errorf("limit record of %s: not in order (principals by name, then roles)", t)
	}
	if b.a.limits == nil {
		b.a.limits = map[LimitTarget]Limit{}
	}
	b.a.limits[t] = l
	b.lastLimit, b.limitsFound = t, true
	return nil
}
