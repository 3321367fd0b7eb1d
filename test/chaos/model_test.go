package chaos

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	metadv1 "metad/proto/metadv1"
)

// hop builds a recorded operation on partition 0 (a singleton) or 1 (a group of three).
func hop(cl int, part int, kind opKind, member int, size uint64, out output, call, ret int) *Op {
	op := &Op{Client: cl, Part: part, In: input{Kind: kind, Member: member, Writer: int32(cl), Size: size, Label: "t/k"},
		Out: out, Call: time.Duration(call), Return: time.Duration(ret)}
	if out.Res == resUnknown {
		op.Open = true
	}
	return op
}

var (
	ok       = output{Res: resOK}
	unknown  = output{Res: resUnknown}
	notFound = output{Res: resReason, Reason: rNotFound}
	exists   = output{Res: resReason, Reason: rExists}
	notReady = output{Res: resReason, Reason: rNotReady}
)

func got(size uint64) output { return gotN(size, 1) }

// gotN is a Get's answer: size and n COMPLETE replicas.
func gotN(size uint64, n uint8) output { return output{Res: resOK, Size: size, Replicas: n} }

func reason(r string) output { return output{Res: resReason, Reason: r} }

func testParts() []*partition {
	return []*partition{
		{ID: 0, Tenant: "t", Keys: []string{"k"}},
		{ID: 1, Tenant: "t", Group: "g", Keys: []string{"g-m0", "g-m1", "g-m2"}},
	}
}

func TestModel(t *testing.T) {
	cases := []modelCase{
		{"put then get", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, ok, 2, 3), hop(2, 0, opGet, 0, 0, got(10), 4, 5),
		}, true},
		{"get before put end is not ready", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opGet, 0, 0, notReady, 2, 3), hop(1, 0, opPutEnd, 0, 0, ok, 4, 5),
		}, true},
		{"stale read after remove", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, ok, 2, 3),
			hop(1, 0, opRemove, 0, 0, ok, 4, 5), hop(2, 0, opGet, 0, 0, got(10), 6, 7),
		}, false},
		{"lost write", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, ok, 2, 3), hop(2, 0, opGet, 0, 0, notFound, 4, 5),
		}, false},
		{"unknown put start may take effect", []*Op{
			hop(1, 0, opPutStart, 0, 10, unknown, 0, 1), hop(2, 0, opPutStart, 0, 20, exists, 4, 5),
		}, true},
		{"unknown put start may not take effect", []*Op{
			hop(1, 0, opPutStart, 0, 10, unknown, 0, 1), hop(2, 0, opPutStart, 0, 20, ok, 4, 5),
		}, true},
		{"exists on an absent key", []*Op{
			hop(2, 0, opPutStart, 0, 20, exists, 4, 5),
		}, false},
		{"only the writer ends", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opPutEnd, 0, 0, ok, 2, 3),
		}, false},
		{"concurrent reads see the put either way", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, ok, 2, 10),
			hop(2, 0, opExist, 0, 0, output{Res: resOK, Exists: true}, 3, 4), hop(3, 0, opExist, 0, 0, output{Res: resOK}, 5, 6),
		}, false}, // true then false while no remove: not linearizable
		{"remove group removes every member", []*Op{
			hop(1, 1, opPutStart, 0, 10, ok, 0, 1), hop(1, 1, opPutEnd, 0, 0, ok, 2, 3),
			hop(1, 1, opPutStart, 2, 30, ok, 4, 5), hop(1, 1, opPutEnd, 2, 0, ok, 6, 7),
			hop(2, 1, opListGroup, 0, 0, output{Res: resOK, Listed: 0b101}, 8, 9),
			hop(2, 1, opRemoveGroup, 0, 0, output{Res: resOK, Count: 2}, 10, 11),
			hop(3, 1, opGet, 2, 0, notFound, 12, 13),
			hop(3, 1, opListGroup, 0, 0, notFound, 14, 15),
		}, true},
		{"remove group count must match", []*Op{
			hop(1, 1, opPutStart, 0, 10, ok, 0, 1), hop(1, 1, opPutEnd, 0, 0, ok, 2, 3),
			hop(2, 1, opRemoveGroup, 0, 0, output{Res: resOK, Count: 2}, 10, 11),
		}, false},
		{"probe put unknown then found", []*Op{
			hop(probeClient, 0, opClientPut, 0, 64, unknown, 0, 1), hop(2, 0, opGet, 0, 0, got(64), 2, 3),
		}, true},
		{"a snapshot may catch the probe's put pending after it was read", []*Op{
			hop(probeClient, 0, opClientPut, 0, 64, ok, 0, 10), hop(2, 0, opGet, 0, 0, got(64), 1, 2),
			{Client: snapshotClient, Part: 0, In: input{Kind: opSnapshot, Snap: partState{{Kind: pending, Writer: probeClient, Size: 64}}},
				Out: ok, Call: 3, Return: 4},
		}, true},
	}
	checkCases(t, cases)
}

