package alloc

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func TestParseID(t *testing.T) {
	want := ID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	for _, tc := range []struct {
		in  string
		ok  bool
		out ID
	}{
		{"01234567-89ab-cdef-fedc-ba9876543210", true, want},
		{"01234567-89AB-CDEF-FEDC-BA9876543210", true, want},
		{"0123456789abcdeffedcba9876543210", true, want},
		{"00000000-0000-0000-0000-000000000000", true, ID{}},
		{"", false, ID{}},
		{"01234567-89ab-cdef-fedc-ba987654321", false, ID{}},   // 35 chars
		{"01234567-89ab-cdef-fedc-ba98765432100", false, ID{}}, // 37 chars
		{"0123456789abcdeffedcba987654321", false, ID{}},       // 31 chars
		{"01234567089ab-cdef-fedc-ba987654321", false, ID{}},   // dash moved
		{"01234567-89ab-cdef-fedc_ba9876543210", false, ID{}},  // wrong separator
		{"0123456g-89ab-cdef-fedc-ba9876543210", false, ID{}},  // not hex
		{"0123456789abcdeffedcba987654321x", false, ID{}},
		{"{01234567-89ab-cdef-fedc-ba98765432}", false, ID{}}, // braces
		{"01234567-89ab-cdef-fedc-+a9876543210", false, ID{}},
	} {
		got, err := ParseID(tc.in)
		if tc.ok {
			if err != nil || got != tc.out {
				t.Errorf("ParseID(%q) = %v, %v; want %v", tc.in, got, err, tc.out)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseID(%q) error = %v, want ErrInvalidID", tc.in, err)
		}
	}
	if MustParseID(want.String()) != want {
		t.Error("MustParseID round trip")
	}
	if s := want.String(); s != "01234567-89ab-cdef-fedc-ba9876543210" {
		t.Errorf("String() = %q", s)
	}
	if !(ID{}).IsZero() || want.IsZero() {
		t.Error("IsZero wrong")
	}
}

func TestIDRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var id ID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "bytes"))
		got, err := ParseID(id.String())
		if err != nil || got != id {
			t.Fatalf("ParseID(%q) = %v, %v", id.String(), got, err)
		}
		var dashless [32]byte
		n := 0
		for _, c := range []byte(id.String()) {
			if c != '-' {
				dashless[n] = c
				n++
			}
		}
		if got, err := ParseID(string(dashless[:])); err != nil || got != id {
			t.Fatalf("ParseID(%q) = %v, %v", dashless, got, err)
		}
	})
}

func TestTierAndStrategyNames(t *testing.T) {
	for _, tc := range []struct {
		t    Tier
		name string
	}{{TierMemory, "MEMORY"}, {TierNOF, "NOF"}, {TierLocalDisk, "LOCAL_DISK"}, {TierDisk, "DISK"}, {TierDFS, "DFS"}} {
		if tc.t.String() != tc.name {
			t.Errorf("%d.String() = %q", tc.t, tc.t.String())
		}
	}
	if Tier(0).Valid() || Tier(6).Valid() || Tier(0).String() != "Tier(0)" {
		t.Error("invalid tiers reported valid or misnamed")
	}
	for _, tc := range []struct {
		t                                      Tier
		placeable, inMemory, shared, addressed bool
	}{
		{TierMemory, true, true, false, true},
		{TierNOF, true, true, false, true},
		{TierLocalDisk, false, false, false, false},
		{TierDisk, false, false, true, false},
		{TierDFS, true, false, true, false},
	} {
		if tc.t.Placeable() != tc.placeable || tc.t.InMemory() != tc.inMemory || tc.t.Shared() != tc.shared || tc.t.Addressed() != tc.addressed {
			t.Errorf("%s: Placeable %v InMemory %v Shared %v Addressed %v", tc.t, tc.t.Placeable(), tc.t.InMemory(), tc.t.Shared(), tc.t.Addressed())
		}
	}
	for _, tc := range []struct {
		s    Strategy
		name string
	}{{StrategyRandom, "random"}, {StrategyFreeRatioFirst, "free_ratio_first"}} {
		if tc.s.String() != tc.name {
			t.Errorf("%d.String() = %q", tc.s, tc.s.String())
		}
		if got, err := ParseStrategy(tc.name); err != nil || got != tc.s {
			t.Errorf("ParseStrategy(%q) = %v, %v", tc.name, got, err)
		}
	}
	for _, bad := range []string{"", "Random", "free-ratio-first"} {
		if _, err := ParseStrategy(bad); !errors.Is(err, ErrInvalidStrategy) {
			t.Errorf("ParseStrategy(%q) = %v", bad, err)
		}
	}
}

// TestLocalDiskID: a client's SSD registration has one id every node derives alike, distinct per
// client, a version 8 UUID; and a LOCAL_DISK segment takes no placement by name.
func TestLocalDiskID(t *testing.T) {
	a, b := ID{1}, ID{2}
	again := a
	if LocalDiskID(a) != LocalDiskID(again) || LocalDiskID(a) == LocalDiskID(b) || LocalDiskID(a) == a {
		t.Fatal("LocalDiskID is not a per-client function")
	}
	if id := LocalDiskID(a); id[6]>>4 != 8 || id[8]>>6 != 2 {
		t.Fatalf("LocalDiskID %s: not a version 8 UUID", id)
	}
	r := NewRegistry()
	seg := LocalDisk(a, 1000, "host-a:1", true)
	if seg.Size != 1024 || seg.Tier != TierLocalDisk || seg.Base != 0 {
		t.Fatalf("LocalDisk = %+v", seg)
	}
	if _, err := r.Mount(seg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.PlaceOn(64, []ID{seg.ID}); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("PlaceOn a LOCAL_DISK segment = %v, want ErrInvalidRequest", err)
	}
	if _, err := r.PlaceTier(TierLocalDisk, 64, 1, nil, StrategyRandom, 1); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("PlaceTier(LOCAL_DISK) = %v, want ErrInvalidRequest", err)
	}
	if p, err := r.Place(PlaceRequest{Size: 64, Memory: 1, Preferred: []ID{seg.ID}}); err == nil {
		t.Fatalf("Place with only a LOCAL_DISK segment mounted = %+v", p)
	}
	x, err := r.AllocIn(seg.ID, 100)
	if err != nil || x.Size != 128 || r.Used(TierLocalDisk) != 128 {
		t.Fatalf("AllocIn = %+v, %v; used %d", x, err, r.Used(TierLocalDisk))
	}
}

// TestLocalDiskOf: the owner's LOCAL_DISK segment is found without hashing, and goes with its unmount.
func TestLocalDiskOf(t *testing.T) {
	r := NewRegistry()
	owner := ID{9}
	if _, ok := r.LocalDiskOf(owner); ok {
		t.Fatal("an empty registry has a local disk")
	}
	seg := LocalDisk(owner, 1<<20, "h:1", true)
	if _, err := r.Mount(seg); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.LocalDiskOf(owner); !ok || got != seg || r.Offloaders() != 1 {
		t.Fatalf("LocalDiskOf = %+v, %v; offloaders %d", got, ok, r.Offloaders())
	}
	if _, err := r.Unmount(seg.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.LocalDiskOf(owner); ok || r.Offloaders() != 0 {
		t.Fatal("the local disk outlived its unmount")
	}
}
