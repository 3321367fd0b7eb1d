package client

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"metad/proto/metadv1"
)

// Batch limits. The server takes 1..MaxBatchItems items per batch request and at most 16 MiB per
// request; the Batch methods split longer lists into consecutive requests of at most
// MaxBatchItems items whose keys and groups total at most MaxBatchBytes. MaxBatchBytes stays under
// gRPC's default 4 MiB receive limit, so a request fits even a server that kept that default;
// typical keys (under 700 bytes) hit the item limit first.
const (
	MaxBatchItems = 4096
	MaxBatchBytes = 3 << 20
)

// Read batch limits: a BatchGet or BatchExist request takes 1..MaxReadBatchItems keys, and the
// client sends at most MaxReadBatchBytes of keys in one (under the server's 16 MiB request limit,
// which every metad sets), so 65,536 keys of up to 190 bytes go in one request.
const (
	MaxReadBatchItems = 65536
	MaxReadBatchBytes = 12 << 20
)

// BatchPutItem is one object of a batch put.
type BatchPutItem struct {
	Key   string
	Group string // "" = the object is its own group
	Size  uint64
}

// ItemError is the failure of one item of a batch, built from its metadv1.Status.
type ItemError struct {
	Reason  metadv1.Reason
	Message string
}

func (e *ItemError) Error() string {
	if msg := trimReason(e.Message, e.Reason); msg != "" {
		return ReasonName(e.Reason) + ": " + msg
	}
	return ReasonName(e.Reason)
}

// ItemErr returns nil for a successful batch item status, or an *ItemError (which ReasonOf reads).
func ItemErr(s *metadv1.Status) error {
	if s.GetReason() == metadv1.Reason_REASON_UNSPECIFIED {
		return nil
	}
	return &ItemError{Reason: s.GetReason(), Message: s.GetMessage()}
}

// Batches cuts items into consecutive chunks of at most size items (size <= 0 means
// MaxBatchItems). The chunks share items' backing array.
func Batches[T any](items []T, size int) [][]T {
	if size <= 0 {
		size = MaxBatchItems
	}
	var out [][]T
	for len(items) > 0 {
		n := min(size, len(items))
		out = append(out, items[:n:n])
		items = items[n:]
	}
	return out
}

// spans returns the [start, end) bounds of consecutive batches over n items of the given sizes
// in bytes, each at most MaxBatchItems items and MaxBatchBytes bytes (an item larger than that
// alone makes a batch; the server judges it).
func spans(n int, bytesOf func(i int) int) [][2]int {
	return spansOf(n, MaxBatchItems, MaxBatchBytes, bytesOf)
}

// spansOf is spans with the limits given: at most maxItems items and maxBytes bytes a batch.
func spansOf(n, maxItems, maxBytes int, bytesOf func(i int) int) [][2]int {
	var out [][2]int
	start, total := 0, 0
	for i := 0; i < n; i++ {
		b := bytesOf(i)
		if i > start && (i-start == maxItems || total+b > maxBytes) {
			out = append(out, [2]int{start, i})
			start, total = i, 0
		}
		total += b
	}
	if start < n {
		out = append(out, [2]int{start, n})
	}
	return out
}

func keySpans(keys []string) [][2]int {
	return spans(len(keys), func(i int) int { return len(keys[i]) + 8 })
}

// readKeySpans is keySpans for BatchGet and BatchExist, with the read limits.
func readKeySpans(keys []string) [][2]int {
	return spansOf(len(keys), MaxReadBatchItems, MaxReadBatchBytes, func(i int) int { return len(keys[i]) + 8 })
}

// repeatedKey returns ErrRepeatedKey naming the first of n items whose key (key(i)) repeats an
// earlier one, or nil; field names the list ("keys", "items").
func repeatedKey(field string, n int, key func(i int) string) error {
	seen := make(map[string]int, n)
	for i := range n {
		k := key(i)
		if j, dup := seen[k]; dup {
			return fmt.Errorf("%w: %s[%d] repeats %s[%d]", ErrRepeatedKey, field, i, field, j)
		}
		seen[k] = i
	}
	return nil
}

