package auth

import (
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

func setLimitCmd(principal, role string, l Limit) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_SetLimit{SetLimit: &metadv1.SetLimit{Principal: principal, Role: role,
		CallsPerSec: l.CallsPerSec, KeysPerSec: l.KeysPerSec, Streams: l.Streams}}}
}

// TestLimitOf: a principal's limits are, each apart, its own record's, else the highest of its
// roles' records, else the "*" record's, else none; a record with every limit 0 goes; SetLimit
// leaves the auth revision as it was.
func TestLimitOf(t *testing.T) {
	a := Empty
	for _, c := range []*metadv1.Command{grantCmd("alice", "tenant:a"), grantCmd("alice", "tenant:b"), grantCmd("bob", "tenant:a")} {
		if r := applyOne(t, &a, c); r.Reason != store.OK {
			t.Fatal(r.Message)
		}
	}
	rev := a.Revision()
	if got := a.LimitOf("alice"); !got.IsZero() {
		t.Fatalf("no records: alice's limits %+v", got)
	}
	for _, c := range []*metadv1.Command{
		setLimitCmd("", AnyRole, Limit{CallsPerSec: 10, KeysPerSec: 100, Streams: 1}),
		setLimitCmd("", "tenant:a", Limit{CallsPerSec: 50}),
		setLimitCmd("", "tenant:b", Limit{CallsPerSec: 70, KeysPerSec: 700}),
		setLimitCmd("alice", "", Limit{Streams: 5}),
	} {
		if r := applyOne(t, &a, c); r.Reason != store.OK {
			t.Fatal(r.Message)
		}
	}
	if a.Revision() != rev {
		t.Fatalf("SetLimit moved the auth revision from %d to %d", rev, a.Revision())
	}
	for p, want := range map[string]Limit{
		"alice": {CallsPerSec: 70, KeysPerSec: 700, Streams: 5}, // the highest of her roles; her own streams
		"bob":   {CallsPerSec: 50, KeysPerSec: 100, Streams: 1}, // tenant:a, then "*"
		"carol": {CallsPerSec: 10, KeysPerSec: 100, Streams: 1}, // no role: "*"
	} {
		if got := a.LimitOf(p); got != want {
			t.Errorf("%s's limits %+v, want %+v", p, got, want)
		}
	}
	if r := applyOne(t, &a, setLimitCmd("", "tenant:b", Limit{})); r.Reason != store.OK {
		t.Fatal(r.Message)
	}
	if got := a.LimitOf("alice"); got != (Limit{CallsPerSec: 50, KeysPerSec: 100, Streams: 5}) {
		t.Fatalf("after tenant:b's record went, alice's limits %+v", got)
	}
	if got := len(a.Limits()); got != 3 {
		t.Fatalf("%d records, want 3", got)
	}
	same := a
	if r := applyOne(t, &a, setLimitCmd("", "tenant:b", Limit{})); r.Reason != store.OK || a != same {
		t.Fatalf("removing a record that is not there: %s, state changed %v", r.Reason, a != same)
	}
}

// TestSetLimitRefusals: a target that is not exactly one principal or one canonical role, or a
// limit past its bound, is INVALID_PARAMS, checked as apply checks it, with nothing changed.
func TestSetLimitRefusals(t *testing.T) {
	a := Empty
	for name, c := range map[string]*metadv1.Command{
		"neither":       setLimitCmd("", "", Limit{CallsPerSec: 1}),
		"both":          setLimitCmd("alice", "admin", Limit{CallsPerSec: 1}),
		"bad principal": setLimitCmd("al ice", "", Limit{CallsPerSec: 1}),
		"bad role":      setLimitCmd("", "tenant:", Limit{CallsPerSec: 1}),
		"no canonical":  setLimitCmd("", "worker:C1000000000000000000000000000001", Limit{CallsPerSec: 1}),
		"calls":         setLimitCmd("alice", "", Limit{CallsPerSec: MaxCallsPerSec + 1}),
		"keys":          setLimitCmd("alice", "", Limit{KeysPerSec: MaxKeysPerSec + 1}),
		"streams":       setLimitCmd("alice", "", Limit{Streams: MaxStreams + 1}),
	} {
		if r := applyOne(t, &a, c); r.Reason != store.InvalidParams {
			t.Errorf("%s: %s %s, want INVALID_PARAMS", name, r.Reason, r.Message)
		}
	}
}

// TestLimitRecordsRoundTrip: the limit records read back as the same state, and a builder
// refuses records out of order, not canonical or setting nothing.
func TestLimitRecordsRoundTrip(t *testing.T) {
	a := Empty
	for _, c := range []*metadv1.Command{
		grantCmd("zed", "admin"),
		setLimitCmd("zed", "", Limit{CallsPerSec: 3}),
		setLimitCmd("amy", "", Limit{KeysPerSec: 9}),
		setLimitCmd("", AnyRole, Limit{Streams: 2}),
		setLimitCmd("", "admin", Limit{CallsPerSec: 1000}),
	} {
		if r := applyOne(t, &a, c); r.Reason != store.OK {
			t.Fatal(r.Message)
		}
	}
	recs := a.Records()
	if len(recs.Limits) != 4 || recs.Limits[0].GetPrincipal() != "amy" || recs.Limits[2].GetRole() != AnyRole {
		t.Fatalf("limit records %v: want principals by name, then roles", recs.Limits)
	}
	b := NewBuilder(recs.Revision)
	for _, r := range recs.Roles {
		if err := b.AddRoles(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range recs.Limits {
		if err := b.AddLimit(r); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.State(); got.LimitOf("zed") != a.LimitOf("zed") || len(got.Limits()) != 4 {
		t.Fatalf("read back: %+v", got.Limits())
	}
	for name, recs := range map[string][]*metadv1.LimitRecord{
		"out of order": {{Role: "admin", CallsPerSec: 1}, {Principal: "amy", CallsPerSec: 1}},
		"repeated":     {{Principal: "amy", CallsPerSec: 1}, {Principal: "amy", CallsPerSec: 2}},
		"no limit":     {{Principal: "amy"}},
		"not a role":   {{Role: "boss", CallsPerSec: 1}},
	} {
		b := NewBuilder(0)
		var err error
		for _, r := range recs {
			if err = b.AddLimit(r); err != nil {
				break
			}
		}
		if err == nil {
			t.Errorf("%s: the builder took %v", name, recs)
		}
	}
	if err := b.AddRoles(&metadv1.RoleRecord{Principal: "zzz", Roles: []string{"admin"}}); err == nil {
		t.Error("a role record after the limit records was taken")
	}
}
