package fsm

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"metad/auth"
	metadv1 "metad/proto/metadv1"
	"metad/snapshot"
	"metad/store"
)

// applyCmds encodes commands into one log entry at index and applies it.
func applyCmds(t *testing.T, f *FSM, index uint64, now int64, cmds ...*metadv1.Command) []store.Result {
	t.Helper()
	data, err := EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: now, Seed: index, Commands: cmds})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(*EntryResult)
	if !ok || res.Index != index || len(res.Results) != len(cmds) {
		t.Fatalf("Apply returned %#v", res)
	}
	return res.Results
}

func TestApplyTable(t *testing.T) {
	f := newFSM(t)
	c1, seg := uuid(0xc1, 1), uuid(0x5e, 1)
	mountCmd := &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: seg, Name: "s", Base: 1 << 32, Size: 1 << 20, Endpoint: "e", Tier: metadv1.Tier_TIER_MEMORY, OwnerClientId: c1}}}}
	putStart := func(key string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte(key), Size: 100,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}
	}
	putEnd := func(key string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: c1, Key: []byte(key)}}}
	}
	cases := []struct {
		name  string
		cmd   *metadv1.Command
		want  store.Reason
		check func(t *testing.T, r store.Result)
	}{
		{"put without segments", putStart("k"), store.NoAvailableHandle, nil},
		{"mount", mountCmd, store.OK, func(t *testing.T, r store.Result) {
			if !r.Created {
				t.Fatal("mount not created")
			}
		}},
		{"mount again", mountCmd, store.OK, func(t *testing.T, r store.Result) {
			if r.Created {
				t.Fatal("repeat mount reported created")
			}
		}},
		{"put start", putStart("k"), store.OK, func(t *testing.T, r store.Result) {
			if len(r.Replicas) != 1 || r.Replicas[0].Status != store.Processing {
				t.Fatalf("replicas %+v", r.Replicas)
			}
		}},
		{"put start exists", putStart("k"), store.ObjectAlreadyExists, nil},
		{"put end", putEnd("k"), store.OK, nil},
		{"put end missing", putEnd("nope"), store.ObjectNotFound, nil},
		{"put start bad client", &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: []byte{1}, Key: []byte("x"),
			Size: 1, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}}, store.InvalidParams, nil},
		{"register", &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "a"}}}, store.OK,
			func(t *testing.T, r store.Result) {
				if r.Instance != 2 {
					t.Fatalf("instance %d", r.Instance)
				}
			}},
		{"register again", &metadv1.Command{Op: &metadv1.Command_RegisterTenant{RegisterTenant: &metadv1.RegisterTenant{Name: "a"}}},
			store.TenantAlreadyExists, nil},
		{"quota unknown", &metadv1.Command{Op: &metadv1.Command_SetQuota{SetQuota: &metadv1.SetQuota{Tenant: "zz", QuotaBytes: 1}}},
			store.TenantNotRegistered, nil},
		{"remove stale id", &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Key: []byte("k"), TenantInstanceId: 1,
			ObjectId: 99}}}, store.ObjectNotFound, nil},
		{"remove", &metadv1.Command{Op: &metadv1.Command_Remove{Remove: &metadv1.Remove{Key: []byte("k"), TenantInstanceId: 1,
			ObjectId: 1}}}, store.OK, nil},
		{"unmount other owner", &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
			ClientId: uuid(0xc1, 9), SegmentIds: [][]byte{seg}}}}, store.SegmentOwnedByOtherClient, nil},
		{"unmount", &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
			ClientId: c1, SegmentIds: [][]byte{seg}}}}, store.OK, func(t *testing.T, r store.Result) {
			if r.Unmount.Segments != 1 {
				t.Fatalf("unmount %+v", r.Unmount)
			}
		}},
		{"unmount gone", &metadv1.Command{Op: &metadv1.Command_UnmountSegment{UnmountSegment: &metadv1.UnmountSegment{
			ClientId: c1, SegmentIds: [][]byte{seg}}}}, store.SegmentNotFound, nil},
	}
	for i, c := range cases {
		r := applyCmds(t, f, uint64(i+1), int64(i+1)*1e9, c.cmd)[0]
		if r.Reason != c.want {
			t.Fatalf("%s: reason %s (%s), want %s", c.name, r.Reason, r.Message, c.want)
		}
		if c.check != nil {
			c.check(t, r)
		}
		if idx, _ := f.Applied(); idx != uint64(i+1) {
			t.Fatalf("%s: applied index %d", c.name, idx)
		}
	}
	if err := f.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestBatchResultsInOrder(t *testing.T) {
	f := newFSM(t)
	logs := genLogs(t, 1, 1) // setup only
	f.Apply(logs[0])
	c1 := genClients[0]
	applyCmds(t, f, 2, 2e9, &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{
		ClientId: c1, Key: []byte("x"), Size: 1, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}})
	rs := applyCmds(t, f, 3, 2e9, &metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: &metadv1.BatchPutStart{
		ClientId: c1, Config: &metadv1.ReplicaConfig{MemoryReplicas: 1},
		Items: []*metadv1.BatchPutStart_Item{{Key: []byte("a"), Size: 1}, {Key: []byte("x"), Size: 1}, {Key: []byte("b"), Size: 1}}}}})
	items := rs[0].Items
	if len(items) != 3 || items[0].Reason != store.OK || items[1].Reason != store.ObjectAlreadyExists || items[2].Reason != store.OK {
		t.Fatalf("batch items %+v", items)
	}
}

