package client

import (
	"context"

	"metad/proto/metadv1"
)

// Scans of a tenant's keys (ListObjectKeys, GetByRegex, RemoveByRegex) are paged: each call
// answers one page in key byte order and a token that resumes after its last key (nil when
// nothing follows). A pattern's page is bounded by the server's work too: it may hold fewer keys
// than asked, or none, with a token that resumes after the last key it examined; page on until
// the token is nil. The Page methods make one call; the others loop over pages. The pages are
// separate calls, so keys created or removed meanwhile may or may not be seen: a key created
// between pages below the page's last key is not. A pattern is Go regexp (RE2) syntax, matched
// anywhere in the key. A page's call is long (Long): the server may walk many keys to fill it.

// maxPages bounds the loops over pages (a loop that never ends would be a server bug).
const maxPages = 1 << 24

// ListObjectKeysPage returns one page of the tenant's keys that start with prefix ("" = all),
// after pageToken (nil = from the start), at most limit (0 = the server's page size), and the
// token of the next page (nil when none follows).
func (c *Client) ListObjectKeysPage(ctx context.Context, tenant, prefix string, pageToken []byte, limit uint32, opts ...ReadOption) ([]string, []byte, error) {
	resp, err := call(Long(ctx), c, metadv1.MetadataClient.ListObjectKeys, &metadv1.ListObjectKeysRequest{
		Tenant: tenant, Prefix: []byte(prefix), PageToken: pageToken, Limit: limit, Stale: readOpts(opts).stale,
	})
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, len(resp.GetKeys()))
	for i, k := range resp.GetKeys() {
		keys[i] = string(k)
	}
	return keys, resp.GetNextPageToken(), nil
}

// ListObjectKeys returns every key of the tenant that starts with prefix, in byte order, page
// after page; on an error it returns the keys listed so far with it.
func (c *Client) ListObjectKeys(ctx context.Context, tenant, prefix string, opts ...ReadOption) ([]string, error) {
	var all []string
	var token []byte
	for range maxPages {
		keys, next, err := c.ListObjectKeysPage(ctx, tenant, prefix, token, 0, opts...)
		all = append(all, keys...)
		if err != nil || next == nil {
			return all, err
		}
		token = next
	}
	return all, nil
}

// GetByRegexPage is Get for one page of the tenant's keys that pattern matches: the objects of
// the page that have a COMPLETE replica, leased (unless Stale), and the next page's token.
func (c *Client) GetByRegexPage(ctx context.Context, tenant, pattern string, pageToken []byte, limit uint32, opts ...ReadOption) (*metadv1.GetByRegexResponse, error) {
	return call(Long(ctx), c, metadv1.MetadataClient.GetByRegex, &metadv1.GetByRegexRequest{
		Tenant: tenant, Pattern: pattern, PageToken: pageToken, Limit: limit, Stale: readOpts(opts).stale,
	})
}

// GetByRegex is GetByRegexPage over every page; on an error it returns the items read so far
// with it.
func (c *Client) GetByRegex(ctx context.Context, tenant, pattern string, opts ...ReadOption) ([]*metadv1.GetByRegexResponse_Item, error) {
	var all []*metadv1.GetByRegexResponse_Item
	var token []byte
	for range maxPages {
		resp, err := c.GetByRegexPage(ctx, tenant, pattern, token, 0, opts...)
		all = append(all, resp.GetItems()...)
		if err != nil || resp.GetNextPageToken() == nil {
			return all, err
		}
		token = resp.GetNextPageToken()
	}
	return all, nil
}

// RemoveByRegexPage removes one page of the tenant's keys that pattern matches (force: leased
// ones too; never one being written), in one replicated command, and answers each key of the page
// and the next page's token.
func (c *Client) RemoveByRegexPage(ctx context.Context, tenant, pattern string, pageToken []byte, limit uint32, force bool) (*metadv1.RemoveByRegexResponse, error) {
	return call(Long(ctx), c, metadv1.MetadataClient.RemoveByRegex, &metadv1.RemoveByRegexRequest{
		Tenant: tenant, Pattern: pattern, PageToken: pageToken, Limit: limit, Force: force,
	})
}

// RemoveByRegex is RemoveByRegexPage over every page: one result per matching key (removed, or
// why not); on an error it returns the results so far with it.
func (c *Client) RemoveByRegex(ctx context.Context, tenant, pattern string, force bool) ([]*metadv1.RemoveByRegexResponse_Result, error) {
	var all []*metadv1.RemoveByRegexResponse_Result
	var token []byte
	for range maxPages {
		resp, err := c.RemoveByRegexPage(ctx, tenant, pattern, token, 0, force)
		all = append(all, resp.GetResults()...)
		if err != nil || resp.GetNextPageToken() == nil {
			return all, err
		}
		token = resp.GetNextPageToken()
	}
	return all, nil
}

// BatchReplicaClear drops the COMPLETE, unleased replicas of the tenant's keys that live on this
// client's segment (zero: on every segment of this client); an object left with no replica is
// erased. One status per key, in order; partial failure and repeated keys as in BatchPutStart.
func (c *Client) BatchReplicaClear(ctx context.Context, tenant string, keys []string, segment UUID) ([]*metadv1.Status, error) {
	var seg []byte
	if !segment.IsZero() {
		seg = segment.Bytes()
	}
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		resp, err := call(ctx, c, metadv1.MetadataClient.BatchReplicaClear, &metadv1.BatchReplicaClearRequest{
			Tenant: tenant, ClientId: c.idBytes, Keys: ks, SegmentId: seg,
		})
		return resp.GetResults(), err
	})
}