// modelCase is a history and whether the model must find it linearizable.
type modelCase struct {
	name string
	ops  []*Op
	want bool
}

// checkCases checks each case's history against the model over testParts.
func checkCases(t *testing.T, cases []modelCase) {
	t.Helper()
	model := newModel(testParts())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := porcupine.CheckOperationsTimeout(model, porcupineOps(c.ops), 10*time.Second)
			if (res == porcupine.Ok) != c.want {
				t.Fatalf("linearizable = %v, want %v", res, c.want)
			}
		})
	}
}

// putOps puts size on member m of part by client cl at times 0..3.
func putOps(cl, part, m int, size uint64) []*Op {
	return []*Op{hop(cl, part, opPutStart, m, size, ok, 0, 1), hop(cl, part, opPutEnd, m, 0, ok, 2, 3)}
}

// TestModelTasks covers copy and move: what a running task refuses, what reads see during and
// after it, and the outcomes a session's retries and the reaper allow.
func TestModelTasks(t *testing.T) {
	withTask := func(k keyState, kind taskKind, by int32) keyState { k.Task, k.TaskBy = kind, by; return k }
	present10 := keyState{Kind: present, Writer: 1, Size: 10, Replicas: 1}
	cases := []modelCase{
		{"copy end adds a replica", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyEnd, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 2), 8, 9)), true},
		{"copy end must add a replica", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyEnd, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 1), 8, 9)), false},
		{"a copy target is never read before End", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opGet, 0, 0, gotN(10, 2), 6, 7),
			hop(2, 0, opCopyEnd, 0, 0, ok, 8, 9)), false},
		{"a running copy reads its complete replicas", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opGet, 0, 0, gotN(10, 1), 6, 7),
			hop(2, 0, opCopyEnd, 0, 0, ok, 8, 9)), true},
		{"move end keeps the count", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveStart, 0, 0, ok, 4, 5), hop(2, 0, opMoveEnd, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 1), 8, 9)), true},
		{"move end must not add a replica", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveStart, 0, 0, ok, 4, 5), hop(2, 0, opMoveEnd, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 2), 8, 9)), false},
		{"revoke leaves it as before", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyRevoke, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 2), 8, 9)), false},
		{"move end waits for a lease, then ends", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveStart, 0, 0, ok, 4, 5), hop(2, 0, opMoveEnd, 0, 0, reason(rHasLease), 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 1), 8, 9), hop(2, 0, opMoveEnd, 0, 0, ok, 10, 11)), true},
		{"a move end refused for a lease ends nothing", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveStart, 0, 0, ok, 4, 5), hop(2, 0, opMoveEnd, 0, 0, reason(rHasLease), 6, 7),
			hop(3, 0, opRemove, 0, 0, ok, 8, 9)), false},
		{"only a move end waits for a lease", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyEnd, 0, 0, reason(rHasLease), 6, 7)), false},
		{"remove is refused while a task runs", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveStart, 0, 0, ok, 4, 5), hop(3, 0, opRemove, 0, 0, reason(rHasTask), 6, 7),
			hop(2, 0, opMoveEnd, 0, 0, ok, 8, 9), hop(3, 0, opRemove, 0, 0, ok, 10, 11)), true},
		{"remove cannot succeed while a task runs", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveStart, 0, 0, ok, 4, 5), hop(3, 0, opRemove, 0, 0, ok, 6, 7)), false},
		{"forced remove cannot succeed while a task runs", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), &Op{Client: 3, Part: 0, In: input{Kind: opRemove, Writer: 3, Force: true},
				Out: ok, Call: 6, Return: 7}), false},
		{"no lease answer while a task runs", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opRemove, 0, 0, reason(rHasLease), 6, 7)), false},
		{"no task refusal without a task", append(putOps(1, 0, 0, 10),
			hop(3, 0, opRemove, 0, 0, reason(rHasTask), 6, 7)), false},
		{"remove group is refused while a member's task runs", append(putOps(1, 1, 2, 10),
			hop(2, 1, opCopyStart, 2, 0, ok, 4, 5), hop(3, 1, opRemoveGroup, 0, 0, reason(rHasTask), 6, 7),
			hop(3, 1, opListGroup, 0, 0, output{Res: resOK, Listed: 0b100}, 8, 9)), true},
		{"remove group cannot succeed while a member's task runs", append(putOps(1, 1, 2, 10),
			hop(2, 1, opCopyStart, 2, 0, ok, 4, 5), hop(3, 1, opRemoveGroup, 0, 0, output{Res: resOK, Count: 1}, 6, 7)), false},
		{"one task at a time", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opMoveStart, 0, 0, ok, 6, 7)), false},
		{"a second start is refused", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opMoveStart, 0, 0, reason(rHasTask), 6, 7)), true},
		{"only the starter ends a task", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opCopyEnd, 0, 0, ok, 6, 7)), false},
		{"another client's end is illegal", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(3, 0, opCopyEnd, 0, 0, reason(rIllegal), 6, 7)), true},
		{"an end without a task is refused", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyEnd, 0, 0, reason(rNoTask), 4, 5)), true},
		{"an end without a task cannot succeed", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyEnd, 0, 0, ok, 4, 5)), false},
		{"a start on a pending key is not ready", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opCopyStart, 0, 0, reason(rNotReady), 2, 3)}, true},
		{"a start on an absent key cannot succeed", []*Op{hop(2, 0, opMoveStart, 0, 0, ok, 0, 1)}, false},
		{"the reaper may revoke a task: its end is refused", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyEnd, 0, 0, reason(rNoTask), 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 1), 8, 9), hop(3, 0, opRemove, 0, 0, ok, 10, 11)), true},
		{"an unknown end counts once", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyEnd, 0, 0, unknown, 6, 7),
			hop(3, 0, opGet, 0, 0, gotN(10, 2), 8, 9), hop(3, 0, opGet, 0, 0, gotN(10, 3), 10, 11)), false},
		{"an unknown start may take effect", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, unknown, 4, 5), hop(3, 0, opRemove, 0, 0, reason(rHasTask), 6, 7),
			hop(2, 0, opCopyRevoke, 0, 0, ok, 8, 9), hop(3, 0, opRemove, 0, 0, ok, 10, 11)), true},
		{"an unknown start may not take effect", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, unknown, 4, 5), hop(3, 0, opRemove, 0, 0, ok, 6, 7)), true},
		{"a repeated put end keeps the copies", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5), hop(2, 0, opCopyEnd, 0, 0, ok, 6, 7),
			hop(1, 0, opPutEnd, 0, 0, ok, 8, 9), hop(3, 0, opGet, 0, 0, gotN(10, 2), 10, 11)), true},
		{"a snapshot sees the task", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5),
			&Op{Client: snapshotClient, Part: 0, In: input{Kind: opSnapshot, Snap: partState{withTask(present10, copyTask, 2)}},
				Out: ok, Call: 6, Return: 7}), true},
		{"a snapshot without the task", append(putOps(1, 0, 0, 10),
			hop(2, 0, opCopyStart, 0, 0, ok, 4, 5),
			&Op{Client: snapshotClient, Part: 0, In: input{Kind: opSnapshot, Snap: partState{present10}},
				Out: ok, Call: 6, Return: 7}), false},
		{"a restore brings the task back", append(putOps(1, 0, 0, 10),
			&Op{Client: snapshotClient, Part: 0, In: input{Kind: opRestore, Snap: partState{withTask(present10, moveTask, 2)}},
				Out: ok, Call: 4, Return: 5},
			hop(2, 0, opMoveEnd, 0, 0, ok, 6, 7), hop(3, 0, opGet, 0, 0, gotN(10, 1), 8, 9)), true},
	}
	checkCases(t, cases)
}