func TestUndecodableEntryPanicsWithIndex(t *testing.T) {
	f := newFSM(t)
	for _, data := range [][]byte{{0xff, 0xff, 0xff}, mustEncode(t, &metadv1.Envelope{FormatVersion: 99})} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), "log index 7") {
					t.Fatalf("panic %v does not name the index", r)
				}
			}()
			f.Apply(&raft.Log{Index: 7, Term: 1, Type: raft.LogCommand, Data: data})
		}()
	}
	if f.Apply(&raft.Log{Index: 8, Type: raft.LogNoop}) != nil {
		t.Fatal("a non-command entry returned a result")
	}
}

func mustEncode(t *testing.T, e *metadv1.Envelope) []byte {
	t.Helper()
	b, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeterminism applies one seeded log to two FSMs, one entry at a time and in random batches,
// and requires identical results and byte-identical snapshots.
func TestDeterminism(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1000
	}
	for _, seed := range []uint64{1, 2, 3} {
		logs := genLogs(t, seed, n)
		a, b := newFSM(t), newFSM(t)
		var ra, rb []interface{}
		for _, l := range logs {
			ra = append(ra, a.Apply(l))
		}
		r := rand.New(rand.NewPCG(seed, 99))
		for i := 0; i < len(logs); {
			k := min(len(logs)-i, 1+r.IntN(64))
			rb = append(rb, b.ApplyBatch(logs[i:i+k])...)
			i += k
		}
		okCount := 0
		for i := range ra {
			x, y := ra[i].(*EntryResult), rb[i].(*EntryResult)
			for j := range x.Results {
				if x.Results[j].Reason != y.Results[j].Reason || x.Results[j].Message != y.Results[j].Message {
					t.Fatalf("seed %d entry %d command %d: %v vs %v", seed, i, j, x.Results[j], y.Results[j])
				}
				if x.Results[j].Reason == store.OK {
					okCount++
				}
			}
		}
		sa, sb := snapshotBytes(t, a), snapshotBytes(t, b)
		if !bytes.Equal(sa, sb) {
			t.Fatalf("seed %d: snapshots differ (%d vs %d bytes)", seed, len(sa), len(sb))
		}
		if err := a.Store().CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		info, err := snapshot.Inspect(bytes.NewReader(sa))
		if err != nil {
			t.Fatal(err)
		}
		if info.Objects == 0 || okCount < n/4 {
			t.Fatalf("seed %d: the log did too little: %d objects, %d commands applied OK", seed, info.Objects, okCount)
		}
		t.Logf("seed %d: %d entries, %d OK commands, %d objects, %d groups, snapshot %d bytes", seed, n, okCount, info.Objects, info.Groups, len(sa))
	}
}

