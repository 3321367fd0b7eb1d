package main

import (
	"context"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"

	"metad/proto/metadv1"
)

// The fake cluster's key scans: pages of one key at most two keys (so metactl's loops over pages
// run), the token being the last key with a leading 1, as the server's.

const fakeScanPage = 2

// scanLocked returns the tenant's keys after the token that match, at most one page, and the
// next token.
func (c *fakeCluster) scanLocked(tenant string, token []byte, limit uint32, match func(string) bool) ([]string, []byte) {
	after := ""
	if len(token) > 0 {
		after = string(token[1:])
	}
	var keys []string
	for _, o := range c.objects {
		if o.tenant == tname(tenant) && o.key > after && match(o.key) {
			keys = append(keys, o.key)
		}
	}
	sort.Strings(keys)
	n := fakeScanPage
	if limit > 0 && int(limit) < n {
		n = int(limit)
	}
	if len(keys) <= n {
		return keys, nil
	}
	keys = keys[:n]
	return keys, append([]byte{1}, keys[n-1]...)
}

func (c *fakeCluster) ListObjectKeys(_ context.Context, r *metadv1.ListObjectKeysRequest) (*metadv1.ListObjectKeysResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys, next := c.scanLocked(r.GetTenant(), r.GetPageToken(), r.GetLimit(), func(k string) bool { return strings.HasPrefix(k, string(r.GetPrefix())) })
	resp := &metadv1.ListObjectKeysResponse{NextPageToken: next}
	for _, k := range keys {
		resp.Keys = append(resp.Keys, []byte(k))
	}
	return resp, nil
}

func fakePattern(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, reject(codes.InvalidArgument, metadv1.Reason_REASON_INVALID_PARAMS, "pattern: does not compile: %v", err)
	}
	return re, nil
}

func (c *fakeCluster) GetByRegex(_ context.Context, r *metadv1.GetByRegexRequest) (*metadv1.GetByRegexResponse, error) {
	re, err := fakePattern(r.GetPattern())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys, next := c.scanLocked(r.GetTenant(), r.GetPageToken(), r.GetLimit(), re.MatchString)
	resp := &metadv1.GetByRegexResponse{NextPageToken: next, LeaseTtlMs: 10000}
	for _, k := range keys {
		if o := c.objects[okey(r.GetTenant(), []byte(k))]; o.complete {
			resp.Items = append(resp.Items, &metadv1.GetByRegexResponse_Item{Key: []byte(k), Size: o.size, Replicas: o.replicas})
		}
	}
	return resp, nil
}

func (c *fakeCluster) RemoveByRegex(_ context.Context, r *metadv1.RemoveByRegexRequest) (*metadv1.RemoveByRegexResponse, error) {
	re, err := fakePattern(r.GetPattern())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keys, next := c.scanLocked(r.GetTenant(), r.GetPageToken(), r.GetLimit(), re.MatchString)
	resp := &metadv1.RemoveByRegexResponse{NextPageToken: next}
	for _, k := range keys {
		st := &metadv1.Status{}
		if o := c.objects[okey(r.GetTenant(), []byte(k))]; !o.complete {
			st = &metadv1.Status{Reason: metadv1.Reason_REASON_REPLICA_IS_NOT_READY, Message: "REPLICA_IS_NOT_READY: being written"}
		} else {
			delete(c.objects, okey(r.GetTenant(), []byte(k)))
		}
		resp.Results = append(resp.Results, &metadv1.RemoveByRegexResponse_Result{Key: []byte(k), Status: st})
	}
	return resp, nil
}

func (c *fakeCluster) BatchReplicaClear(_ context.Context, r *metadv1.BatchReplicaClearRequest) (*metadv1.BatchReplicaClearResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &metadv1.BatchReplicaClearResponse{}
	for _, k := range r.GetKeys() {
		if _, ok := c.objects[okey(r.GetTenant(), k)]; !ok {
			resp.Results = append(resp.Results, &metadv1.Status{Reason: metadv1.Reason_REASON_OBJECT_NOT_FOUND, Message: "OBJECT_NOT_FOUND: absent"})
			continue
		}
		delete(c.objects, okey(r.GetTenant(), k))
		resp.Results = append(resp.Results, &metadv1.Status{})
	}
	return resp, nil
}
