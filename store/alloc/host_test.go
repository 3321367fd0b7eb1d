package alloc

import (
	"slices"
	"testing"
)

func TestHostOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"10.0.0.7:9000", "10.0.0.7"},
		{"10.0.0.7", "10.0.0.7"},
		{"Node-7.Example:17812", "node-7.example"},
		{"node-7", "node-7"},
		{"[::1]:9000", "::1"},
		{"::1", "::1"},
		{"rdma://node-7/mlx5_0", "rdma://node-7/mlx5_0"},
		{":9000", ":9000"},                 // no host part: the whole endpoint
		{"node-7:http", "node-7:http"},     // not a decimal port
		{"node-7:123456", "node-7:123456"}, // nor this
	} {
		if got := HostOf(c.in); got != c.want {
			t.Errorf("HostOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestHostSegments: only the host's segments of the tier asked, in the strategy's order (random:
// a permutation that depends on the seed; free_ratio_first: emptiest first, ties by ID), at most
// MaxHostSegments of them.
func TestHostSegments(t *testing.T) {
	r := NewRegistry()
	var onHost []ID
	for n := 1; n <= 6; n++ {
		s := testSeg(n, TierMemory, 1<<20, 1) // endpoint 10.0.0.1:9000
		if n%2 == 0 {
			s.Endpoint = "10.0.0.2:9000"
		} else {
			onHost = append(onHost, s.ID)
		}
		mustMount(t, r, s)
	}
	nof := testSeg(7, TierNOF, 1<<20, 1)
	mustMount(t, r, nof)
	if got := r.HostSegments("10.0.0.9", TierMemory, StrategyRandom, 1); got != nil {
		t.Fatalf("segments of an unknown host: %v", got)
	}
	if got := r.HostSegments("", TierMemory, StrategyRandom, 1); got != nil {
		t.Fatalf("segments of no host: %v", got)
	}
	if got := r.HostSegments("10.0.0.1", TierNOF, StrategyRandom, 1); !slices.Equal(got, []ID{nof.ID}) {
		t.Fatalf("NOF segments of the host: %v, want %v", got, []ID{nof.ID})
	}
	orders := map[string]bool{}
	for seed := range uint64(32) {
		got := r.HostSegments("10.0.0.1:1234", TierMemory, StrategyRandom, seed)
		sorted := slices.Clone(got)
		slices.SortFunc(sorted, Compare)
		if !slices.Equal(sorted, onHost) {
			t.Fatalf("seed %d: %v, want a permutation of %v", seed, got, onHost)
		}
		if again := r.HostSegments("10.0.0.1", TierMemory, StrategyRandom, seed); !slices.Equal(again, got) {
			t.Fatalf("seed %d gave %v, then %v", seed, got, again)
		}
		orders[string(got[0][:])+string(got[1][:])] = true
	}
	if len(orders) < 3 {
		t.Fatalf("32 seeds gave %d orders: the random order does not depend on the seed", len(orders))
	}
	// Fill the first host segment halfway: free_ratio_first puts it last.
	if _, ok := r.segs[onHost[0]].alloc.Alloc(1 << 19); !ok {
		t.Fatal("alloc")
	}
	want := []ID{onHost[1], onHost[2], onHost[0]}
	if got := r.HostSegments("10.0.0.1", TierMemory, StrategyFreeRatioFirst, 0); !slices.Equal(got, want) {
		t.Fatalf("free_ratio_first: %v, want %v", got, want)
	}

	many := NewRegistry()
	for n := 1; n <= MaxHostSegments+5; n++ {
		mustMount(t, many, testSeg(n, TierMemory, 1<<20, 1))
	}
	if got := many.HostSegments("10.0.0.1", TierMemory, StrategyRandom, 7); len(got) != MaxHostSegments {
		t.Fatalf("%d segments, want at most %d", len(got), MaxHostSegments)
	}
}
