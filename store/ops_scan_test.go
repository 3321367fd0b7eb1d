package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"metad/store/alloc"
)

// scanAll pages through ScanKeys with page size limit and returns every key it listed.
func scanAll(t *testing.T, s *Store, tenant string, limit int, match func(string) bool) []string {
	t.Helper()
	var out []string
	after := ""
	for range 10000 {
		keys, more := s.ScanKeys(tenant, after, limit, match)
		if len(keys) > limit {
			t.Fatalf("page of %d keys over limit %d", len(keys), limit)
		}
		out = append(out, keys...)
		if !more {
			return out
		}
		if len(keys) == 0 {
			t.Fatal("an empty page says more keys follow")
		}
		after = keys[len(keys)-1]
	}
	t.Fatal("paging did not end")
	return nil
}

func TestScanKeysPagesInOrderWithinTenant(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<24)
	if _, err := s.RegisterTenant("other", 0); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 300 {
		k := fmt.Sprintf("k%03d", (i*7)%300) // created out of order
		put(t, s, sec, "", k, "", 64)
		put(t, s, sec, "other", "o"+k, "", 64)
		want = append(want, k)
	}
	// A key being written is listed; another tenant's keys never are.
	if _, err := s.PutStart(sec, 1, putReq("", "k999", "", 64)); err != nil {
		t.Fatal(err)
	}
	want = append(want, "k999")
	slices.Sort(want)
	for _, limit := range []int{1, 7, 100, 301, 4096} {
		if got := scanAll(t, s, "", limit, nil); !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %d keys %v..., want %d", limit, len(got), got[:min(5, len(got))], len(want))
		}
	}
	keys, more := s.ScanKeys("", "k100", 3, nil)
	if !slices.Equal(keys, []string{"k101", "k102", "k103"}) || !more {
		t.Fatalf("page after k100 = %v, %v", keys, more)
	}
	keys, more = s.ScanKeys("", "k2", 1000, func(k string) bool { return strings.HasPrefix(k, "k2") })
	if len(keys) != 100 || keys[0] != "k200" || keys[99] != "k299" || more {
		t.Fatalf("prefix k2 page = %d keys from %v, more %v", len(keys), keys[:1], more)
	}
	if keys, more := s.ScanKeys("nobody", "", 10, nil); len(keys) != 0 || more {
		t.Fatalf("unknown tenant listed %v, %v", keys, more)
	}
	if keys, more := s.ScanKeys("", "k999", 10, nil); len(keys) != 0 || more {
		t.Fatalf("past the last key listed %v, %v", keys, more)
	}
}

// Keys added between pages below the resume point are not listed; those above it are, and an
// erased key is gone from the next page.
func TestScanKeysBetweenPages(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<24)
	for _, k := range []string{"b", "d", "f", "h"} {
		put(t, s, sec, "", k, "", 64)
	}
	keys, more := s.ScanKeys("", "", 2, nil)
	if !slices.Equal(keys, []string{"b", "d"}) || !more {
		t.Fatalf("first page = %v, %v", keys, more)
	}
	put(t, s, sec, "", "a", "", 64) // below the resume point
	put(t, s, sec, "", "e", "", 64) // above it
	if err := s.Remove(100*sec, "", "f", true); err != nil {
		t.Fatal(err)
	}
	keys, more = s.ScanKeys("", "d", 2, nil)
	if !slices.Equal(keys, []string{"e", "h"}) || more {
		t.Fatalf("second page = %v, %v; want [e h] false", keys, more)
	}
}

// A scan runs while the tenant's objects are created and erased: every page is sorted, within its
// bounds, and lists every key that lived throughout the scan.
func TestScanKeysDuringWrites(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<26)
	for i := range 500 {
		put(t, s, sec, "", fmt.Sprintf("stay%03d", i), "", 64)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			k := fmt.Sprintf("churn%03d", i%200)
			if _, err := s.PutStart(sec, uint64(i), putReq("", k, "", 64)); err == nil {
				_ = s.PutRevoke(sec, PutEndRequest{Tenant: "", Client: client1, Key: k})
			}
		}
	}()
	for range 20 {
		got := scanAll(t, s, "", 37, func(k string) bool { return strings.HasPrefix(k, "stay") })
		if len(got) != 500 || !slices.IsSorted(got) {
			t.Fatalf("listed %d keys (sorted %v) while others churned, want the 500 that stayed", len(got), slices.IsSorted(got))
		}
	}
	close(done)
	<-stopped
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
