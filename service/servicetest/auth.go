package servicetest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
)

// NewKey records a new API key of principal in b's state (expiresMs 0: never) and returns its
// token; keyCmd is the command, to apply the same key to another backend's state.
func NewKey(t testing.TB, b *Backend, principal string, expiresMs int64) (token string, keyCmd *metadv1.Command) {
	t.Helper()
	var idb [8]byte
	secret := make([]byte, auth.SecretBytes)
	_, _ = rand.Read(idb[:])
	_, _ = rand.Read(secret)
	id := hex.EncodeToString(idb[:])
	sum := sha256.Sum256(secret)
	keyCmd = &metadv1.Command{Op: &metadv1.Command_CreateKey{CreateKey: &metadv1.CreateKey{
		Id: id, Principal: principal, Sha256: sum[:], CreatedMs: b.Now().UnixMilli(), ExpiresMs: expiresMs}}}
	b.MustApply(t, keyCmd)
	return auth.FormatToken(id, secret), keyCmd
}

// KeyID is the key id of token (empty if it has not the shape of one).
func KeyID(token string) string {
	id, _, _ := auth.ParseToken(token)
	return id
}

// Grant is the command that binds role to principal.
func Grant(principal, role string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_GrantRole{GrantRole: &metadv1.GrantRole{Principal: principal, Role: role}}}
}

// RevokeRole is the command that unbinds role from principal.
func RevokeRole(principal, role string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_RevokeRole{RevokeRole: &metadv1.RevokeRole{Principal: principal, Role: role}}}
}

// RevokeKey is the command that revokes the key of token.
func RevokeKey(token string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_RevokeKey{RevokeKey: &metadv1.RevokeKey{Id: KeyID(token)}}}
}

// RegisterTenant is the command that registers tenant name (no quota).
func RegisterTenant(name string) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: name}}}
}

// AuthChangeBeforeEachApply makes an auth command (a grant of role reader to a principal of its
// own) commit before each of the next n proposals applies: every one of them was checked against
// an auth revision that is gone by its commit.
func (b *Backend) AuthChangeBeforeEachApply(t testing.TB, n int) {
	var fn func()
	i := 0
	fn = func() {
		if i++; i < n {
			defer b.BeforeNextApply(fn)
		}
		b.ApplyLocked(t, Grant(fmt.Sprintf("p%d", i), "reader"))
	}
	b.BeforeNextApply(fn)
}
