package service_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/service"
	"metad/service/servicetest"
)

// budgetHarness is a harness whose pattern pages examine at most examine keys and match for at
// most pageTime, over keys k000..k099.
func budgetHarness(t *testing.T, examine int, pageTime time.Duration) *harness {
	t.Helper()
	cfg := testConfig()
	cfg.ScanExamine, cfg.ScanPageTime = examine, pageTime
	h := start(t, servicetest.NewBackend(t, nil), cfg)
	h.mount(t, clientA, segA)
	for i := range 100 {
		h.put(t, "", fmt.Sprintf("k%03d", (i*37)%100), 64) // created out of order
	}
	return h
}

// getByRegexPages pages GetByRegex of pattern to the end and returns each page's keys.
func getByRegexPages(t *testing.T, h *harness, pattern string) [][]string {
	t.Helper()
	var pages [][]string
	var token []byte
	for range 1000 {
		p, err := h.svc.GetByRegex(tctx(t), &metadv1.GetByRegexRequest{Pattern: pattern, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, it := range p.GetItems() {
			keys = append(keys, string(it.GetKey()))
		}
		pages = append(pages, keys)
		if token = p.GetNextPageToken(); len(token) == 0 {
			return pages
		}
	}
	t.Fatal("paging did not end")
	return nil
}

// TestRegexPageExamineBound: a pattern's page asks the pattern about at most ScanExamine keys,
// so a page may hold fewer matches than its limit, or none, with a token; paging on from it lists
// every match once, in order, and the cut pages are counted.
func TestRegexPageExamineBound(t *testing.T) {
	h := budgetHarness(t, 10, time.Hour)
	pages := getByRegexPages(t, h, "5$") // k005, k015, ... k095: one in ten
	if len(pages) != 10 {
		t.Fatalf("%d pages %v, want 10 of one key each (10 keys examined a page)", len(pages), pages)
	}
	for i, p := range pages {
		if want := []string{fmt.Sprintf("k%02d5", i)}; !slices.Equal(p, want) {
			t.Fatalf("page %d = %v, want %v", i, p, want)
		}
	}
	if got := servicetest.MetricValue(t, h.reg, "metad_server_scan_pages_cut_total", map[string]string{"bound": "keys"}); got != 9 {
		t.Fatalf("pages cut by keys examined: %v, want 9", got)
	}

	pages = getByRegexPages(t, h, "^k099$") // one match, at the end: nine empty pages first
	if len(pages) != 10 || !slices.Equal(pages[9], []string{"k099"}) || slices.ContainsFunc(pages[:9], func(p []string) bool { return len(p) > 0 }) {
		t.Fatalf("pages %v, want nine empty ones and then [k099]", pages)
	}

	// RemoveByRegex pages the same way and removes exactly the matches.
	var removed []string
	var token []byte
	for range 100 {
		p, err := h.svc.RemoveByRegex(tctx(t), &metadv1.RemoveByRegexRequest{Pattern: "[27]$", PageToken: token, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.GetResults() {
			removed = append(removed, string(r.GetKey()))
		}
		if token = p.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("k0%d2", i), fmt.Sprintf("k0%d7", i))
	}
	if !slices.Equal(removed, want) {
		t.Fatalf("RemoveByRegex removed %v, want %v", removed, want)
	}
	left, err := h.svc.ListObjectKeys(tctx(t), &metadv1.ListObjectKeysRequest{})
	if err != nil || len(left.GetKeys()) != 80 {
		t.Fatalf("%d keys left (%v), want 80", len(left.GetKeys()), err)
	}
}

// TestRegexPageTimeBound: a pattern's page matches for at most ScanPageTime (the clock is looked
// at every 16 keys): with a bound that has always passed, each page examines 16 keys, and paging
// on still lists every match once, in order.
func TestRegexPageTimeBound(t *testing.T) {
	h := budgetHarness(t, 4096, time.Nanosecond)
	pages := getByRegexPages(t, h, "[05]$")
	if len(pages) != 7 { // 100 keys, 16 a page
		t.Fatalf("%d pages %v, want 7", len(pages), pages)
	}
	var all, want []string
	for _, p := range pages {
		all = append(all, p...)
	}
	for i := range 10 {
		want = append(want, fmt.Sprintf("k0%d0", i), fmt.Sprintf("k0%d5", i))
	}
	if !slices.Equal(all, want) {
		t.Fatalf("listed %v, want %v", all, want)
	}
	if got := servicetest.MetricValue(t, h.reg, "metad_server_scan_pages_cut_total", map[string]string{"bound": "time"}); got != 6 {
		t.Fatalf("pages cut by time: %v, want 6", got)
	}
}

// BenchmarkRegexPage: one GetByRegex page of a pattern that matches one key in a thousand, over
// a tenant of 100,000 keys of 64 bytes, with the default budget and with none (every key
// examined, as a page was before the budget). ms/page is the call's time; examined/page the most
// keys the pattern was asked about.
//
//	go test -run '^$' -bench RegexPage -benchtime 20x ./service/
func BenchmarkRegexPage(b *testing.B) {
	for _, c := range []struct {
		name     string
		examine  int
		pageTime time.Duration
	}{{"budget", service.DefaultScanExamine, service.DefaultScanPageTime}, {"unbounded", 1 << 30, time.Hour}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.ScanExamine, cfg.ScanPageTime = c.examine, c.pageTime
			h := start(b, servicetest.NewBackend(b, nil), cfg)
			h.hostSeg(b, segA, 1<<20, 1<<30, "10.0.0.1:7000")
			const n, batch = 100_000, 4096
			pad := strings.Repeat("p", 40)
			for lo := 0; lo < n; lo += batch {
				var items []*metadv1.BatchPutStartRequest_Item
				var keys [][]byte
				for i := lo; i < min(lo+batch, n); i++ {
					k := []byte(fmt.Sprintf("blk-%s-%08d", pad, i))
					items = append(items, &metadv1.BatchPutStartRequest_Item{Key: k, Size: 64})
					keys = append(keys, k)
				}
				ctx := tctx(b)
				if _, err := h.svc.BatchPutStart(ctx, &metadv1.BatchPutStartRequest{ClientId: idb(clientA), Items: items}); err != nil {
					b.Fatal(err)
				}
				if _, err := h.svc.BatchPutEnd(ctx, &metadv1.BatchPutEndRequest{ClientId: idb(clientA), Keys: keys}); err != nil {
					b.Fatal(err)
				}
			}
			req := &metadv1.GetByRegexRequest{Pattern: `^blk-(p|q)+-[0-9]{5}(000|[a-z]+)$`, Stale: true}
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if _, err := h.svc.GetByRegex(tctx(b), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1e3/float64(b.N), "ms/page")
			b.ReportMetric(float64(min(c.examine, n)), "examined/page")
		})
	}
}
