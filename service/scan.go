package service

import (
	"context"
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/wire"
)

// Scans: ListObjectKeys, GetByRegex and RemoveByRegex walk a tenant's keys in byte order, one page
// per call (store.ScanKeys: each page visits the tenant's objects one route shard at a time and
// holds no lock across the walk). A page ends after limit keys or once its keys add up to
// maxPageKeyBytes; its next_page_token resumes after its last key, so keys created between pages
// below that key are not listed and those above it are.
//
// A pattern's cost per key has no small bound (a 1 KiB expression over 4 KiB keys), so a
// pattern's page is bounded by its work too (scanBudget): the walk takes the smallest
// Config.ScanExamine keys after the token without matching any, and the pattern is then asked
// about them in byte order, at most for Config.ScanPageTime of matching, until the page has limit
// matches. A page the budget ends holds fewer keys (none, even) and its token resumes after the
// last key it examined: every match up to there is in the page, so paging on lists every match
// once, and one call holds a core for at most about ScanPageTime past its walk. A prefix is a byte
// comparison, checked during the walk.

// Limits of a scan request.
const (
	defaultScanPage = 1024           // keys of a page when the request asks for 0
	maxScanPage     = store.MaxBatch // the most keys a page may ask for
	maxPatternLen   = 1024           // bytes of a regular expression
	maxPageKeyBytes = 1 << 20        // a page ends once its keys add up to this
	// scanCheckEvery is how many keys a pattern's page examines between two looks at the clock.
	scanCheckEvery = 16
)

// pageTokenV1 opens every page token this server issues: the token is the byte and the last key
// of the page before.
const pageTokenV1 = 1

// tokenAfter is the page token that resumes after key.
func tokenAfter(key string) []byte { return append([]byte{pageTokenV1}, key...) }

// pageTokenOf checks a request's page token and returns the key it resumes after ("" = from the
// start).
func pageTokenOf(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	if raw[0] != pageTokenV1 || len(raw) < 2 || len(raw)-1 > store.MaxKeyLen {
		return "", badf("page_token", "not a page token this service issued (pass next_page_token back unchanged)")
	}
	return string(raw[1:]), nil
}

// scanLimitOf checks a page size (0 = the default).
func scanLimitOf(limit uint32) (int, error) {
	switch {
	case limit == 0:
		return defaultScanPage, nil
	case limit > maxScanPage:
		return 0, badf("limit", "%d over %d", limit, maxScanPage)
	}
	return int(limit), nil
}

// patternOf compiles a request's regular expression (Go regexp, RE2 syntax).
func patternOf(p string) (*regexp.Regexp, error) {
	if len(p) == 0 || len(p) > maxPatternLen {
		return nil, badf("pattern", "length %d not in 1..%d", len(p), maxPatternLen)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			return nil, badf("pattern", "does not compile (Go regexp, RE2 syntax): %s: %q", se.Code, se.Expr)
		}
		return nil, badf("pattern", "does not compile (Go regexp, RE2 syntax): %v", err)
	}
	return re, nil
}

// scanPage is one page of the tenant's keys after after that start with prefix and that re
// matches (nil = every one), and the token of the next page (nil when no such key follows). On a
// linearizable read (linear, on the leader) the keys live reservations hold are listed too, as
// the keys of writes in progress through the log are: they are read before the state's keys, so
// a reservation whose commit applies meanwhile is listed once.
func (s *Service) scanPage(st *store.Store, linear bool, tenant, after string, limit int, prefix string, re *regexp.Regexp) ([]string, []byte) {
	var filter func(string) bool
	if prefix != "" {
		filter = func(k string) bool { return strings.HasPrefix(k, prefix) }
	}
	n := limit
	if re != nil {
		n = s.cfg.ScanExamine
	}
	// The candidates: the smallest n keys after after that pass the prefix, the reservations'
	// among them.
	var reserved []string
	if linear && !s.cfg.NoArenas {
		reserved = s.res.keysOf(tenant, after, filter)
	}
	keys, more := st.ScanKeys(tenant, after, n, filter)
	if len(reserved) > 0 {
		if more && len(keys) > 0 { // what lies past the state's candidates is a later page's
			last := keys[len(keys)-1]
			reserved = reserved[:sort.SearchStrings(reserved, last+"\x00")]
		}
		keys = slices.Compact(slices.Sorted(slices.Values(append(keys, reserved...))))
		if len(keys) > n {
			keys, more = keys[:n], true
		}
	}
	resume := ""
	if len(keys) > 0 {
		resume = keys[len(keys)-1]
	}
	if re != nil {
		keys, resume, more = s.matchPage(keys, more, limit, re)
	}
	size := 0
	for i, k := range keys {
		if size += len(k); size > maxPageKeyBytes && i > 0 {
			keys, more, resume = keys[:i], true, keys[i-1]
			break
		}
	}
	if !more || resume == "" {
		return keys, nil
	}
	return keys, tokenAfter(resume)
}

