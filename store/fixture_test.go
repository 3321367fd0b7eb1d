package store

import (
	"testing"
	"time"

	"metad/store/alloc"
)

// Shared test fixtures: ids, a store with mounted segments, put helpers.

const sec = int64(time.Second)

var (
	client1 = clientID(1)
	client2 = clientID(2)
)

func clientID(n byte) alloc.ID {
	var id alloc.ID
	id[0], id[15] = 0xc1, n
	return id
}

func segID(n byte) alloc.ID {
	var id alloc.ID
	id[0], id[15] = 0x5e, n
	return id
}

func newTestStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := New(DefaultConfig())
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// mount mounts segment n of tier with size bytes, owned by client1.
func mount(tb testing.TB, s *Store, n byte, tier alloc.Tier, size uint64) alloc.ID {
	tb.Helper()
	id := segID(n)
	if _, err := s.MountSegment(alloc.Segment{ID: id, Name: "seg", Base: 1 << 30 * uint64(n), Size: size,
		Endpoint: "127.0.0.1:7000", Tier: tier, Owner: client1}); err != nil {
		tb.Fatal(err)
	}
	return id
}

func putReq(tenant, key, group string, size uint64) PutStartRequest {
	return PutStartRequest{Tenant: tenant, Client: client1, Key: key, Group: group, Size: size,
		Config: ReplicaConfig{Memory: 1}}
}

// put runs PutStart then PutEnd and fails the test on any error.
func put(tb testing.TB, s *Store, now int64, tenant, key, group string, size uint64) []Replica {
	tb.Helper()
	reps, err := s.PutStart(now, 1, putReq(tenant, key, group, size))
	if err != nil {
		tb.Fatalf("PutStart %q: %v", key, err)
	}
	if err := s.PutEnd(now, PutEndRequest{Tenant: tenant, Client: client1, Key: key}); err != nil {
		tb.Fatalf("PutEnd %q: %v", key, err)
	}
	return reps
}

// wantReason fails unless err has reason r.
func wantReason(tb testing.TB, err error, r Reason) {
	tb.Helper()
	if got := ReasonOf(err); got != r {
		tb.Fatalf("reason = %s (%v), want %s", got, err, r)
	}
}
