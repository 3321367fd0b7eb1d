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
	}{{TierMemory, "MEMORY"}, {TierNOF, "NOF"}} {
		if tc.t.String() != tc.name {
			t.Errorf("%d.String() = %q", tc.t, tc.t.String())
		}
	}
	if Tier(0).Valid() || Tier(3).Valid() || Tier(0).String() != "Tier(0)" {
		t.Error("invalid tiers reported valid or misnamed")
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