// matchPage asks re about the candidates cands (in byte order; more: keys follow them) in order,
// until limit keys matched, the candidates ran out or Config.ScanPageTime of matching has passed
// (looked at every scanCheckEvery keys, so at least that many are examined). It returns the
// matches, the key the next page resumes after (the last match at the limit, else the last key
// examined) and whether keys follow that one.
func (s *Service) matchPage(cands []string, more bool, limit int, re *regexp.Regexp) ([]string, string, bool) {
	var keys []string
	resume := ""
	start := time.Now() // the work's own time, not Config.Now: this bounds CPU
	for i, k := range cands {
		if i > 0 && i%scanCheckEvery == 0 && time.Since(start) >= s.cfg.ScanPageTime {
			s.m.scanPagesCut.WithLabelValues("time").Inc()
			return keys, resume, true
		}
		resume = k
		if re.MatchString(k) {
			if keys = append(keys, k); len(keys) == limit {
				return keys, resume, i < len(cands)-1 || more
			}
		}
	}
	if more && len(keys) < limit {
		s.m.scanPagesCut.WithLabelValues("keys").Inc() // the candidates ran out (Config.ScanExamine)
	}
	return keys, resume, more
}

// scanRequest is what the scans' requests share.
type scanRequest interface {
	GetTenant() string
	GetPageToken() []byte
	GetLimit() uint32
}

// scanOf validates the tenant, page token and limit of a scan.
func scanOf(req scanRequest) (tenant, after string, limit int, err error) {
	if tenant, err = tenantOf(req.GetTenant()); err != nil {
		return "", "", 0, fail(err, req.GetTenant(), nil)
	}
	if after, err = pageTokenOf(req.GetPageToken()); err != nil {
		return "", "", 0, fail(err, tenant, nil)
	}
	if limit, err = scanLimitOf(req.GetLimit()); err != nil {
		return "", "", 0, fail(err, tenant, nil)
	}
	return tenant, after, limit, nil
}

// ListObjectKeys returns one page of a tenant's keys in byte order, those that start with the
// prefix. Linearizable unless stale (a read barrier first; no lease is granted).
func (s *Service) ListObjectKeys(ctx context.Context, req *metadv1.ListObjectKeysRequest) (*metadv1.ListObjectKeysResponse, error) {
	tenant, after, limit, err := scanOf(req)
	if err != nil {
		return nil, err
	}
	prefix := string(req.GetPrefix())
	if len(prefix) > store.MaxKeyLen {
		return nil, fail(badf("prefix", "length %d over %d", len(prefix), store.MaxKeyLen), tenant, nil)
	}
	st, linear, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	keys, next := s.scanPage(st, linear, tenant, after, limit, prefix, nil)
	out := &metadv1.ListObjectKeysResponse{Keys: make([][]byte, len(keys)), NextPageToken: next}
	for i, k := range keys {
		out.Keys[i] = []byte(k)
	}
	return out, nil
}

