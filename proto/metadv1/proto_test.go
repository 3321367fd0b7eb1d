package metadv1_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	metadv1 "metad/proto/metadv1"
)

// fill sets every field of m to a non-default value, recursing into messages up to depth levels, so a
// round trip exercises every field. Of each oneof only the first case is set.
func fill(t *testing.T, m protoreflect.Message, depth int) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && od.Fields().Get(0) != fd {
			continue
		}
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for j := 0; j < 2; j++ {
				if fd.Message() != nil {
					v := list.NewElement()
					if depth > 0 {
						fill(t, v.Message(), depth-1)
					}
					list.Append(v)
				} else {
					list.Append(scalar(t, fd, j))
				}
			}
		case fd.IsMap():
			t.Fatalf("%s: maps are not used in metad.v1; teach fill about them", fd.FullName())
		case fd.Message() != nil:
			v := m.NewField(fd)
			if depth > 0 {
				fill(t, v.Message(), depth-1)
			}
			m.Set(fd, v)
		default:
			m.Set(fd, scalar(t, fd, 0))
		}
	}
}

// scalar returns a non-zero value for fd that differs with the field number and salt.
func scalar(t *testing.T, fd protoreflect.FieldDescriptor, salt int) protoreflect.Value {
	t.Helper()
	n := int64(fd.Number())*1000 + int64(salt) + 1
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(-n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(1_700_000_000_000_000_000 + n)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n) << 20)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(string(fd.Name()) + "-é")
	case protoreflect.BytesKind:
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(n) + byte(i)
		}
		b[0] = 0xff // not UTF-8: keys are bytes
		return protoreflect.ValueOfBytes(b)
	}
	t.Fatalf("%s: unhandled kind %v", fd.FullName(), fd.Kind())
	return protoreflect.Value{}
}