// distinctKeys returns keys without repeats, in first-occurrence order, and for each key its
// position in that list; keys itself and a nil index when nothing repeats.
func distinctKeys(keys []string) (uniq []string, index []int) {
	pos := make(map[string]int, len(keys))
	index = make([]int, len(keys))
	for i, k := range keys {
		j, ok := pos[k]
		if !ok {
			j = len(uniq)
			pos[k] = j
			uniq = append(uniq, k)
		}
		index[i] = j
	}
	if len(uniq) == len(keys) {
		return keys, nil
	}
	return uniq, index
}

// fanOut maps the results of the distinct keys (got, a prefix of them when a request failed) back
// to every position of keys (index from distinctKeys): the longest prefix of keys whose results
// are known. A repeat gets its own copy.
func fanOut[T proto.Message](got []T, index []int) []T {
	out := make([]T, 0, len(index))
	used := make([]bool, len(got))
	for _, j := range index {
		if j >= len(got) {
			break
		}
		r := got[j]
		if used[j] {
			r = proto.Clone(r).(T)
		}
		used[j] = true
		out = append(out, r)
	}
	return out
}

func toBytes(keys []string) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

// BatchPutStart is PutStart for every item (one config for all), in as many requests as the
// limits need. It returns one result per item, in order. If a request fails as a whole, it
// returns the results of the requests before it (a prefix of items) and the error. Keys must be
// distinct: a repeat fails the call with ErrRepeatedKey before anything is sent.
func (c *Client) BatchPutStart(ctx context.Context, tenant string, items []BatchPutItem, opts *PutOptions) ([]*metadv1.BatchPutStartResponse_Result, error) {
	if err := repeatedKey("items", len(items), func(i int) string { return items[i].Key }); err != nil {
		return nil, err
	}
	ctx = Long(ctx) // a batch's thousands of items must not be placed twice for a busy leader's sake
	out := make([]*metadv1.BatchPutStartResponse_Result, 0, len(items))
	cfg := opts.config()
	for _, sp := range spans(len(items), func(i int) int { return len(items[i].Key) + len(items[i].Group) + 16 }) {
		req := &metadv1.BatchPutStartRequest{Tenant: tenant, ClientId: c.idBytes, Config: cfg}
		for _, it := range items[sp[0]:sp[1]] {
			var g []byte
			if it.Group != "" {
				g = []byte(it.Group)
			}
			req.Items = append(req.Items, &metadv1.BatchPutStartRequest_Item{Key: []byte(it.Key), Group: g, Size: it.Size})
		}
		resp, n, err := callCount(ctx, c, metadv1.MetadataClient.BatchPutStart, req)
		if err == nil {
			err = checkCount(len(resp.GetResults()), len(req.Items))
		}
		if err != nil {
			return out, err
		}
		if n > 1 && !c.sessions() {
			c.replaceOwnPending(ctx, req, resp.GetResults())
		}
		out = append(out, resp.GetResults()...)
	}
	return out, nil
}

// replaceOwnPending is PutStart's recovery for a batch that was retried: items answered
// OBJECT_ALREADY_EXISTS whose pending write this client can revoke were placed by a lost attempt,
// so they are revoked and placed again, and their results replaced. Failures leave the results as
// they were.
func (c *Client) replaceOwnPending(ctx context.Context, req *metadv1.BatchPutStartRequest, results []*metadv1.BatchPutStartResponse_Result) {
	var idx []int
	var keys [][]byte
	for i, r := range results {
		if r.GetStatus().GetReason() == metadv1.Reason_REASON_OBJECT_ALREADY_EXISTS {
			idx = append(idx, i)
			keys = append(keys, req.Items[i].GetKey())
		}
	}
	if len(idx) == 0 {
		return
	}
	rev, err := call(ctx, c, metadv1.MetadataClient.BatchPutRevoke, &metadv1.BatchPutRevokeRequest{
		Tenant: req.GetTenant(), ClientId: req.GetClientId(), Keys: keys,
	})
	if err != nil || len(rev.GetResults()) != len(idx) {
		return
	}
	retry := &metadv1.BatchPutStartRequest{Tenant: req.GetTenant(), ClientId: req.GetClientId(), Config: req.GetConfig()}
	var again []int
	for j, s := range rev.GetResults() {
		if s.GetReason() == metadv1.Reason_REASON_UNSPECIFIED {
			again = append(again, idx[j])
			retry.Items = append(retry.Items, req.Items[idx[j]])
		}
	}
	if len(again) == 0 {
		return
	}
	resp, err := call(ctx, c, metadv1.MetadataClient.BatchPutStart, retry)
	if err != nil || len(resp.GetResults()) != len(again) {
		return
	}
	for j, i := range again {
		results[i] = resp.GetResults()[j]
	}
}

