package chaos

import "testing"

// tiered marks ops as a tiers drill's (History.add does so for every operation of one).
func tiered(ops ...*Op) []*Op {
	for _, op := range ops {
		op.In.Tiers = true
	}
	return ops
}

// onDisk is a Get's answer of an object of size with mem replicas beside its one LOCAL_DISK replica.
func onDisk(size uint64, mem uint8) output {
	return output{Res: resOK, Size: size, Replicas: mem, Disk: 1}
}

// TestModelTiers covers what a tiers drill's model allows of the moves it does not see (offload,
// eviction to disk, promotion) and what it still refuses.
func TestModelTiers(t *testing.T) {
	hasTask := reason(rHasTask)
	cases := []modelCase{
		{"offloaded, evicted to disk, promoted back", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opGet, 0, 0, onDisk(10, 1), 4, 5), hop(2, 0, opGet, 0, 0, onDisk(10, 0), 6, 7),
			hop(3, 0, opGet, 0, 0, onDisk(10, 1), 8, 9), hop(3, 0, opExist, 0, 0, output{Res: resOK, Exists: true}, 10, 11))...), true},
		{"a disk replica outside a tiers drill", append(putOps(1, 0, 0, 10),
			hop(2, 0, opGet, 0, 0, onDisk(10, 1), 4, 5)), false},
		{"an object on disk is still present", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opGet, 0, 0, onDisk(10, 0), 4, 5), hop(3, 0, opGet, 0, 0, notFound, 6, 7))...), false},
		{"a read answers no replica at all", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opGet, 0, 0, gotN(10, 0), 4, 5))...), false},
		{"two LOCAL_DISK replicas", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opGet, 0, 0, output{Res: resOK, Size: 10, Replicas: 1, Disk: 2}, 4, 5))...), false},
		{"the size of the object on disk", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opGet, 0, 0, onDisk(11, 0), 4, 5))...), false},
		{"an offload or a promotion holds a removal", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opRemove, 0, 0, hasTask, 4, 5), hop(2, 0, opCopyStart, 0, 0, hasTask, 6, 7),
			hop(3, 0, opGet, 0, 0, onDisk(10, 1), 8, 9), hop(2, 0, opRemove, 0, 0, ok, 10, 11),
			hop(3, 0, opGet, 0, 0, notFound, 12, 13))...), true},
		{"a task on an absent key", tiered(hop(2, 0, opRemove, 0, 0, hasTask, 0, 1)), false},
		{"a worker's pin answers another client's MoveEnd", tiered(append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveEnd, 0, 0, reason(rIllegal), 4, 5), hop(3, 0, opGet, 0, 0, onDisk(10, 1), 6, 7))...), true},
		{"a worker's pin outside a tiers drill", append(putOps(1, 0, 0, 10),
			hop(2, 0, opMoveEnd, 0, 0, reason(rIllegal), 4, 5)), false},
		{"an offload holds a group's removal", tiered(append(putOps(1, 1, 1, 10),
			hop(2, 1, opRemoveGroup, 0, 0, hasTask, 4, 5), hop(2, 1, opListGroup, 0, 0, output{Res: resOK, Listed: 0b010}, 6, 7))...), true},
		{"a snapshot without the replica counts", tiered(append(putOps(1, 0, 0, 10),
			&Op{Client: snapshotClient, Part: 0, In: input{Kind: opSnapshot, Snap: partState{{Kind: present, Writer: 1, Size: 10}}},
				Out: ok, Call: 4, Return: 5})...), true},
		{"a snapshot with another size", tiered(append(putOps(1, 0, 0, 10),
			&Op{Client: snapshotClient, Part: 0, In: input{Kind: opSnapshot, Snap: partState{{Kind: present, Writer: 1, Size: 12}}},
				Out: ok, Call: 4, Return: 5})...), false},
	}
	checkCases(t, cases)
}

// TestCountTiers checks the drill's evidence of tier moves: reads on disk, on disk alone, and a
// key seen on disk alone and later in memory again.
func TestCountTiers(t *testing.T) {
	ops := []*Op{
		hop(2, 0, opGet, 0, 0, got(10), 0, 1),
		hop(2, 0, opGet, 0, 0, onDisk(10, 1), 2, 3),
		hop(2, 0, opGet, 0, 0, onDisk(10, 0), 4, 5),
		hop(3, 0, opGet, 0, 0, onDisk(10, 1), 4, 6), // overlaps the disk-only read: not after it
		hop(3, 0, opGet, 0, 0, onDisk(10, 1), 7, 8),
		hop(3, 0, opGet, 0, 0, onDisk(10, 1), 9, 10),       // the same key promoted once
		hop(2, 1, opGet, 1, 0, onDisk(10, 0), 0, 1),        // on disk alone, never back
		hop(2, 1, opGet, 2, 0, notFound, 0, 1),             // not a successful read
		hop(2, 1, opGet, 2, 0, onDisk(10, 1), 0, 1),        // back without being seen on disk alone
		hop(2, 1, opExist, 2, 0, output{Res: resOK}, 0, 1), // not a read of replicas
	}
	c := countTiers(ops)
	want := tierCounts{Reads: 8, OnDisk: 7, DiskOnly: 2, Promoted: 1}
	if c != want {
		t.Fatalf("countTiers = %+v, want %+v", c, want)
	}
}