// GetByRegex is Get for one page of the tenant's keys that the pattern matches: the objects of the
// page with a COMPLETE replica, each leased as Get leases it (not on a stale read); the others are
// left out.
func (s *Service) GetByRegex(ctx context.Context, req *metadv1.GetByRegexRequest) (*metadv1.GetByRegexResponse, error) {
	tenant, after, limit, err := scanOf(req)
	if err != nil {
		return nil, err
	}
	re, err := patternOf(req.GetPattern())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	st, linear, err := s.readState(ctx, req.GetStale())
	if err != nil {
		return nil, err
	}
	// A key a reservation holds has no COMPLETE replica: it would be left out, so the state alone
	// is scanned.
	keys, next := s.scanPage(st, false, tenant, after, limit, "", re)
	now := s.cfg.nowNano()
	out := &metadv1.GetByRegexResponse{NextPageToken: next}
	for _, k := range keys {
		v, err := getObject(ctx, st, now, tenant, k, linear)
		if errors.Is(err, store.ErrObjectNotFound) || errors.Is(err, store.ErrReplicaIsNotReady) {
			continue // erased since the scan, or not written yet
		}
		if err != nil {
			return nil, fail(err, tenant, []byte(k))
		}
		out.Items = append(out.Items, &metadv1.GetByRegexResponse_Item{Key: []byte(k),
			Replicas: wire.ReplicasTo(st.Segments(), v.Replicas, v.Size), Size: v.Size, DataType: v.DataType})
	}
	if linear && len(out.Items) > 0 {
		out.LeaseTtlMs = ms(st.LeaseTTL())
	}
	return out, nil
}

// RemoveByRegex removes one page of the tenant's keys that the pattern matches, in one BatchRemove
// command (leases and force as in BatchRemove), and answers each key of the page. The page is
// chosen after a read barrier, so a page found empty is a linearizable answer. A retry with the
// session header of an attempt that applied gets that attempt's answer: the command's result
// carries the keys (BatchRemove.keyed), since the state no longer holds them.
func (s *Service) RemoveByRegex(ctx context.Context, req *metadv1.RemoveByRegexRequest) (*metadv1.RemoveByRegexResponse, error) {
	ctx, err := withSession(ctx, req.GetSession())
	if err != nil {
		return nil, fail(err, "", nil)
	}
	tenant, after, limit, err := scanOf(req)
	if err != nil {
		return nil, err
	}
	re, err := patternOf(req.GetPattern())
	if err != nil {
		return nil, fail(err, tenant, nil)
	}
	if err := s.here(); err != nil {
		return nil, err
	}
	var (
		res  store.Result
		keys []string
		next []byte
		kept bool
	)
	err = againOnReplaced(func() (bool, error) {
		if err := s.b.ReadBarrier(ctx); err != nil {
			return false, fail(err, tenant, nil)
		}
		if r, ok := s.answered(ctx); ok { // this session's retry of a page that applied
			res, kept = r, true
			return false, nil
		}
		st := s.state()
		if err := st.CheckWritable(tenant); err != nil { // a removal of an unknown tenant, as BatchRemove refuses it
			return false, fail(err, tenant, nil)
		}
		// The page names the keys of writes reserved in the arenas too: their removal is refused
		// (REPLICA_IS_NOT_READY), as for writes in progress through the log.
		keys, next = s.scanPage(st, true, tenant, after, limit, "", re)
		if len(keys) == 0 {
			res = store.Result{}
			return false, nil
		}
		var again bool
		var err error
		res, kept, again, err = s.batchRemove(ctx, tenant, keys, req.GetForce(), true)
		return again, err
	})
	if err != nil {
		return nil, err
	}
	if err := rejected(&res, tenant, nil); err != nil {
		return nil, err
	}
	if kept {
		// The page's keys are the kept result's; whether matches follow is read from the state now.
		keys = make([]string, len(res.Items))
		for i, it := range res.Items {
			keys[i] = it.Key
		}
		next = nil
		if len(keys) > 0 {
			if more, _ := s.state().ScanKeys(tenant, keys[len(keys)-1], 1, nil); len(more) > 0 {
				next = tokenAfter(keys[len(keys)-1]) // any key follows: the next page says whether it matches
			}
		}
	}
	if len(res.Items) != len(keys) {
		return nil, internalf("RemoveByRegex: %d results for %d keys", len(res.Items), len(keys))
	}
	out := &metadv1.RemoveByRegexResponse{Results: make([]*metadv1.RemoveByRegexResponse_Result, len(keys)), NextPageToken: next}
	for i, it := range res.Items {
		out.Results[i] = &metadv1.RemoveByRegexResponse_Result{Key: []byte(keys[i]), Status: wire.ItemStatus(it.Reason, it.Message)}
	}
	return out, nil
}
