package alloc

import (
	"bytes"
	"crypto/sha256"
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
// segment. Only TierMemory, TierNOF and TierLocalDisk are valid; the zero
// value is invalid.
type Tier uint8

// The tiers of SEMANTICS section 3 and of the replica tiers (TIERS.md). A
// TierLocalDisk segment is one client's SSD registration (MountLocalDisk): its
// extents account the owner's disk capacity, each one a file the owner keeps,
// and no put places into it.
const (
	TierMemory    Tier = 1
	TierNOF       Tier = 2
	TierLocalDisk Tier = 3
)

// numTiers sizes arrays indexed by Tier (index 0 unused).
const numTiers = 4

// Valid reports whether t is TierMemory, TierNOF or TierLocalDisk.
func (t Tier) Valid() bool { return t == TierMemory || t == TierNOF || t == TierLocalDisk }

// Placeable reports whether puts, copies, moves and arenas place into segments of t: TierMemory
// and TierNOF. A LOCAL_DISK replica is only ever added by its owner's offload report.
func (t Tier) Placeable() bool { return t == TierMemory || t == TierNOF }

// String returns "MEMORY", "NOF", "LOCAL_DISK", or "Tier(n)" for an invalid value.
func (t Tier) String() string {
	switch t {
	case TierMemory:
		return "MEMORY"
	case TierNOF:
		return "NOF"
	case TierLocalDisk:
		return "LOCAL_DISK"
	default:
		return fmt.Sprintf("Tier(%d)", uint8(t))
	}
}

// LocalDiskName is the name of every LOCAL_DISK segment.
const LocalDiskName = "local-disk"

// LocalDiskID is the segment id of a client's SSD registration: the first 16 bytes of
// SHA-256("metad local disk" || client), with the UUID version 8 and variant bits set. Each client
// has at most one registration, every node derives the same id, and it cannot be a client's own
// choice of a memory segment's id except by a hash collision.
func LocalDiskID(client ID) ID {
	h := sha256.New()
	h.Write([]byte("metad local disk"))
	h.Write(client[:])
	var id ID
	copy(id[:], h.Sum(nil))
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}

// LocalDisk returns the segment that records client's SSD registration: capacity bytes (rounded
// up to Align), reachable at endpoint, taking offload tasks when offload is set.
func LocalDisk(client ID, capacity uint64, endpoint string, offload bool) Segment {
	return Segment{ID: LocalDiskID(client), Name: LocalDiskName, Size: RoundUp(capacity), Endpoint: endpoint,
		Tier: TierLocalDisk, Owner: client, Offload: offload}
}
