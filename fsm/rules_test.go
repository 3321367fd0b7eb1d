package fsm

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	metadv1 "metad/proto/metadv1"
	"metad/store"
	"metad/store/alloc"
)

// applyOld applies commands as one log entry written before Envelope.rules_version existed
// (rules 0), as a log replayed after an upgrade holds them.
func applyOld(t *testing.T, f *FSM, index uint64, cmds ...*metadv1.Command) []store.Result {
	t.Helper()
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(&metadv1.Envelope{
		FormatVersion: metadv1.EnvelopeFormatVersion, LeaderTimeUnixNano: 1, Seed: index, Commands: cmds})
	if err != nil {
		t.Fatal(err)
	}
	res, ok := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).(*EntryResult)
	if !ok || len(res.Results) != len(cmds) {
		t.Fatalf("Apply returned %#v", res)
	}
	return res.Results
}

func mountCmd(id []byte, name, endpoint string, base, size uint64) *metadv1.Command {
	return &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{Segment: &metadv1.SegmentDesc{
		Id: id, Name: name, Base: base, Size: size, Endpoint: endpoint, Tier: metadv1.Tier_TIER_MEMORY,
		OwnerClientId: uuid(0xc1, 1)}}}}
}

func TestEncodeEnvelopeStampsRules(t *testing.T) {
	e, err := DecodeEnvelope(mustEncode(t, &metadv1.Envelope{}))
	if err != nil {
		t.Fatal(err)
	}
	if e.GetRulesVersion() != metadv1.RulesVersion || e.GetFormatVersion() != metadv1.EnvelopeFormatVersion {
		t.Fatalf("encoded envelope has rules %d format %d", e.GetRulesVersion(), e.GetFormatVersion())
	}
}

// TestSegmentLimitsOnApply: a mount that breaks a segment limit of SEMANTICS section 1 is refused
// on apply (INVALID_PARAMS naming the field, nothing changed) when its entry was written under the
// limits, and applies as it did when its entry was written before them; either way the outcome
// depends on the entry alone, and a snapshot holding such a segment restores.
func TestSegmentLimitsOnApply(t *testing.T) {
	long := strings.Repeat("n", 1<<20)
	cases := []struct {
		field string
		cmd   *metadv1.Command
	}{
		{"segment.name", mountCmd(uuid(0x5e, 1), long, "e", 1<<32, 1<<20)},
		{"segment.name", mountCmd(uuid(0x5e, 2), "", "e", 2<<32, 1<<20)},
		{"segment.name", mountCmd(uuid(0x5e, 3), "a\nb", "e", 3<<32, 1<<20)},
		{"segment.endpoint", mountCmd(uuid(0x5e, 4), "s", strings.Repeat("e", 1025), 4<<32, 1<<20)},
		{"segment.endpoint", mountCmd(uuid(0x5e, 5), "s", "", 5<<32, 1<<20)},
		{"segment.size", mountCmd(uuid(0x5e, 6), "s", "e", 1<<50, 1<<50)},
	}
	f := newFSM(t)
	for i, tc := range cases {
		r := applyCmds(t, f, uint64(i+1), 1, tc.cmd)[0]
		if r.Reason != store.InvalidParams || !strings.HasPrefix(r.Message, tc.field+":") {
			t.Errorf("case %d: %s %.80q, want INVALID_PARAMS naming %s", i, r.Reason, r.Message, tc.field)
		}
	}
	if n := f.Store().Segments().Len(); n != 0 {
		t.Fatalf("%d segments mounted by refused commands", n)
	}

	// The same commands in entries written before the limits: they mount, on every node alike.
	old, again := newFSM(t), newFSM(t)
	for i, tc := range cases {
		for _, g := range []*FSM{old, again} {
			if r := applyOld(t, g, uint64(i+1), tc.cmd)[0]; r.Reason != store.OK {
				t.Fatalf("case %d in a rules-0 entry: %s %.80q", i, r.Reason, r.Message)
			}
		}
	}
	if n := old.Store().Segments().Len(); n != len(cases) {
		t.Fatalf("%d segments after rules-0 mounts, want %d", n, len(cases))
	}
	data := snapshotBytes(t, old)
	if !bytes.Equal(data, snapshotBytes(t, again)) {
		t.Fatal("replaying the same rules-0 entries gave two states")
	}
	restored := newFSM(t)
	if err := restored.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("a snapshot holding segments recorded before the limits: %v", err)
	}
	if info, ok := restored.Store().Segments().Get(alloc.ID(uuid(0x5e, 1))); !ok || info.Name != long {
		t.Fatal("restored state lacks the segment with the long name")
	}

	// The tier's capacity is checked whatever the entry's rules: three more segments of 2^62 fit
	// beside the 2^50 one, a fourth would wrap the total.
	for i := range 3 {
		big := mountCmd(uuid(0x5f, byte(i+1)), "s", "e", uint64(i+1)<<58, 1<<62)
		if r := applyOld(t, old, uint64(100+i), big)[0]; r.Reason != store.OK {
			t.Fatalf("rules-0 mount %d: %s %s", i, r.Reason, r.Message)
		}
	}
	capacity := old.Store().Segments().Capacity(alloc.TierMemory)
	r := applyOld(t, old, 200, mountCmd(uuid(0x5f, 4), "s", "e", 1<<62, 1<<62))[0]
	if r.Reason != store.InvalidParams || !strings.Contains(r.Message, "overflow") {
		t.Fatalf("rules-0 mount overflowing the tier: %s %q, want INVALID_PARAMS", r.Reason, r.Message)
	}
	if got := old.Store().Segments().Capacity(alloc.TierMemory); got != capacity {
		t.Fatalf("refused mount changed the capacity to %d (was %d)", got, capacity)
	}
	if err := old.Store().CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestBatchRepeatedKeyOnApply: a batch command that names a key twice is refused whole on apply
