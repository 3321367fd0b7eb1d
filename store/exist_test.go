package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"metad/store/alloc"
)

// existFixture holds 10,000 complete objects k0..k9999 (every tenth in group "g"), and "pending",
// which has no COMPLETE replica; keys is 20,000 present and absent keys shuffled, with "pending".
func existFixture(t *testing.T) (*Store, []string) {
	s := newTestStore(t)
	mount(t, s, 1, alloc.TierMemory, 1<<30)
	var keys []string
	for i := range 10000 {
		k := fmt.Sprintf("k%d", i)
		g := ""
		if i%10 == 0 {
			g = "g"
		}
		put(t, s, 1, "", k, g, 64)
		keys = append(keys, k, fmt.Sprintf("absent%d", i))
	}
	if _, err := s.PutStart(1, 1, putReq("", "pending", "", 64)); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, "pending")
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return s, keys
}

// TestExistManyKeysMatchesGet: Exist and Contains over more keys than one lookup chunk answer, for
// each key, exactly whether Get finds it, and an unknown tenant has nothing.
func TestExistManyKeysMatchesGet(t *testing.T) {
	s, keys := existFixture(t)
	got, err := s.Exist(2, "", keys)
	if err != nil {
		t.Fatal(err)
	}
	stale := s.Contains("", keys)
	for i, k := range keys {
		_, gerr := s.Get(2, "", k)
		if want := gerr == nil; got[i] != want || stale[i] != want {
			t.Fatalf("key %q: Exist %v, Contains %v, Get %v", k, got[i], stale[i], gerr)
		}
	}
	none, err := s.Exist(2, "nobody", keys)
	if err != nil || len(none) != len(keys) {
		t.Fatalf("unknown tenant: %d answers, %v", len(none), err)
	}
	for i, e := range none {
		if e {
			t.Fatalf("unknown tenant: key %q exists", keys[i])
		}
	}
}

// TestExistAllocatesPerCallNotPerKey: an Exist of 20,001 keys, half of them absent, allocates a
// handful of times per call, not once per key.
func TestExistAllocatesPerCallNotPerKey(t *testing.T) {
	s, keys := existFixture(t)
	if n := testing.AllocsPerRun(3, func() { _, _ = s.Exist(2, "", keys) }); n > 4 {
		t.Fatalf("Exist of %d keys: %.0f allocations, want at most 4", len(keys), n)
	}
	if n := testing.AllocsPerRun(3, func() { _ = s.Contains("", keys) }); n > 4 {
		t.Fatalf("Contains of %d keys: %.0f allocations, want at most 4", len(keys), n)
	}
}
