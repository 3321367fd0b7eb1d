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
// segment. Only TierMemory, TierNOF, TierLocalDisk, TierDisk and TierDFS are
// valid; the zero value is invalid.
type Tier uint8

// The tiers of SEMANTICS section 3 and of the replica tiers (TIERS.md).
//   - TierLocalDisk: one client's SSD registration (MountLocalDisk). Its extents account the
//     owner's disk capacity, each one a file the owner keeps; no put places into it.
//   - TierDisk: a shared filesystem root (one directory readable by every client, mounted as a
//     segment whose endpoint is the directory). Its extents account the root's quota, each one the
//     file <endpoint>/<hex tenant>/<hex key>; every put places one replica in it while one is
//     mounted and has room (Place).
//   - TierDFS: a distributed filesystem pool (its endpoint names the pool's file). An extent is the
//     range [offset, offset+size) of that file; puts place them as they place NOF replicas.
//
// DISK and DFS segments are Shared: no client's expiry unmounts them.
const (
	TierMemory    Tier = 1
	TierNOF       Tier = 2
	TierLocalDisk Tier = 3
	TierDisk      Tier = 4
	TierDFS       Tier = 5
)

// NumTiers sizes arrays indexed by Tier (index 0 unused).
const NumTiers = 6

// Tiers lists the valid tiers in the order readers try them (Get): MEMORY, NOF, LOCAL_DISK,
// DISK, DFS.
var Tiers = [...]Tier{TierMemory, TierNOF, TierLocalDisk, TierDisk, TierDFS}

// Valid reports whether t is one of Tiers.
func (t Tier) Valid() bool { return t >= TierMemory && t <= TierDFS }

// Placeable reports whether puts, copies and moves place into segments of t by count: TierMemory,
// TierNOF and TierDFS. A LOCAL_DISK replica is only ever added by its owner's offload report, and a
// DISK one only by Place's own rule (one per put while a root is mounted). Arenas are granted on
// the Placeable tiers and DISK (store.ArenaTier).
func (t Tier) Placeable() bool { return t == TierMemory || t == TierNOF || t == TierDFS }

// InMemory reports whether t is a memory tier (MEMORY or NOF): what a reader reads without a
// disk, what offload copies from, and what promotion adds.
func (t Tier) InMemory() bool { return t == TierMemory || t == TierNOF }

// Shared reports whether a segment of t belongs to the cluster rather than to the client that
// mounted it (DISK, DFS): its replicas outlive their writer, so a client's expiry leaves it
// mounted and only an explicit unmount drops it.
func (t Tier) Shared() bool { return t == TierDisk || t == TierDFS }

// Addressed reports whether a segment of t is a range of its owner's address space (MEMORY, NOF),
// with a non-zero Base; segments of the other tiers are files and have Base 0.
func (t Tier) Addressed() bool { return t == TierMemory || t == TierNOF }

// String returns "MEMORY", "NOF", "LOCAL_DISK", "DISK", "DFS", or "Tier(n)" for an invalid value.
func (t Tier) String() string {
	switch t {
	case TierMemory:
		return "MEMORY"
	case TierNOF:
		return "NOF"
	case TierLocalDisk:
		return "LOCAL_DISK"
	case TierDisk:
		return "DISK"
	case TierDFS:
		return "DFS"
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