// TestSnapshotRoundTrip: Snapshot -> Persist -> Restore into a fresh FSM gives equal state and a
// byte-identical snapshot, and the restored FSM goes on applying exactly like the original.
func TestSnapshotRoundTrip(t *testing.T) {
	logs := genLogs(t, 7, 3000)
	a := newFSM(t)
	a.ApplyBatch(logs[:2000])
	data := snapshotBytes(t, a)
	b := newFSM(t)
	if err := b.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if ia, _ := a.Applied(); func() uint64 { ib, _ := b.Applied(); return ib }() != ia {
		t.Fatal("restored applied index differs")
	}
	if again := snapshotBytes(t, b); !bytes.Equal(data, again) {
		t.Fatal("re-snapshot after restore differs")
	}
	ra, rb := a.ApplyBatch(logs[2000:]), b.ApplyBatch(logs[2000:])
	for i := range ra {
		x, y := ra[i].(*EntryResult), rb[i].(*EntryResult)
		for j := range x.Results {
			if x.Results[j].Reason != y.Results[j].Reason {
				t.Fatalf("after restore, entry %d command %d: %s vs %s", 2000+i, j, x.Results[j].Reason, y.Results[j].Reason)
			}
		}
	}
	if !bytes.Equal(snapshotBytes(t, a), snapshotBytes(t, b)) {
		t.Fatal("states diverged after restore")
	}
}

// TestGoldenSnapshotV1: a file of format version 1 (written before client sessions) still reads, as
// the same state with no session.
func TestGoldenSnapshotV1(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden-v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 1 || info.Index != 300 || info.Objects == 0 || len(info.Tenants) != 3 || len(info.Segments) == 0 || len(info.Members) != 3 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Sessions(); n != 0 {
		t.Fatalf("%d sessions from a version 1 file", n)
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), stateOnly(t, data)) {
		t.Fatal("a version 1 file re-encodes to another state")
	}
}

// TestGoldenSnapshotV2: a file of format version 2 (client sessions, written before the auth
// state) still reads, as the same state with its sessions and no key or role binding; a restored
// session keeps its results, and has no known owner (its file recorded none).
func TestGoldenSnapshotV2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "golden-v2.snap"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 2 || info.Index != 300 || info.Objects == 0 || len(info.Tenants) < 2 || len(info.Members) != 3 || info.Sessions != 1 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), stateOnly(t, data)) {
		t.Fatal("a version 2 file re-encodes to another state")
	}
	if a := f.Auth(); a.Revision() != 0 || len(a.Keys()) != 0 || len(a.Principals()) != 0 {
		t.Fatalf("a version 2 file restores auth state: revision %d", a.Revision())
	}
	sessions, results := f.Sessions()
	if sessions != 1 || results == 0 {
		t.Fatalf("%d sessions keeping %d results, want 1 keeping some", sessions, results)
	}
	src := newFSM(t)
	src.ApplyBatch(genLogsRules(t, 42, 300, rulesLimits))
	for seq := uint64(1); seq < 200; seq++ {
		h := &metadv1.SessionHeader{SessionId: 1, Seq: seq}
		want, kept := keptAnswer(src, h)
		got, ok := keptAnswer(f, h)
		if kept != ok || kept && (got.Reason != want.Reason || len(got.Replicas) != len(want.Replicas) || len(got.Items) != len(want.Items)) {
			t.Fatalf("seq %d: restored answer %+v (%v), original %+v (%v)", seq, got, ok, want, kept)
		}
	}
	if f.SessionOpen(1, "") {
		t.Fatal("a session of a version 2 file is open to the leader's callers; its owner is not known")
	}
}

