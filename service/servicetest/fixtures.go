package servicetest

import (
	"context"
	"testing"
	"time"

	metadv1 "metad/proto/metadv1"
	"metad/store/alloc"
)

// The clients and segments the tests of service and server use.
var (
	ClientA = alloc.MustParseID("0a0a0a0a-0000-4000-8000-00000000000a")
	ClientB = alloc.MustParseID("0b0b0b0b-0000-4000-8000-00000000000b")
	SegA    = alloc.MustParseID("5a5a5a5a-0000-4000-8000-00000000005a")
	SegB    = alloc.MustParseID("5b5b5b5b-0000-4000-8000-00000000005b")
)

// Context returns a context that ends with the test or after 10 s.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// MountRequest mounts a 1 MiB MEMORY segment seg for client.
func MountRequest(client, seg alloc.ID) *metadv1.MountSegmentRequest {
	return &metadv1.MountSegmentRequest{ClientId: client[:], Segment: &metadv1.SegmentDesc{
		Id: seg[:], Name: "seg", Base: 1 << 20, Size: 1 << 20, Endpoint: "ep-" + seg.String()[:4], Tier: metadv1.Tier_TIER_MEMORY}}
}
