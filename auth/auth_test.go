package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

func createKeyCmd(id, principal string, secret []byte, created, expires int64) *metadv1.Command {
	sum := sha256.Sum256(secret)
	return &metadv1.Command{Op: &metadv1.Command_CreateKey{CreateKey: &metadv1.CreateKey{
		Id: id, Principal: principal, Sha256: sum[:], CreatedMs: created, ExpiresMs: expires}}}
}

func revokeKeyCmd(id string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_RevokeKey{RevokeKey: &metadv1.RevokeKey{Id: id}}}
}

func grantCmd(principal, role string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_GrantRole{GrantRole: &metadv1.GrantRole{Principal: principal, Role: role}}}
}

func secretOf(b byte) []byte { return []byte(strings.Repeat(string(rune(b)), SecretBytes)) }

const workerID = "c1000000-0000-0000-0000-000000000001"

// applyOne applies c to *a, checking that Check refuses exactly what Apply refuses, with the same
// reason, and that a refusal changes nothing.
func applyOne(t *testing.T, a **State, c *metadv1.Command) store.Result {
	t.Helper()
	before := *a
	cr, refused := Check(before, c)
	n, r := Apply(before, c)
	if refused != (r.Reason != store.OK) || refused && cr.Reason != r.Reason {
		t.Fatalf("check %v (%s), apply %s: %s", refused, cr.Reason, r.Reason, r.Message)
	}
	if r.Reason != store.OK && n != before {
		t.Fatalf("a refused %T changed the auth state", c.GetOp())
	}
	*a = n
	return r
}

func TestParseRole(t *testing.T) {
	for s, want := range map[string]Role{
		"admin":              Role{Kind: RoleAdmin},
		"reader":             Role{Kind: RoleReader},
		"tenant:default":     Role{RoleTenant, "default"},
		"worker:" + workerID: Role{RoleWorker, workerID},
		"worker:C1000000000000000000000000000001": Role{RoleWorker, workerID},
	} {
		got, err := ParseRole(s)
		if err != nil || got != want {
			t.Errorf("ParseRole(%q) = %v, %v; want %v", s, got, err, want)
		}
		if again, err := ParseRole(got.String()); err != nil || again != got {
			t.Errorf("ParseRole(%q.String()) = %v, %v", s, again, err)
		}
	}
	for _, s := range []string{"", "Admin", "admin:", "reader:x", "tenant", "tenant:", "worker:", "worker:xyz", "root", "tenant:a\x01"} {
		if _, err := ParseRole(s); !errors.Is(err, ErrBadRole) {
			t.Errorf("ParseRole(%q): %v, want ErrBadRole", s, err)
		}
	}
}

func TestVerifyToken(t *testing.T) {
	st := Empty
	secret := secretOf('s')
	const id, expiring = "00000000000000aa", "00000000000000bb"
	applyOne(t, &st, createKeyCmd(id, "alice", secret, 1000, 0))
	applyOne(t, &st, createKeyCmd(expiring, "bob", secret, 1000, 5000))
	a := st
	good := FormatToken(id, secret)
	if len(good) != TokenLen {
		t.Fatalf("token %q: %d characters, want %d", good, len(good), TokenLen)
	}
	if k, err := a.VerifyToken(good, 1<<50); err != nil || k.ID != id || k.Principal != "alice" {
		t.Fatalf("good token: %+v, %v", k, err)
	}
	if _, err := a.VerifyToken(FormatToken(expiring, secret), 4999); err != nil {
		t.Fatalf("token before expiry: %v", err)
	}
	wrong := slices.Clone(secret)
	wrong[0] ^= 1
	cases := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", ErrBadToken},
		{"no prefix", "xyz_" + good[4:], ErrBadToken},
		{"short", good[:len(good)-1], ErrBadToken},
		{"long", good + "A", ErrBadToken},
		{"upper-case id", TokenPrefix + "00000000000000AA" + good[len(TokenPrefix)+KeyIDLen:], ErrBadToken},
		{"no separator", good[:len(TokenPrefix)+KeyIDLen] + "-" + good[len(TokenPrefix)+KeyIDLen+1:], ErrBadToken},
		{"secret not base64url", good[:len(good)-1] + "+", ErrBadToken},
		{"unknown id", FormatToken("00000000000000cc", secret), ErrUnknownKey},
		{"wrong secret", FormatToken(id, wrong), ErrBadToken},
		{"expired", FormatToken(expiring, secret), ErrKeyExpired},
		{"expired, wrong secret", FormatToken(expiring, wrong), ErrBadToken},
	}
	for _, tc := range cases {
		_, err := a.VerifyToken(tc.token, 5000)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), good[len(good)-SecretLen:]) {
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		}
	}
	applyOne(t, &st, revokeKeyCmd(id))
	if _, err := st.VerifyToken(good, 1); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("revoked key: %v, want ErrUnknownKey", err)
	}
	if _, err := a.VerifyToken(good, 1); err != nil {
		t.Errorf("the state read before the revoke changed: %v", err)
	}
}