// (INVALID_PARAMS naming the repeat, no per-item results, nothing changed) when its entry was
// written under the rule; an entry written before it applies item by item as it did then.
func TestBatchRepeatedKeyOnApply(t *testing.T) {
	c1 := uuid(0xc1, 1)
	setup := []*metadv1.Command{mountCmd(uuid(0x5e, 1), "s", "e", 1<<32, 1<<20),
		{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte("k"), Size: 100,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}},
		{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{ClientId: c1, Key: []byte("p"), Size: 100,
			Config: &metadv1.ReplicaConfig{MemoryReplicas: 1}}}},
		{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{ClientId: c1, Key: []byte("k")}}},
	}
	k, p, n := []byte("k"), []byte("p"), []byte("n")
	cfg := &metadv1.ReplicaConfig{MemoryReplicas: 1}
	cases := []struct {
		msg string
		cmd *metadv1.Command
	}{
		{"items[1]: repeats items[0]", &metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: &metadv1.BatchPutStart{
			ClientId: c1, Config: cfg, Items: []*metadv1.BatchPutStart_Item{{Key: n, Size: 64}, {Key: n, Size: 64}}}}}},
		{"keys[2]: repeats keys[0]", &metadv1.Command{Op: &metadv1.Command_BatchPutEnd{BatchPutEnd: &metadv1.BatchPutEnd{
			ClientId: c1, Keys: [][]byte{p, k, p}}}}},
		{"keys[1]: repeats keys[0]", &metadv1.Command{Op: &metadv1.Command_BatchPutRevoke{BatchPutRevoke: &metadv1.BatchPutRevoke{
			ClientId: c1, Keys: [][]byte{p, p}}}}},
		{"items[1]: repeats items[0]", &metadv1.Command{Op: &metadv1.Command_BatchRemove{BatchRemove: &metadv1.BatchRemove{
			Items: []*metadv1.ObjectRef{{Key: k}, {Key: k}}}}}},
	}
	f := newFSM(t)
	applyCmds(t, f, 1, 1, setup...)
	state := stateOnly(t, snapshotBytes(t, f))
	for i, tc := range cases {
		r := applyCmds(t, f, uint64(2+i), 2, tc.cmd)[0]
		if r.Reason != store.InvalidParams || r.Message != tc.msg || len(r.Items) != 0 {
			t.Errorf("case %d: %s %q with %d items, want INVALID_PARAMS %q and none", i, r.Reason, r.Message, len(r.Items), tc.msg)
		}
	}
	if !bytes.Equal(stateOnly(t, snapshotBytes(t, f)), state) {
		t.Fatal("refused batch commands changed the state")
	}

	// Before the rule: item by item. The second n finds the first; p is completed by its first
	// occurrence and found COMPLETE by its second (a repeated PutEnd); k is removed once.
	old := newFSM(t)
	applyOld(t, old, 1, setup...)
	want := [][]store.Reason{
		{store.OK, store.ObjectAlreadyExists},
		{store.OK, store.OK, store.OK},
		{store.InvalidWrite, store.InvalidWrite},
		{store.OK, store.ObjectNotFound},
	}
	for i, tc := range cases {
		r := applyOld(t, old, uint64(2+i), tc.cmd)[0]
		var got []store.Reason
		for _, it := range r.Items {
			got = append(got, it.Reason)
		}
		if r.Reason != store.OK || !slices.Equal(got, want[i]) {
			t.Errorf("case %d in a rules-0 entry: %s %q items %v, want %v", i, r.Reason, r.Message, got, want[i])
		}
	}
}