// keptAnswer is the answer f's session keeps for h's seq, whoever opened the session.
func keptAnswer(f *FSM, h *metadv1.SessionHeader) (store.Result, bool) {
	t := f.State().sessions
	t.mu.RLock()
	defer t.mu.RUnlock()
	if ss := t.byID[h.GetSessionId()]; ss != nil {
		if b := ss.answer(h.GetSeq()); b != nil {
			r, err := decodeResult(b)
			return r, err == nil
		}
	}
	return store.Result{}, false
}

// goldenV3Source is the state of golden-v3.snap: genLogs(42, 300), written before the session
// owner rule, and then auth commands.
func goldenV3Source(t *testing.T) *FSM {
	f := newFSM(t)
	f.ApplyBatch(genLogsRules(t, 42, 300, rulesLimits))
	idx := uint64(300)
	for _, c := range []*metadv1.Command{
		createKeyCmd("00000000000000aa", "alice", secretOf('a'), 1_700_000_000_000, 0),
		createKeyCmd("00000000000000bb", auth.RootPrincipal, secretOf('r'), 1_700_000_000_000, 1_800_000_000_000),
		createKeyCmd("00000000000000cc", "gone", secretOf('g'), 1_700_000_000_000, 0),
		revokeKeyCmd("00000000000000cc"),
		grantCmd("alice", "tenant:t1"),
		grantCmd("alice", "worker:"+workerID),
		grantCmd("bob", "reader"),
	} {
		applyAuthCmd(t, f, &idx, c)
	}
	return f
}

// TestGoldenSnapshotV3: a file of format version 3 (the auth state, written before closing
// segments and replica tasks) still reads, as the same state with every segment open and no copy
// or move in progress; its state re-encodes as the source's does in the current format.
func TestGoldenSnapshotV3(t *testing.T) {
	path := filepath.Join("testdata", "golden-v3.snap")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	info, err := snapshot.Inspect(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if info.FormatVersion != 3 || info.Index != 307 || info.Objects == 0 || len(info.Members) != 3 || info.Sessions != 1 ||
		info.Keys != 2 || info.RoleBindings != 2 || info.AuthRevision != 7 {
		t.Fatalf("golden snapshot reads as %+v", info)
	}
	f := newFSM(t)
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), stateOnly(t, data)) {
		t.Fatal("a version 3 file re-encodes to another state")
	}
	if !bytes.Equal(snapshotBytes(t, goldenV3Source(t)), snapshotBytes(t, f)) {
		t.Fatal("the golden file's source state encodes to another state than the file restores")
	}
	for _, sg := range f.Store().Segments().List() {
		if sg.Closing || sg.UnmountAt != 0 {
			t.Fatalf("a version 3 file restores a closing segment: %+v", sg)
		}
	}
	a := f.Auth()
	if a.Revision() != 7 || !slices.Equal(a.Roles("alice"), []auth.Role{{Kind: auth.RoleTenant, Arg: "t1"}, {Kind: auth.RoleWorker, Arg: workerID}}) {
		t.Fatalf("restored auth: revision %d, alice %v", a.Revision(), a.Roles("alice"))
	}
	if k, err := a.VerifyToken(auth.FormatToken("00000000000000bb", secretOf('r')), 1_750_000_000_000); err != nil || k.Principal != auth.RootPrincipal {
		t.Fatalf("restored key: %+v, %v", k, err)
	}
	if _, err := a.VerifyToken(auth.FormatToken("00000000000000cc", secretOf('g')), 1_750_000_000_000); !errors.Is(err, auth.ErrUnknownKey) {
		t.Fatalf("revoked key after restore: %v", err)
	}
}

