package store

import (
	"testing"

	"metad/store/alloc"
)

// The Check* methods refuse what the state certainly refuses and nothing else: each case names a
// state, a check and the reason it must give (OK: not refused), and the operation itself is then
// applied to the same state and must agree whenever the check refuses.
func TestChecksRefuseOnlyCertainRejections(t *testing.T) {
	const now = 1000 * sec
	setup := func(t *testing.T) *Store {
		s := newTestStore(t)
		mount(t, s, 1, alloc.TierMemory, 1<<20)
		put(t, s, now, "", "done", "", 100)
		put(t, s, now, "", "member", "g", 100)
		if _, err := s.PutStart(now, 1, putReq("", "writing", "", 100)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RegisterTenant("t2", 0); err != nil {
			t.Fatal(err)
		}
		return s
	}
	end := func(key string, client alloc.ID, tier alloc.Tier) PutEndRequest {
		return PutEndRequest{Tenant: "", Client: client, Key: key, Tier: tier}
	}
	seg := alloc.Segment{ID: segID(1), Name: "seg", Base: 1 << 30, Size: 1 << 20, Endpoint: "127.0.0.1:7000", Tier: alloc.TierMemory, Owner: client1}
	other := seg
	other.Owner = client2
	for _, tc := range []struct {
		name  string
		check func(s *Store) error
		apply func(s *Store) error // at a time after the check: a write in progress is past the discard timeout
		want  Reason
	}{
		{"PutStart on a complete object", func(s *Store) error { return s.CheckPutStart(putReq("", "done", "", 64)) },
			func(s *Store) error { _, err := s.PutStart(now+60*sec, 1, putReq("", "done", "", 64)); return err }, ObjectAlreadyExists},
		// Its write may be discarded by the time the put commits: the log decides.
		{"PutStart on a write in progress", func(s *Store) error { return s.CheckPutStart(putReq("", "writing", "", 64)) },
			func(s *Store) error { _, err := s.PutStart(now+60*sec, 1, putReq("", "writing", "", 64)); return err }, OK},
		{"PutStart on an unknown tenant", func(s *Store) error { return s.CheckPutStart(putReq("nope", "k", "", 64)) },
			func(s *Store) error { _, err := s.PutStart(now, 1, putReq("nope", "k", "", 64)); return err }, TenantNotRegistered},
		{"PutEnd without PutStart", func(s *Store) error { return s.CheckPutEnd(end("absent", client1, 0)) },
			func(s *Store) error { return s.PutEnd(now, end("absent", client1, 0)) }, ObjectNotFound},
		{"PutEnd by another client", func(s *Store) error { return s.CheckPutEnd(end("writing", client2, 0)) },
			func(s *Store) error { return s.PutEnd(now, end("writing", client2, 0)) }, IllegalClient},
		{"PutEnd repeated on a complete object", func(s *Store) error { return s.CheckPutEnd(end("done", client1, 0)) },
			func(s *Store) error { return s.PutEnd(now, end("done", client1, 0)) }, OK},
		{"PutEnd of a tier the object lacks", func(s *Store) error { return s.CheckPutEnd(end("done", client1, alloc.TierNOF)) },
			func(s *Store) error { return s.PutEnd(now, end("done", client1, alloc.TierNOF)) }, InvalidWrite},
		{"PutRevoke of a complete object", func(s *Store) error { return s.CheckPutRevoke(end("done", client1, 0)) },
			func(s *Store) error { return s.PutRevoke(now, end("done", client1, 0)) }, InvalidWrite},
		{"PutRevoke of a write in progress", func(s *Store) error { return s.CheckPutRevoke(end("writing", client1, 0)) },
			func(s *Store) error { return s.PutRevoke(now, end("writing", client1, 0)) }, OK},
		{"UpsertStart in another group", func(s *Store) error { return s.CheckUpsertStart(putReq("", "member", "", 64)) },
			func(s *Store) error { _, err := s.UpsertStart(now, 1, putReq("", "member", "", 64)); return err }, ObjectAlreadyExists},
		{"UpsertStart on a write in progress", func(s *Store) error { return s.CheckUpsertStart(putReq("", "writing", "", 64)) },
			func(s *Store) error {
				_, err := s.UpsertStart(now+60*sec, 1, putReq("", "writing", "", 64))
				return err
			}, InvalidWrite},
		{"UpsertStart of a complete object", func(s *Store) error { return s.CheckUpsertStart(putReq("", "done", "", 64)) },
			func(s *Store) error { _, err := s.UpsertStart(now, 1, putReq("", "done", "", 64)); return err }, OK},
		{"RegisterTenant of a taken name", func(s *Store) error { return s.CheckRegisterTenant("t2") },
			func(s *Store) error { _, err := s.RegisterTenant("t2", 0); return err }, TenantAlreadyExists},
		{"UnregisterTenant of an unknown tenant", func(s *Store) error { return s.CheckUnregisterTenant("nope", true) },
			func(s *Store) error { _, err := s.UnregisterTenant("nope", true); return err }, TenantNotRegistered},
		{"UnregisterTenant of a tenant with objects", func(s *Store) error { return s.CheckUnregisterTenant("default", false) },
			func(s *Store) error { _, err := s.UnregisterTenant("default", false); return err }, TenantNotEmpty},
		{"SetQuota of an unknown tenant", func(s *Store) error { return s.CheckSetQuota("nope") },
			func(s *Store) error { return s.SetQuota("nope", 1) }, TenantNotRegistered},
		{"MountSegment owned by another client", func(s *Store) error { return s.CheckMountSegment(other) },
			func(s *Store) error { _, err := s.MountSegment(other); return err }, SegmentOwnedByOtherClient},
		{"MountSegment repeated", func(s *Store) error { return s.CheckMountSegment(seg) },
			func(s *Store) error { _, err := s.MountSegment(seg); return err }, OK},
		{"UnmountSegment of an unknown segment", func(s *Store) error { return s.CheckUnmount(client1, []alloc.ID{segID(9)}) },
			nil, SegmentNotFound},
		{"UnmountSegment of another client's segment", func(s *Store) error { return s.CheckUnmount(client2, []alloc.ID{segID(1)}) },
			nil, SegmentOwnedByOtherClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			err := tc.check(s)
			wantReason(t, err, tc.want)
			if err != nil && tc.apply != nil {
				wantReason(t, tc.apply(s), tc.want)
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
