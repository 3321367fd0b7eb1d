package client

import (
	"context"
	"time"

	"metad/proto/metadv1"
)

// CreateKey creates an API key for principal that expires after ttl (0: never; at most ten years)
// and returns it with its token, "mtd_<key id>_<secret>". The token is the only copy of the
// secret: the cluster keeps its SHA-256 alone.
func (c *Client) CreateKey(ctx context.Context, principal string, ttl time.Duration) (*metadv1.CreateKeyResponse, error) {
	return callAdmin(ctx, c, metadv1.AdminClient.CreateKey, &metadv1.CreateKeyRequest{
		Principal: principal, TtlMs: uint64(max(ttl, 0) / time.Millisecond)})
}

// RevokeKey revokes the API key keyID; calls that present it fail on every node once it has
// applied the revoke.
func (c *Client) RevokeKey(ctx context.Context, keyID string) error {
	_, err := callAdmin(ctx, c, metadv1.AdminClient.RevokeKey, &metadv1.RevokeKeyRequest{KeyId: keyID})
	return err
}

// ListKeys lists the API keys sorted by id (never their secrets or hashes).
func (c *Client) ListKeys(ctx context.Context, opts ...ReadOption) ([]*metadv1.KeyInfo, error) {
	resp, err := callAdmin(ctx, c, metadv1.AdminClient.ListKeys, &metadv1.ListKeysRequest{Stale: readOpts(opts).stale})
	return resp.GetKeys(), err
}

// GrantRole binds role ("admin", "reader", "worker:<client-id>", "tenant:<tenant-id>") to
// principal; a binding that exists is a success.
func (c *Client) GrantRole(ctx context.Context, principal, role string) error {
	_, err := callAdmin(ctx, c, metadv1.AdminClient.GrantRole, &metadv1.GrantRoleRequest{Principal: principal, Role: role})
	return err
}

// RevokeRole removes principal's binding of role.
func (c *Client) RevokeRole(ctx context.Context, principal, role string) error {
	_, err := callAdmin(ctx, c, metadv1.AdminClient.RevokeRole, &metadv1.RevokeRoleRequest{Principal: principal, Role: role})
	return err
}

// ListRoles lists the role bindings sorted by principal, with the auth revision of the state
// listed. The bootstrap principal root is admin without a binding and is not listed for it.
func (c *Client) ListRoles(ctx context.Context, opts ...ReadOption) (*metadv1.ListRolesResponse, error) {
	return callAdmin(ctx, c, metadv1.AdminClient.ListRoles, &metadv1.ListRolesRequest{Stale: readOpts(opts).stale})
}

// SetLimit sets the rate limits of limit's target (a principal, or a role: "admin", "reader",
// "worker:<client-id>", "tenant:<tenant-id>", or "*" for every principal); a limit of 0 is not
// set, and every limit 0 removes the target's record. Each member enforces them on the calls it is
// sent.
func (c *Client) SetLimit(ctx context.Context, limit *metadv1.Limit) error {
	_, err := callAdmin(ctx, c, metadv1.AdminClient.SetLimit, &metadv1.SetLimitRequest{Limit: limit})
	return err
}

// ListLimits lists the rate limits set (principals' by name, then roles') and, when principal is
// not empty, the limits that apply to it (ListLimitsResponse.effective).
func (c *Client) ListLimits(ctx context.Context, principal string, opts ...ReadOption) (*metadv1.ListLimitsResponse, error) {
	return callAdmin(ctx, c, metadv1.AdminClient.ListLimits, &metadv1.ListLimitsRequest{Principal: principal, Stale: readOpts(opts).stale})
}