func TestAuthLimits(t *testing.T) {
	st := Empty
	for i := range MaxRolesPerPrincipal {
		if r := applyOne(t, &st, grantCmd("many", fmt.Sprintf("tenant:t%d", i))); r.Reason != store.OK {
			t.Fatalf("grant %d: %s %s", i, r.Reason, r.Message)
		}
	}
	if r := applyOne(t, &st, grantCmd("many", "reader")); r.Reason != store.AuthLimitExceeded {
		t.Fatalf("grant past the roles of one principal: %s %s", r.Reason, r.Message)
	}
	if r := applyOne(t, &st, grantCmd("many", "tenant:t0")); r.Reason != store.OK {
		t.Fatalf("a grant that exists at the limit: %s %s", r.Reason, r.Message)
	}
	// The state-wide limits, reached by filling the maps directly (65,536 commands would only
	// slow the test).
	full := st.next()
	for i := len(full.roles); i < MaxPrincipals; i++ {
		full.roles[fmt.Sprintf("p%d", i)] = []Role{{Kind: RoleReader}}
	}
	for i := range MaxKeys {
		full.keys[fmt.Sprintf("%016x", i)] = APIKey{ID: fmt.Sprintf("%016x", i), Principal: "p"}
	}
	st = full
	if r := applyOne(t, &st, grantCmd("newcomer", "reader")); r.Reason != store.AuthLimitExceeded {
		t.Fatalf("grant to a new principal past the limit: %s %s", r.Reason, r.Message)
	}
	if r := applyOne(t, &st, grantCmd("many", "tenant:t0")); r.Reason != store.OK {
		t.Fatalf("a grant that exists, principals full: %s %s", r.Reason, r.Message)
	}
	if r := applyOne(t, &st, createKeyCmd("ffffffffffffffff", "p", secretOf('x'), 1, 0)); r.Reason != store.AuthLimitExceeded {
		t.Fatalf("create past the keys limit: %s %s", r.Reason, r.Message)
	}
	applyOne(t, &st, revokeKeyCmd("0000000000000000"))
	if r := applyOne(t, &st, createKeyCmd("ffffffffffffffff", "p", secretOf('x'), 1, 0)); r.Reason != store.OK {
		t.Fatalf("create after a revoke made room: %s %s", r.Reason, r.Message)
	}
}

// TestRoleCheck: what a principal's roles grant (IsAdmin, Holds, Args), root's implicit admin
// role included.
func TestRoleCheck(t *testing.T) {
	st := Empty
	applyOne(t, &st, grantCmd("ops", "admin"))
	applyOne(t, &st, grantCmd("app", "tenant:a"))
	applyOne(t, &st, grantCmd("app", "tenant:b"))
	applyOne(t, &st, grantCmd("app", "worker:"+workerID))
	applyOne(t, &st, grantCmd("viewer", "reader"))
	for _, tc := range []struct {
		p              string
		admin, reader  bool
		tenants, works []string
	}{
		{RootPrincipal, true, true, nil, nil},
		{"ops", true, true, nil, nil},
		{"app", false, false, []string{"a", "b"}, []string{workerID}},
		{"viewer", false, true, nil, nil},
		{"nobody", false, false, nil, nil},
	} {
		if got := st.IsAdmin(tc.p); got != tc.admin {
			t.Errorf("IsAdmin(%s) = %v", tc.p, got)
		}
		if got := st.Holds(tc.p, RoleReader); got != tc.reader {
			t.Errorf("Holds(%s, reader) = %v", tc.p, got)
		}
		if got := st.Args(tc.p, RoleTenant); !slices.Equal(got, tc.tenants) {
			t.Errorf("Args(%s, tenant) = %v", tc.p, got)
		}
		if got := st.Args(tc.p, RoleWorker); !slices.Equal(got, tc.works) {
			t.Errorf("Args(%s, worker) = %v", tc.p, got)
		}
	}
}