// TestBadSnapshotsAreRefused: every kind of damage is refused with an error naming it, and the FSM
// keeps its state.
func TestBadSnapshotsAreRefused(t *testing.T) {
	src := newFSM(t)
	src.ApplyBatch(genLogs(t, 5, 500))
	good := snapshotBytes(t, src)
	if len(good) < 1000 {
		t.Fatalf("source snapshot of %d bytes is too small to damage meaningfully", len(good))
	}

	f := newFSM(t)
	f.ApplyBatch(genLogs(t, 6, 200))
	before := snapshotBytes(t, f)

	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 0x40
	future := bytes.Clone(good)
	future[11] = 9 // format version 9
	trailing := append(bytes.Clone(good), 0)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, snapshot.ErrTruncated},
		{"truncated", good[:len(good)-100], snapshot.ErrTruncated},
		{"no checksum", good[:len(good)-4], snapshot.ErrTruncated},
		{"wrong magic", append([]byte("ETCDSNAP"), good[8:]...), snapshot.ErrBadMagic},
		{"future version", future, snapshot.ErrFutureVersion},
		{"bit flip", flip, nil}, // corrupt or checksum, depending on where the bit lands
		{"trailing bytes", trailing, snapshot.ErrCorrupt},
	}
	for _, c := range cases {
		err := f.Restore(io.NopCloser(bytes.NewReader(c.data)))
		if err == nil {
			t.Fatalf("%s: accepted", c.name)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("%s: error %v, want %v", c.name, err, c.want)
		}
		if c.want == nil && !errors.Is(err, snapshot.ErrCorrupt) && !errors.Is(err, snapshot.ErrChecksum) {
			t.Fatalf("%s: error %v is neither corrupt nor checksum", c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
		if !bytes.Equal(snapshotBytes(t, f), before) {
			t.Fatalf("%s: a refused restore changed the FSM", c.name)
		}
	}
}

func FuzzDecodeAndApply(f *testing.F) {
	for _, l := range genLogs(f, 11, 40) {
		f.Add(l.Data)
	}
	// The auth commands, with a stale revision on the last.
	stale := grantCmd("b", "tenant:t")
	stale.AuthRevision = 1
	auth, err := EncodeEnvelope(&metadv1.Envelope{LeaderTimeUnixNano: 1, Commands: []*metadv1.Command{
		createKeyCmd("00000000000000aa", "a", secretOf('a'), 1, 0), grantCmd("a", "worker:"+workerID),
		revokeRoleCmd("a", "worker:"+workerID), revokeKeyCmd("00000000000000aa"), stale}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(auth)
	setup := genLogs(f, 11, 1)[0]
	f.Fuzz(func(t *testing.T, data []byte) {
		envl, err := DecodeEnvelope(data)
		if err != nil {
			return // garbage is a clear error; the FSM would panic with the index, by design
		}
		m := newFSM(t)
		m.Apply(setup)
		// Any decodable command must apply without breaking the store: rejections are values.
		m.Apply(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: mustEncodeT(t, envl)})
		if err := m.Store().CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	})
}

func mustEncodeT(t *testing.T, e *metadv1.Envelope) []byte {
	b, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzSnapshotReader(f *testing.F) {
	src := newFSM(f)
	src.ApplyBatch(genLogs(f, 3, 60))
	var sink memSink
	snap, _ := src.Snapshot()
	if err := snap.Persist(&sink); err != nil {
		f.Fatal(err)
	}
	f.Add(sink.Bytes())
	f.Add([]byte("METADSNP"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, _, _, err := ReadSnapshot(store.DefaultConfig(), bytes.NewReader(data))
		if err == nil {
			if ierr := s.CheckInvariants(); ierr != nil {
				t.Fatalf("accepted a snapshot that breaks invariants: %v", ierr)
			}
		}
		_, _ = snapshot.Inspect(bytes.NewReader(data))
	})
}