// commandCases returns the fields of Command's oneof op.
func commandCases() protoreflect.FieldDescriptors {
	return (&metadv1.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op").Fields()
}

// camel turns put_start into PutStart.
func camel(s string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(s, "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// TestCommandCasesRoundTrip marshals and unmarshals a Command for every case of its oneof, each with
// every field set, so a command added to command.proto is covered without touching this test.
func TestCommandCasesRoundTrip(t *testing.T) {
	cases := commandCases()
	if cases.Len() == 0 {
		t.Fatal("Command has no oneof op cases")
	}
	env := &metadv1.Envelope{
		FormatVersion:      metadv1.EnvelopeFormatVersion,
		LeaderTimeUnixNano: 1_700_000_000_123_456_789,
		Seed:               0xdeadbeefcafef00d,
	}
	for i := 0; i < cases.Len(); i++ {
		fd := cases.Get(i)
		t.Run(string(fd.Name()), func(t *testing.T) {
			cmd := &metadv1.Command{}
			m := cmd.ProtoReflect()
			v := m.NewField(fd)
			fill(t, v.Message(), 3)
			m.Set(fd, v)
			// Every field of the op message must be set, or the round trip proves nothing about it.
			op := v.Message()
			for j := 0; j < op.Descriptor().Fields().Len(); j++ {
				f := op.Descriptor().Fields().Get(j)
				if !op.Has(f) {
					t.Fatalf("fill left %s unset", f.FullName())
				}
			}

			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(cmd)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			got := &metadv1.Command{}
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if !proto.Equal(cmd, got) {
				t.Fatalf("round trip changed the command:\n sent %v\n got  %v", cmd, got)
			}
			if w := got.ProtoReflect().WhichOneof(fd.ContainingOneof()); w == nil || w.Number() != fd.Number() {
				t.Fatalf("round trip selected case %v, want %s", w, fd.Name())
			}
			if got.GetOp() == nil {
				t.Fatal("GetOp() is nil after the round trip")
			}
			env.Commands = append(env.Commands, cmd)
		})
	}

	// All cases coalesced into one log entry, as the proposer does.
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(env)
	if err != nil {
		t.Fatalf("marshal envelope: %v", err)
	}
	got := &metadv1.Envelope{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("unmarshal envelope: %v", err)
	}
	if !proto.Equal(env, got) {
		t.Fatal("round trip changed the envelope")
	}
	if len(got.Commands) != cases.Len() {
		t.Fatalf("envelope holds %d commands, want %d", len(got.Commands), cases.Len())
	}
}

// TestCommandCaseNames checks the naming rule the FSM's dispatch table relies on: each case of
// Command.op holds a message named after the case, and every command message is a case.
func TestCommandCaseNames(t *testing.T) {
	cases := commandCases()
	inOneof := map[protoreflect.FullName]bool{}
	for i := 0; i < cases.Len(); i++ {
		fd := cases.Get(i)
		if fd.Message() == nil {
			t.Errorf("case %s is not a message", fd.Name())
			continue
		}
		if want, got := camel(string(fd.Name())), string(fd.Message().Name()); got != want {
			t.Errorf("case %s holds message %s, want %s", fd.Name(), got, want)
		}
		inOneof[fd.Message().FullName()] = true
	}
	// Top-level messages of command.proto that are operations must be cases; the helpers are listed.
	helpers := map[protoreflect.Name]bool{"Envelope": true, "Command": true, "ObjectToken": true, "TokenColumns": true, "ObjectRef": true,
		"DrainMove": true, "ArenaSpec": true, "CommitItem": true, "CommitReplica": true}
	msgs := metadv1.File_metadv1_command_proto.Messages()
	for i := 0; i < msgs.Len(); i++ {
		md := msgs.Get(i)
		if !helpers[md.Name()] && !inOneof[md.FullName()] {
			t.Errorf("message %s in command.proto is not a case of Command.op", md.Name())
		}
	}
}

// TestReasonNames checks that the Reason enum has every code of SEMANTICS section 9 plus the
// store's extra codes, with OK as zero, and nothing else.
func TestReasonNames(t *testing.T) {
	want := []string{
		"REASON_UNSPECIFIED", // OK
		"REASON_INVALID_PARAMS",
		"REASON_TENANT_NOT_REGISTERED",
		"REASON_TENANT_NOT_EMPTY",
		"REASON_TENANT_QUOTA_EXCEEDED",
		"REASON_OBJECT_NOT_FOUND",
		"REASON_OBJECT_ALREADY_EXISTS",
		"REASON_OBJECT_HAS_LEASE",
		"REASON_REPLICA_IS_NOT_READY",
		"REASON_INVALID_WRITE",
		"REASON_ILLEGAL_CLIENT",
		"REASON_NO_AVAILABLE_HANDLE",
		"REASON_SEGMENT_NOT_FOUND",
		"REASON_NOT_LEADER",
		"REASON_UNAVAILABLE",
		"REASON_SEGMENT_OWNED_BY_OTHER_CLIENT",
		"REASON_TENANT_ALREADY_EXISTS",
		"REASON_STATE_REPLACED", // a leader-prepared command met a state a snapshot restore replaced
		"REASON_MEMBER_NOT_FOUND", "REASON_SESSION_EXPIRED", "REASON_SEQUENCE_TOO_OLD",
		"REASON_AUTH_REVISION_STALE", "REASON_KEY_NOT_FOUND", "REASON_ROLE_NOT_FOUND", "REASON_KEY_ALREADY_EXISTS",
		"REASON_AUTH_LIMIT_EXCEEDED",
		"REASON_NO_REPLICA_ON_SEGMENT",  // BatchReplicaClear of an object with nothing on the segments cleared
		"REASON_RESPONSE_LIMIT_REACHED", // a BatchGet item past the response's size bound
		"REASON_OBJECT_HAS_REPLICATION_TASK", "REASON_OBJECT_NO_REPLICATION_TASK", "REASON_REPLICA_NOT_FOUND",
		"REASON_TASK_NOT_FOUND", "REASON_TASK_PENDING_LIMIT_EXCEEDED",
		"REASON_DRAIN_NOT_FOUND", "REASON_SEGMENT_DRAINING", "REASON_DRAIN_NOT_RUNNING", // drain jobs
		"REASON_RESERVATION_LOST",                            // allocation arenas
		"REASON_WATCH_COMPACTED", "REASON_WATCH_FELL_BEHIND", // Watch
		"REASON_LEARNER_NOT_CAUGHT_UP", // PromoteMember
		"REASON_RATE_LIMITED",          // a principal over its rate limits (SetLimit)
	}
	for _, name := range want {
		if _, ok := metadv1.Reason_value[name]; !ok {
			t.Errorf("Reason has no %s", name)
		}
	}
	if metadv1.Reason_value["REASON_UNSPECIFIED"] != 0 {
		t.Error("REASON_UNSPECIFIED (OK) must be 0")
	}
	for name := range metadv1.Reason_value {
		if !slices.Contains(want, name) {
			t.Errorf("Reason has %s, which this test does not list: add it here and to the error mapping", name)
		}
	}
}

// TestServiceMethods pins the RPCs of both services, so removing or renaming one is deliberate.
func TestServiceMethods(t *testing.T) {
	for _, tc := range []struct {
		file    protoreflect.FileDescriptor
		service protoreflect.Name
		want    []string
	}{
		{metadv1.File_metadv1_metadata_proto, "Metadata", []string{
			"PutStart", "PutEnd", "PutRevoke", "UpsertStart", "UpsertEnd", "UpsertRevoke",
			"Get", "Exist", "Remove", "RemoveAll", "RemoveGroup", "ListGroup",
			"BatchPutStart", "BatchPutEnd", "BatchPutRevoke", "BatchGet", "BatchExist", "BatchRemove",
			"MountSegment", "UnmountSegment", "Ping",
			"MountLocalDisk", "UnmountLocalDisk", "NotifyOffload", "EvictDiskReplica", "PromotionAllocStart", "NotifyPromotion",
			"OpenSession", "CloseSession", "Watch",
			"ListObjectKeys", "GetByRegex", "RemoveByRegex", "BatchReplicaClear",
			"CopyStart", "CopyEnd", "CopyRevoke", "MoveStart", "MoveEnd", "MoveRevoke",
			"CreateCopyTask", "CreateMoveTask", "QueryTask", "FetchTasks", "MarkTaskToComplete", "ListTasks",
		}},
		{metadv1.File_metadv1_admin_proto, "Admin", []string{
			"RegisterTenant", "UnregisterTenant", "ListTenants", "SetQuota", "GetQuota", "ListSegments",
			"ListMembers", "AddMember", "RemoveMember", "PromoteMember", "TransferLeader", "RecordMember", "Status",
			"SnapshotSave", "SnapshotRestore",
			"CreateKey", "RevokeKey", "ListKeys", "GrantRole", "RevokeRole", "ListRoles",
			"StartDrain", "DrainStatus", "CancelDrain",
			"SetLimit", "ListLimits",
		}},
	} {
		sd := tc.file.Services().ByName(tc.service)
		if sd == nil {
			t.Fatalf("no service %s", tc.service)
		}
		var got []string
		for i := 0; i < sd.Methods().Len(); i++ {
			got = append(got, string(sd.Methods().Get(i).Name()))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s methods:\n got  %v\n want %v", tc.service, got, tc.want)
		}
	}
	save := metadv1.File_metadv1_admin_proto.Services().ByName("Admin").Methods().ByName("SnapshotSave")
	restore := metadv1.File_metadv1_admin_proto.Services().ByName("Admin").Methods().ByName("SnapshotRestore")
	if !save.IsStreamingServer() || save.IsStreamingClient() {
		t.Error("SnapshotSave must be server-streaming")
	}
	if !restore.IsStreamingClient() || restore.IsStreamingServer() {
		t.Error("SnapshotRestore must be client-streaming")
	}
}

// snapshotFramingAllowance is what the snapshot file may add around each Record, bytes: a uvarint
// length prefix (2 bytes up to 16 KiB) with room to spare.
const snapshotFramingAllowance = 4

// TestSnapshotObjectBudget checks the size budget of snapshot.proto: a typical object of a 1M-object
// snapshot (40-byte key, one COMPLETE memory replica, ids near a million, a 1 TiB segment) costs under
// 120 bytes framed.
func TestSnapshotObjectBudget(t *testing.T) {
	key := []byte(strings.Repeat("k", 40))
	client := make([]byte, 16)
	for i := range client {
		client[i] = 0xa0 + byte(i)
	}
	rec := &metadv1.Record{Record: &metadv1.Record_Object{Object: &metadv1.ObjectRecord{
		Key:              key,
		ObjectId:         999_999,
		Version:          2,
		Size:             4 << 20,
		WriterClientId:   client,
		PutStartUnixNano: 1_790_000_000_123_456_789,
		Replicas: []*metadv1.ReplicaRecord{{
			ReplicaId:    999_999,
			SegmentIndex: 1000,
			Offset:       (1 << 40) - (4 << 20),
			Status:       metadv1.ReplicaStatus_REPLICA_STATUS_COMPLETE,
			Tier:         metadv1.Tier_TIER_MEMORY,
		}},
		ChargedBytes: 0, // = Size x 1 memory replica
		DataType:     3,
	}}}
	size := proto.Size(rec) + snapshotFramingAllowance
	t.Logf("object record: %d bytes framed", size)
	if size >= 120 {
		t.Errorf("a typical object costs %d bytes framed in a snapshot, budget is < 120", size)
	}
	// A soft-pinned one may be a little larger but must stay within the budget too.
	rec.GetObject().SoftPinDeadlineUnixNano = 1_790_000_001_800_000_000
	if size := proto.Size(rec) + snapshotFramingAllowance; size >= 120 {
		t.Errorf("a soft-pinned object costs %d bytes framed, budget is < 120", size)
	}
}

var (
	// declRE matches the proto declarations that must carry a comment on the line above.
	declRE = regexp.MustCompile(`^(message|enum|service|oneof|rpc) |^(repeated |optional )?[A-Za-z][\w.]* \w+ = \d+;|^[A-Z][A-Z0-9_]* = \d+;`)
)

// TestEveryDeclarationCommented enforces the house rule that every message, enum, enum value, service,
// RPC, oneof and field of the .proto files has a comment on the line just above it.
func TestEveryDeclarationCommented(t *testing.T) {
	files, err := filepath.Glob("*.proto")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .proto files found: %v", err)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		prev, n := "", 0
		for sc.Scan() {
			n++
			line := strings.TrimSpace(sc.Text())
			if declRE.MatchString(line) && !strings.HasPrefix(prev, "//") {
				t.Errorf("%s:%d: %q has no comment on the line above", name, n, line)
			}
			prev = line
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}