// batchStatus runs a keys-only batch write whose answer is one Status per key; a repeated key
// fails it with ErrRepeatedKey before anything is sent. Its calls are long (Long).
func batchStatus(ctx context.Context, keys []string, send func(context.Context, [][]byte) ([]*metadv1.Status, error)) ([]*metadv1.Status, error) {
	ctx = Long(ctx)
	if err := repeatedKey("keys", len(keys), func(i int) string { return keys[i] }); err != nil {
		return nil, err
	}
	out := make([]*metadv1.Status, 0, len(keys))
	for _, sp := range keySpans(keys) {
		res, err := send(ctx, toBytes(keys[sp[0]:sp[1]]))
		if err == nil {
			err = checkCount(len(res), sp[1]-sp[0])
		}
		if err != nil {
			return out, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// BatchPutEnd is PutEnd of tier for every key. Results, partial failure and repeated keys as in
// BatchPutStart.
func (c *Client) BatchPutEnd(ctx context.Context, tenant string, keys []string, tier metadv1.Tier) ([]*metadv1.Status, error) {
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		resp, err := call(ctx, c, metadv1.MetadataClient.BatchPutEnd, &metadv1.BatchPutEndRequest{
			Tenant: tenant, ClientId: c.idBytes, Keys: ks, Tier: tier,
		})
		return resp.GetResults(), err
	})
}

// BatchPutRevoke is PutRevoke of tier for every key. Results, partial failure and repeated keys
// as in BatchPutStart.
func (c *Client) BatchPutRevoke(ctx context.Context, tenant string, keys []string, tier metadv1.Tier) ([]*metadv1.Status, error) {
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		resp, err := call(ctx, c, metadv1.MetadataClient.BatchPutRevoke, &metadv1.BatchPutRevokeRequest{
			Tenant: tenant, ClientId: c.idBytes, Keys: ks, Tier: tier,
		})
		return resp.GetResults(), err
	})
}

// BatchRemove is Remove for every key. Results, partial failure and repeated keys as in
// BatchPutStart.
func (c *Client) BatchRemove(ctx context.Context, tenant string, keys []string, force bool) ([]*metadv1.Status, error) {
	return batchStatus(ctx, keys, func(ctx context.Context, ks [][]byte) ([]*metadv1.Status, error) {
		resp, err := call(ctx, c, metadv1.MetadataClient.BatchRemove, &metadv1.BatchRemoveRequest{
			Tenant: tenant, Keys: ks, Force: force,
		})
		return resp.GetResults(), err
	})
}

// BatchPut is BatchPutStart then BatchPutEnd of every tier for the items that started. It returns
// one status per item, in order: the start's failure, or else the end's outcome. Partial failure
// as in BatchPutStart (items whose start succeeded but whose end request failed are left
// PROCESSING; the server discards them after put_discard_timeout).
func (c *Client) BatchPut(ctx context.Context, tenant string, items []BatchPutItem, opts *PutOptions) ([]*metadv1.Status, error) {
	started, err := c.BatchPutStart(ctx, tenant, items, opts)
	out := make([]*metadv1.Status, len(started))
	var ok []string
	var okIdx []int
	for i, r := range started {
		if r.GetStatus().GetReason() != metadv1.Reason_REASON_UNSPECIFIED {
			out[i] = r.GetStatus()
			continue
		}
		ok = append(ok, items[i].Key)
		okIdx = append(okIdx, i)
	}
	ended, endErr := c.BatchPutEnd(ctx, tenant, ok, metadv1.Tier_TIER_UNSPECIFIED)
	for j, s := range ended {
		out[okIdx[j]] = s
	}
	if endErr != nil {
		return out[:firstNil(out)], endErr
	}
	return out, err
}