// TestMemberNameOnApply: SetMember records a name only if it is a valid member name, on entries
// written under the rule; an older entry records any name but the empty one, as it did.
func TestMemberNameOnApply(t *testing.T) {
	set := func(name string) *metadv1.Command {
		return &metadv1.Command{Op: &metadv1.Command_SetMember{SetMember: &metadv1.SetMember{Name: name,
			PeerAddress: "127.0.0.1:6101", ClientAddress: "127.0.0.1:6001"}}}
	}
	bad := []string{"n\x01", "_n", strings.Repeat("n", 65)}
	f := newFSM(t)
	for i, name := range bad {
		if r := applyCmds(t, f, uint64(i+1), 1, set(name))[0]; r.Reason != store.InvalidParams {
			t.Errorf("SetMember %q: %s, want INVALID_PARAMS", name, r.Reason)
		}
	}
	if r := applyCmds(t, f, 10, 1, set("n1"))[0]; r.Reason != store.OK {
		t.Fatalf("SetMember n1: %s %s", r.Reason, r.Message)
	}
	if ms := f.Members(); len(ms) != 1 {
		t.Fatalf("members %v, want only n1", ms)
	}
	old := newFSM(t)
	for i, name := range bad {
		if r := applyOld(t, old, uint64(i+1), set(name))[0]; r.Reason != store.OK {
			t.Errorf("SetMember %q in a rules-0 entry: %s %s", name, r.Reason, r.Message)
		}
	}
	if ms := old.Members(); len(ms) != len(bad) {
		t.Fatalf("%d members recorded by rules-0 entries, want %d", len(ms), len(bad))
	}
}

// TestNewerRulesRefused: an entry of a rules version above this binary's does not decode (Apply
// stops the member, with the entry's index, rather than apply it by older rules than its leader
// checked it against).
func TestNewerRulesRefused(t *testing.T) {
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(&metadv1.Envelope{FormatVersion: metadv1.EnvelopeFormatVersion,
		RulesVersion: metadv1.RulesVersion + 1, Commands: []*metadv1.Command{mountCmd(uuid(0x5e, 1), "s", "e", 1<<32, 1<<20)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEnvelope(data); err == nil || !strings.Contains(err.Error(), "rules version") {
		t.Fatalf("DecodeEnvelope of a newer rules version: %v", err)
	}
	f := newFSM(t)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "log index 7") {
			t.Fatalf("Apply of a newer rules version: recovered %v, want a stop naming the index", r)
		}
	}()
	f.Apply(&raft.Log{Index: 7, Term: 1, Type: raft.LogCommand, Data: data})
}
