package alloc

import (
	"errors"
	"fmt"
)

// Errors returned by this package. They are always wrapped with context
// (fmt.Errorf("...: %w")); match them with errors.Is. The server maps them to
// status codes in one place; this package knows nothing of gRPC.
var (
	// ErrInvalidID: a string is not a UUID (8-4-4-4-12 hex or 32 hex digits).
	ErrInvalidID = errors.New("invalid id")
	// ErrInvalidStrategy: a placement strategy name or value is unknown.
	ErrInvalidStrategy = errors.New("invalid placement strategy")
	// ErrInvalidSegment: a segment to mount fails validation; the error is
	// a *SegmentError naming the field.
	ErrInvalidSegment = errors.New("invalid segment")
	// ErrCapacityOverflow: mounting the segment would take its tier's total capacity past
	// 2^64-1 bytes.
	ErrCapacityOverflow = errors.New("tier capacity would overflow")
	// ErrInvalidRequest: a placement request is out of the limits of
	// SEMANTICS section 1 (size, replica counts, strategy).
	ErrInvalidRequest = errors.New("invalid placement request")
	// ErrSegmentOwned: the segment id is mounted by another client.
	ErrSegmentOwned = errors.New("segment owned by another client")
	// ErrSegmentConflict: the segment id is mounted by the same client with
	// different fields.
	ErrSegmentConflict = errors.New("segment already mounted with different fields")
	// ErrSegmentNotFound: no mounted segment has that id.
	ErrSegmentNotFound = errors.New("segment not found")
	// ErrNotAllocated: a range to free is not entirely allocated (part of it
	// is free, misaligned, empty or outside the segment).
	ErrNotAllocated = errors.New("range not allocated")
	// ErrNotFree: a range to reserve is not entirely free (part of it is
	// allocated, misaligned, empty or outside the segment).
	ErrNotFree = errors.New("range not free")
	// ErrNoSpace: no segment of a requested tier could hold one replica. Place
	// returns it as a *NoSpaceError, which says more.
	ErrNoSpace = errors.New("no space")
)

// NoSpaceError is a plain value: the error of a Place that found no room for
// one replica on a tier. It matches ErrNoSpace. Fits reports whether some
// mounted segment of that tier is at least Size bytes: only then can freeing
// space in the tier make the same placement succeed. An object larger than
// every segment (or a tier with none) never fits, however much is freed. Closing
// segments (Registry.SetClosing) take no allocation and count for neither.
type NoSpaceError struct {
	Tier     Tier
	Size     uint64 // the replica size asked for, rounded up to Align
	Segments int    // segments of the tier mounted and not closing
	Tried    int    // candidates tried
	Fits     bool   // some segment of the tier, not closing, has at least Size bytes in all
}

func (e *NoSpaceError) Error() string {
	if !e.Fits {
		return fmt.Sprintf("place %d bytes on tier %s: larger than each of the %d mounted segments: %v",
			e.Size, e.Tier, e.Segments, ErrNoSpace)
	}
	return fmt.Sprintf("place %d bytes on tier %s: none of %d mounted segments (%d tried) has a free span that large: %v",
		e.Size, e.Tier, e.Segments, e.Tried, ErrNoSpace)
}

// Unwrap returns ErrNoSpace, so that errors.Is(err, ErrNoSpace) holds.
func (e *NoSpaceError) Unwrap() error { return ErrNoSpace }
