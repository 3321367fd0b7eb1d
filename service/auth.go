package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/store"
)

// The auth admin calls: API keys and role bindings, replicated through the log (fsm's auth
// commands). The leader draws a key's id and secret here, never on the apply path, and proposes
// only the id, the principal, the SHA-256 of the secret and the times; the token goes back once,
// to the caller of CreateKey.

// keyIDTries bounds CreateKey's draws of a fresh id when the one drawn is taken (a 64-bit id: it
// takes a flawed random source to get there twice).
const keyIDTries = 3

// draw fills bufs from Config.KeyRand, or crypto/rand (whose Read never fails: it panics on a
// broken system source).
func (s *Service) draw(bufs ...[]byte) error {
	for _, b := range bufs {
		if s.cfg.KeyRand == nil {
			_, _ = rand.Read(b)
			continue
		}
		if _, err := io.ReadFull(s.cfg.KeyRand, b); err != nil {
			return err
		}
	}
	return nil
}

// CreateKey creates an API key for a principal and returns its token.
func (s *Service) CreateKey(ctx context.Context, req *metadv1.CreateKeyRequest) (*metadv1.CreateKeyResponse, error) {
	if err := auth.ValidatePrincipal(req.GetPrincipal()); err != nil {
		return nil, fail(badf("principal", "%s", msgOf(err)), "", nil)
	}
	if ttl := req.GetTtlMs(); ttl > uint64(auth.MaxKeyTTL.Milliseconds()) {
		return nil, fail(badf("ttl_ms", "%d over %d (%s)", ttl, auth.MaxKeyTTL.Milliseconds(), auth.MaxKeyTTL), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		var raw [auth.KeyIDLen / 2]byte
		secret := make([]byte, auth.SecretBytes)
		if err := s.draw(raw[:], secret); err != nil {
			return nil, fail(fmt.Errorf("%w: draw a key: %v", ErrInternal, err), "", nil)
		}
		id := hex.EncodeToString(raw[:])
		sum := sha256.Sum256(secret)
		now := s.cfg.Now().UnixMilli()
		var expires int64
		if ttl := req.GetTtlMs(); ttl > 0 {
			expires = now + int64(ttl)
		}
		cmd := &metadv1.Command{Op: &metadv1.Command_CreateKey{CreateKey: &metadv1.CreateKey{
			Id: id, Principal: req.GetPrincipal(), Sha256: sum[:], CreatedMs: now, ExpiresMs: expires}}}
		res, err := s.proposeChecked(ctx, cmd)
		if err != nil {
			return nil, fail(err, "", nil)
		}
		if res.Reason == store.KeyAlreadyExists && try < keyIDTries {
			continue
		}
		if err := rejected(&res, "", nil); err != nil {
			return nil, err
		}
		return &metadv1.CreateKeyResponse{KeyId: id, Token: auth.FormatToken(id, secret), ExpiresMs: expires}, nil
	}
}

// RevokeKey drops an API key.
func (s *Service) RevokeKey(ctx context.Context, req *metadv1.RevokeKeyRequest) (*metadv1.RevokeKeyResponse, error) {
	if err := auth.ValidateKeyID(req.GetKeyId()); err != nil {
		return nil, fail(badf("key_id", "%s", msgOf(err)), "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_RevokeKey{RevokeKey: &metadv1.RevokeKey{Id: req.GetKeyId()}}}
	if _, err := s.propose(ctx, cmd, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.RevokeKeyResponse{}, nil
}

// ListKeys lists the API keys by id, without their hashes.
func (s *Service) ListKeys(ctx context.Context, req *metadv1.ListKeysRequest) (*metadv1.ListKeysResponse, error) {
	if _, _, err := s.readState(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	out := &metadv1.ListKeysResponse{}
	for _, k := range s.st.Auth().Keys() {
		out.Keys = append(out.Keys, &metadv1.KeyInfo{KeyId: k.ID, Principal: k.Principal, CreatedMs: k.CreatedMs, ExpiresMs: k.ExpiresMs})
	}
	return out, nil
}

// roleRequest checks a role call's principal and role and returns the role's canonical form.
func roleRequest(principal, role string) (string, error) {
	if err := auth.ValidatePrincipal(principal); err != nil {
		return "", badf("principal", "%s", msgOf(err))
	}
	r, err := auth.ParseRole(role)
	if err != nil {
		return "", badf("role", "%s", msgOf(err))
	}
	return r.String(), nil
}

// GrantRole binds a role to a principal; a binding that exists is a success.
func (s *Service) GrantRole(ctx context.Context, req *metadv1.GrantRoleRequest) (*metadv1.GrantRoleResponse, error) {
	role, err := roleRequest(req.GetPrincipal(), req.GetRole())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_GrantRole{GrantRole: &metadv1.GrantRole{Principal: req.GetPrincipal(), Role: role}}}
	if _, err := s.propose(ctx, cmd, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.GrantRoleResponse{}, nil
}

// RevokeRole removes a principal's role binding.
func (s *Service) RevokeRole(ctx context.Context, req *metadv1.RevokeRoleRequest) (*metadv1.RevokeRoleResponse, error) {
	role, err := roleRequest(req.GetPrincipal(), req.GetRole())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	cmd := &metadv1.Command{Op: &metadv1.Command_RevokeRole{RevokeRole: &metadv1.RevokeRole{Principal: req.GetPrincipal(), Role: role}}}
	if _, err := s.propose(ctx, cmd, "", nil); err != nil {
		return nil, err
	}
	return &metadv1.RevokeRoleResponse{}, nil
}

// ListRoles lists the stored role bindings by principal (RootPrincipal's implicit admin role is
// not among them), with the auth revision of the state listed.
func (s *Service) ListRoles(ctx context.Context, req *metadv1.ListRolesRequest) (*metadv1.ListRolesResponse, error) {
	if _, _, err := s.readState(ctx, req.GetStale()); err != nil {
		return nil, err
	}
	a := s.st.Auth()
	out := &metadv1.ListRolesResponse{AuthRevision: a.Revision()}
	for _, p := range a.Principals() {
		b := &metadv1.RoleBinding{Principal: p}
		for _, r := range a.Roles(p) {
			if p == auth.RootPrincipal && r.Kind == auth.RoleAdmin {
				continue
			}
			b.Roles = append(b.Roles, r.String())
		}
		out.Bindings = append(out.Bindings, b)
	}
	return out, nil
}
