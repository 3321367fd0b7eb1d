package store

import (
	"strings"
	"testing"

	"metad/store/alloc"
)

// Tenants and their quotas.

func TestQuota(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	if _, err := s.RegisterTenant("a", 1000); err != nil {
		t.Fatal(err)
	}
	put(t, s, sec, "a", "k1", "", 600)
	_, err := s.PutStart(sec, 1, putReq("a", "k2", "", 600))
	wantReason(t, err, TenantQuotaExceeded)
	if !strings.Contains(err.Error(), `tenant "a" key "k2"`) {
		t.Fatalf("message %q does not name tenant and key", err)
	}
	if err := s.SetQuota("a", 2000); err != nil {
		t.Fatal(err)
	}
	put(t, s, sec, "a", "k2", "", 600)
	if c := s.Tenants().Lookup("a").Quota().Charged(); c != 1200 {
		t.Fatalf("charged %d", c)
	}
	wantReason(t, s.SetQuota("nobody", 1), TenantNotRegistered)
}

func TestEffectiveQuotaOversubscribed(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1024)
	for _, c := range []struct {
		name string
		q    uint64
	}{{"a", 1000}, {"b", 1000}, {"c", 1000}} {
		if _, err := s.RegisterTenant(c.name, c.q); err != nil {
			t.Fatal(err)
		}
	}
	// 1024 * 1000 / 3000 = 341.33 each; one byte left goes to the smallest id on a tie.
	want := map[string]uint64{"a": 342, "b": 341, "c": 341, DefaultTenant: 0}
	for name, w := range want {
		if got := s.Tenants().Lookup(name).Quota().Effective(); got != w {
			t.Errorf("tenant %s effective %d, want %d", name, got, w)
		}
	}
	mount(t, s, 2, alloc.TierMemory, 1<<20) // now everything fits
	if got := s.Tenants().Lookup("b").Quota().Effective(); got != 1000 {
		t.Fatalf("after mount: effective %d, want 1000", got)
	}
}

func TestTenants(t *testing.T) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<20)
	inst, err := s.RegisterTenant("a", 0)
	if err != nil || inst != 2 {
		t.Fatalf("instance %d %v; want 2 (default is 1)", inst, err)
	}
	_, err = s.RegisterTenant("a", 0)
	wantReason(t, err, TenantAlreadyExists)
	_, err = s.RegisterTenant("_a", 0)
	wantReason(t, err, InvalidParams)
	put(t, s, sec, "a", "k", "G", 10)
	put(t, s, sec, DefaultTenant, "k", "G", 10) // same key and group, other tenant: independent
	_, err = s.UnregisterTenant("a", false)
	wantReason(t, err, TenantNotEmpty)
	n, err := s.UnregisterTenant("a", true)
	if err != nil || n != 1 {
		t.Fatalf("force unregister = %d %v", n, err)
	}
	_, err = s.PutStart(sec, 1, putReq("a", "k", "", 10))
	wantReason(t, err, TenantNotRegistered)
	_, err = s.UnregisterTenant("a", true)
	wantReason(t, err, TenantNotRegistered)
	inst, err = s.RegisterTenant("a", 0)
	if err != nil || inst != 3 {
		t.Fatalf("re-register: instance %d %v; want a new instance 3", inst, err)
	}
	if _, err := s.Get(sec, DefaultTenant, "k"); err != nil {
		t.Fatalf("other tenant's object lost: %v", err)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