// checkCount rejects a batch answer with the wrong number of results.
func checkCount(got, want int) error {
	if got != want {
		return fmt.Errorf("%w: %d results for %d items", ErrBadResponse, got, want)
	}
	return nil
}

// firstNil returns the index of the first nil status, or len(s).
func firstNil(s []*metadv1.Status) int {
	for i, x := range s {
		if x == nil {
			return i
		}
	}
	return len(s)
}

// BatchGet is Get for every key, in as many requests as the limits need. The merged response has
// one result per key, in order; its lease_ttl_ms is the smallest of the requests'. Repeats are
// allowed: each key is asked once (the server refuses a request that repeats one) and its result
// given at every position. Partial failure returns the results so far (a prefix) and the error.
func (c *Client) BatchGet(ctx context.Context, tenant string, keys []string, opts ...ReadOption) (*metadv1.BatchGetResponse, error) {
	uniq, index := distinctKeys(keys)
	out, err := c.batchGet(ctx, tenant, uniq, readOpts(opts).stale)
	if index != nil {
		out.Results = fanOut(out.Results, index)
	}
	return out, err
}

func (c *Client) batchGet(ctx context.Context, tenant string, keys []string, stale bool) (*metadv1.BatchGetResponse, error) {
	out := &metadv1.BatchGetResponse{Results: make([]*metadv1.BatchGetResponse_Result, 0, len(keys))}
	n := 0
	for _, sp := range readKeySpans(keys) {
		for lo := sp[0]; lo < sp[1]; n++ {
			resp, err := call(ctx, c, metadv1.MetadataClient.BatchGet, &metadv1.BatchGetRequest{
				Tenant: tenant, Keys: toBytes(keys[lo:sp[1]]), Stale: stale,
			})
			if err == nil {
				err = checkCount(len(resp.GetResults()), sp[1]-lo)
			}
			if err != nil {
				return out, err
			}
			// The server answers RESPONSE_LIMIT_REACHED from the key where its response reached its
			// size bound on, and always answers the first key: ask again from there.
			got := resp.GetResults()
			for i, r := range got {
				if r.GetStatus().GetReason() == metadv1.Reason_REASON_RESPONSE_LIMIT_REACHED && i > 0 {
					got = got[:i]
					break
				}
			}
			out.Results = append(out.Results, got...)
			lo += len(got)
			if n == 0 || resp.GetLeaseTtlMs() < out.LeaseTtlMs {
				out.LeaseTtlMs = resp.GetLeaseTtlMs()
			}
		}
	}
	return out, nil
}

// BatchExist is Exist for every key, merged like BatchGet (repeats allowed).
func (c *Client) BatchExist(ctx context.Context, tenant string, keys []string, opts ...ReadOption) (*metadv1.BatchExistResponse, error) {
	uniq, index := distinctKeys(keys)
	out, err := c.batchExist(ctx, tenant, uniq, readOpts(opts).stale)
	if index != nil {
		exists := make([]bool, 0, len(keys))
		for _, j := range index {
			if j >= len(out.Exists) {
				break
			}
			exists = append(exists, out.Exists[j])
		}
		out.Exists = exists
	}
	return out, err
}

func (c *Client) batchExist(ctx context.Context, tenant string, keys []string, stale bool) (*metadv1.BatchExistResponse, error) {
	out := &metadv1.BatchExistResponse{Exists: make([]bool, 0, len(keys))}
	for n, sp := range readKeySpans(keys) {
		resp, err := call(ctx, c, metadv1.MetadataClient.BatchExist, &metadv1.BatchExistRequest{
			Tenant: tenant, Keys: toBytes(keys[sp[0]:sp[1]]), Stale: stale,
		})
		if err == nil {
			err = checkCount(len(resp.GetExists()), sp[1]-sp[0])
		}
		if err != nil {
			return out, err
		}
		out.Exists = append(out.Exists, resp.GetExists()...)
		if n == 0 || resp.GetLeaseTtlMs() < out.LeaseTtlMs {
			out.LeaseTtlMs = resp.GetLeaseTtlMs()
		}
	}
	return out, nil
}
