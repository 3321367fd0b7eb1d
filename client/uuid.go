package client

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// UUID is a 16-byte client or segment id (SEMANTICS section 1). The zero UUID means "none".
type UUID [16]byte

// NewUUID returns a random (version 4) UUID.
func NewUUID() UUID {
	var u UUID
	_, _ = rand.Read(u[:]) // crypto/rand.Read never fails (it panics on a broken system source)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// ParseUUID parses the canonical form (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, either case) or 32 hex
// digits without dashes.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	h := s
	if len(s) == 36 {
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, fmt.Errorf("invalid UUID %q: want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", s)
		}
		h = strings.ReplaceAll(s, "-", "")
	}
	if len(h) != 32 {
		return u, fmt.Errorf("invalid UUID %q: want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx or 32 hex digits", s)
	}
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return UUID{}, fmt.Errorf("invalid UUID %q: not hex", s)
	}
	return u, nil
}

// UUIDFromBytes converts a 16-byte id from the wire; any other length is an error.
func UUIDFromBytes(b []byte) (UUID, error) {
	var u UUID
	if len(b) != len(u) {
		return u, fmt.Errorf("invalid UUID: %d bytes, want 16", len(b))
	}
	copy(u[:], b)
	return u, nil
}

// IsZero reports whether u is the zero UUID.
func (u UUID) IsZero() bool { return u == UUID{} }

// Bytes returns the 16 bytes of u in a new slice (the wire form).
func (u UUID) Bytes() []byte { return append([]byte(nil), u[:]...) }

// String returns the canonical lowercase form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// FormatID renders a 16-byte wire id as a UUID string, or as hex if it is not 16 bytes long.
func FormatID(b []byte) string {
	if u, err := UUIDFromBytes(b); err == nil {
		return u.String()
	}
	return hex.EncodeToString(b)
}