func TestLostWrites(t *testing.T) {
	parts := testParts()
	ops := []*Op{
		hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, ok, 2, 3),
	}
	if l := lostWrites(ops, parts, map[keyRef]finalState{{0, 0}: {Kind: present, Size: 10}}); len(l) != 0 {
		t.Fatalf("present write reported lost: %v", l)
	}
	if l := lostWrites(ops, parts, map[keyRef]finalState{{0, 0}: {Kind: absent}}); len(l) != 1 {
		t.Fatalf("missing write not reported: %v", l)
	}
	removed := append(ops, hop(2, 0, opRemove, 0, 0, unknown, 1, 2))
	if l := lostWrites(removed, parts, map[keyRef]finalState{{0, 0}: {Kind: absent}}); len(l) != 0 {
		t.Fatalf("write removed by an unknown remove reported lost: %v", l)
	}
}

// TestAbsentWhileWritten: the outside run's history (times in ms): PutStart(k) ok [182648 ..
// 182651], PutEnd(k) ok [182651 .. 182661], Get(k) OBJECT_NOT_FOUND [182657 .. 182661]. The model
// lets a read assume a lost reservation; the PutEnd's OK says none was lost.
func TestAbsentWhileWritten(t *testing.T) {
	parts := testParts()
	put := []*Op{hop(1, 0, opPutStart, 0, 10, ok, 182648, 182651), hop(1, 0, opPutEnd, 0, 0, ok, 182651, 182661)}
	if a := absentWhileWritten(append(put, hop(2, 0, opGet, 0, 0, notFound, 182657, 182661)), parts); len(a) != 0 {
		t.Fatalf("a read that ended with the PutEnd reported: %v", a)
	}
	if a := absentWhileWritten(append(put, hop(2, 0, opGet, 0, 0, notFound, 182657, 182660)), parts); len(a) != 1 {
		t.Fatalf("a Get absent inside the write's window not reported: %v", a)
	}
	if a := absentWhileWritten(append(put, hop(2, 0, opRemove, 0, 0, notFound, 182652, 182653)), parts); len(a) != 1 {
		t.Fatalf("a Remove absent inside the write's window not reported: %v", a)
	}
	if a := absentWhileWritten(append(put, hop(2, 0, opGet, 0, 0, notFound, 182650, 182655)), parts); len(a) != 0 {
		t.Fatalf("a read that started before the PutStart's answer reported: %v", a)
	}
	removed := append(put, hop(3, 0, opRemove, 0, 0, unknown, 182652, 182653), hop(2, 0, opGet, 0, 0, notFound, 182654, 182655))
	if a := absentWhileWritten(removed, parts); len(a) != 0 {
		t.Fatalf("a read after a removal of unknown outcome reported: %v", a)
	}
	lostEnd := []*Op{hop(1, 0, opPutStart, 0, 10, ok, 1, 2), hop(2, 0, opGet, 0, 0, notFound, 3, 4),
		hop(1, 0, opPutEnd, 0, 0, reason("RESERVATION_LOST"), 5, 6)}
	if a := absentWhileWritten(lostEnd, parts); len(a) != 0 {
		t.Fatalf("a read of a write whose reservation was lost reported: %v", a)
	}
}

