package alloc

import (
	"bytes"
	"encoding/hex"
	"fmt"
)

// ID is an immutable value, safe to copy and share between goroutines. It is
// the 16-byte UUID that names a segment or a client. The zero ID is never a
// valid segment or owner. IDs order by their bytes (Compare).
type ID [16]byte

// ParseID accepts the canonical form 8-4-4-4-12 hex digits (either case) or
// 32 hex digits with no dashes. Anything else fails with ErrInvalidID.
func ParseID(s string) (ID, error) {
	var id ID
	var digits [32]byte
	switch len(s) {
	case 32:
		copy(digits[:], s)
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return ID{}, fmt.Errorf("parse id %q: dashes not at 8-4-4-4-12: %w", s, ErrInvalidID)
		}
		n := copy(digits[:], s[0:8])
		n += copy(digits[n:], s[9:13])
		n += copy(digits[n:], s[14:18])
		n += copy(digits[n:], s[19:23])
		copy(digits[n:], s[24:36])
	default:
		return ID{}, fmt.Errorf("parse id %q: length %d, want 36 or 32: %w", s, len(s), ErrInvalidID)
	}
	if _, err := hex.Decode(id[:], digits[:]); err != nil {
		return ID{}, fmt.Errorf("parse id %q: not hex: %w", s, ErrInvalidID)
	}
	return id, nil
}

// MustParseID is ParseID that panics on error; for tests and constants.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// String returns the canonical lower-case 8-4-4-4-12 form.
func (id ID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], id[10:16])
	return string(b[:])
}

// IsZero reports whether id is all zero bytes.
func (id ID) IsZero() bool { return id == ID{} }

// Compare orders IDs by their bytes: -1, 0 or +1.
func Compare(a, b ID) int { return bytes.Compare(a[:], b[:]) }

// Tier is an immutable value, safe to share. It is the storage class of a
// segment. Only TierMemory and TierNOF are valid; the zero value is invalid.
type Tier uint8

// The tiers of SEMANTICS section 3.
const (
	TierMemory Tier = 1
	TierNOF    Tier = 2
)

// numTiers sizes arrays indexed by Tier (index 0 unused).
const numTiers = 3

// Valid reports whether t is TierMemory or TierNOF.
func (t Tier) Valid() bool { return t == TierMemory || t == TierNOF }

// String returns "MEMORY", "NOF", or "Tier(n)" for an invalid value.
func (t Tier) String() string {
	switch t {
	case TierMemory:
		return "MEMORY"
	case TierNOF:
		return "NOF"
	default:
		return fmt.Sprintf("Tier(%d)", uint8(t))
	}
}
