package store

import "testing"

// TestTryChargeNeverWraps: a charge whose sum would pass 2^64-1 is refused, with or without a
// quota, instead of wrapping the charged bytes below the effective quota.
func TestTryChargeNeverWraps(t *testing.T) {
	for _, requested := range []uint64{0, 1} {
		var q QuotaAccount
		q.requested.Store(requested)
		q.effective.Store(^uint64(0))
		q.charged.Store(^uint64(0) - 10)
		if q.TryCharge(100) {
			t.Errorf("requested %d: a charge past 2^64-1 was accepted (charged now %d)", requested, q.Charged())
		}
		if q.Charged() != ^uint64(0)-10 {
			t.Errorf("requested %d: refused charge changed charged to %d", requested, q.Charged())
		}
		if !q.TryCharge(10) || q.Charged() != ^uint64(0) {
			t.Errorf("requested %d: a charge up to 2^64-1 was refused", requested)
		}
	}
}