func TestClassify(t *testing.T) {
	if c, _ := classify(nil); c != clsOK {
		t.Fatalf("nil: %v", c)
	}
	// A TLS handshake that failed sent no call, on the client's connection or the follower's
	// forward to the leader.
	handshake := status.Error(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed: `+
		`read tcp 127.0.0.1:40000->127.0.0.1:41000: read: connection reset by peer"`)
	if c, _ := classify(handshake); c != clsNoop {
		t.Fatalf("client handshake failed: %v, want not proposed", c)
	}
	st, err := status.New(codes.Unavailable, `not the leader; forwarding to the leader n1 at 127.0.0.1:41000 failed: `+
		`connection error: desc = "transport: authentication handshake failed: EOF"`).
		WithDetails(&metadv1.ErrorDetail{Reason: metadv1.Reason_REASON_NOT_LEADER, LeaderName: "n1", LeaderAddress: "127.0.0.1:41000"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := classify(st.Err()); c != clsNoop {
		t.Fatalf("forward handshake failed: %v, want not proposed", c)
	}
	// Broken after it was sent: unknown.
	if c, _ := classify(status.Error(codes.Unavailable, "error reading from server: EOF")); c != clsUnknown {
		t.Fatalf("broken connection: %v, want unknown", c)
	}
}

// TestModelReservations covers a PutStart the leader answers from its arenas: a reservation in
// its memory, not in the replicated state, that a leader change loses. Its PutEnd then answers
// RESERVATION_LOST and nothing was created; an acknowledged PutEnd stays.
func TestModelReservations(t *testing.T) {
	lost := reason(rLost)
	cases := []modelCase{
		// Legal histories.
		{"a lost reservation's end creates nothing", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, lost, 2, 3),
			hop(2, 0, opGet, 0, 0, notFound, 4, 5)}, true},
		{"placed again after a lost reservation", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, lost, 2, 3),
			hop(1, 0, opPutStart, 0, 20, ok, 4, 5), hop(1, 0, opPutEnd, 0, 0, ok, 6, 7),
			hop(2, 0, opGet, 0, 0, got(20), 8, 9)}, true},
		{"a reserved key reads not ready, then not found once the leader changed", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opGet, 0, 0, notReady, 2, 3),
			hop(2, 0, opGet, 0, 0, notFound, 4, 5), hop(1, 0, opPutEnd, 0, 0, lost, 6, 7)}, true},
		{"another writer takes the key of a lost reservation", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opPutStart, 0, 20, ok, 2, 3),
			hop(2, 0, opPutEnd, 0, 0, ok, 4, 5), hop(1, 0, opPutEnd, 0, 0, reason(rIllegal), 6, 7),
			hop(3, 0, opGet, 0, 0, got(20), 8, 9)}, true},
		{"a live reservation refuses another PutStart", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opPutStart, 0, 20, exists, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5), hop(3, 0, opGet, 0, 0, got(10), 6, 7)}, true},
		{"a reserved key is not in the state: Remove and Exist do not see it", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opRemove, 0, 0, notFound, 2, 3),
			hop(2, 0, opExist, 0, 0, output{Res: resOK}, 4, 5), hop(1, 0, opPutEnd, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, got(10), 8, 9)}, true},
		{"an end refused by its session keeps the reservation", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, reason(rSessionExpired), 2, 3),
			hop(2, 0, opGet, 0, 0, notReady, 4, 5), hop(1, 0, opPutEnd, 0, 0, ok, 6, 7),
			hop(3, 0, opGet, 0, 0, got(10), 8, 9)}, true},
		{"a Remove of a reserved key finds its write in progress", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opRemove, 0, 0, notReady, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5), hop(3, 0, opGet, 0, 0, got(10), 6, 7)}, true},
		{"a reserved member is not listed until its PutEnd", []*Op{
			hop(1, 1, opPutStart, 0, 10, ok, 0, 1), hop(2, 1, opListGroup, 0, 0, notFound, 2, 3),
			hop(1, 1, opPutEnd, 0, 0, ok, 4, 5), hop(2, 1, opListGroup, 0, 0, output{Res: resOK, Listed: 0b001}, 6, 7)}, true},
		{"an end of unknown outcome, then RESERVATION_LOST", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, unknown, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, lost, 4, 5), hop(2, 0, opGet, 0, 0, notFound, 6, 7)}, true},
		{"a revoke while the commit is in flight is not ready", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, unknown, 2, 3),
			hop(1, 0, opPutRevoke, 0, 0, notReady, 4, 5), hop(2, 0, opGet, 0, 0, got(10), 6, 7)}, true},
		{"a reservation outlives a restore on the same leader", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1),
			{Client: snapshotClient, Part: 0, In: input{Kind: opRestore}, Out: ok, Call: 2, Return: 3},
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5), hop(2, 0, opGet, 0, 0, got(10), 6, 7)}, true},
		{"a snapshot does not hold a reservation", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1),
			{Client: snapshotClient, Part: 0, In: input{Kind: opSnapshot}, Out: ok, Call: 2, Return: 3},
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5), hop(2, 0, opGet, 0, 0, got(10), 6, 7)}, true},

		// Illegal histories.
		{"the object is visible after RESERVATION_LOST", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, lost, 2, 3),
			hop(2, 0, opGet, 0, 0, got(10), 4, 5)}, false},
		{"an end of unknown outcome does not commit after RESERVATION_LOST", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, unknown, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, lost, 4, 5), hop(2, 0, opGet, 0, 0, got(10), 6, 7)}, false},
		{"an acknowledged PutEnd of a reservation is lost", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opGet, 0, 0, notReady, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5), hop(2, 0, opGet, 0, 0, notFound, 6, 7)}, false},
		{"RESERVATION_LOST after the object was committed", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(1, 0, opPutEnd, 0, 0, ok, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, lost, 4, 5)}, false},
		{"a reservation seen lost does not come back", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opGet, 0, 0, notFound, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5)}, false},
		{"a reservation seen lost reads not ready no more", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opGet, 0, 0, notFound, 2, 3),
			hop(2, 0, opGet, 0, 0, notReady, 4, 5)}, false},
		{"a write in the state is never RESERVATION_LOST", []*Op{
			// ListGroup naming the member shows the PutStart went through the log (a reservation
			// is in no group until its PutEnd).
			hop(1, 1, opPutStart, 0, 10, ok, 0, 1), hop(2, 1, opListGroup, 0, 0, output{Res: resOK, Listed: 0b001}, 2, 3),
			hop(1, 1, opPutEnd, 0, 0, lost, 4, 5)}, false},
		{"RESERVATION_LOST of another writer's object", append(putOps(1, 0, 0, 10),
			hop(2, 0, opPutEnd, 0, 0, lost, 4, 5)), false},
		{"two reservations of one key", []*Op{
			hop(1, 0, opPutStart, 0, 10, ok, 0, 1), hop(2, 0, opPutStart, 0, 20, ok, 2, 3),
			hop(1, 0, opPutEnd, 0, 0, ok, 4, 5)}, false},
	}
	checkCases(t, cases)
}
