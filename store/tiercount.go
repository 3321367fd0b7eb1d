package store

import (
	"sync/atomic"

	"metad/store/alloc"
)

// tierTally counts the objects that have a replica of each tier, and those with replicas but none
// in memory (disk-only: LOCAL_DISK, DISK or DFS replicas alone), kept as every state changes (setStateLocked, created, erased, a
// restore's objects), so that the metrics read them with no walk. A count, not replicated state:
// it follows from the states, so every node's agrees.
type tierTally struct {
	objects  [alloc.TierDFS + 1]atomic.Int64
	diskOnly atomic.Int64
}

// tierMask has bit t set for each tier t of st's replicas (0 for nil).
func tierMask(st *ObjectState) uint8 {
	var m uint8
	if st != nil {
		for i := range st.Replicas {
			if t := st.Replicas[i].Tier; t.Valid() {
				m |= 1 << t
			}
		}
	}
	return m
}

// change accounts a change of an object's state from old to ns (nil: none).
func (c *tierTally) change(old, ns *ObjectState) {
	om, nm := tierMask(old), tierMask(ns)
	if om == nm {
		return
	}
	for t := alloc.TierMemory; t <= alloc.TierDFS; t++ {
		switch b := uint8(1) << t; {
		case om&b == 0 && nm&b != 0:
			c.objects[t].Add(1)
		case om&b != 0 && nm&b == 0:
			c.objects[t].Add(-1)
		}
	}
	switch od, nd := diskOnlyMask(om), diskOnlyMask(nm); {
	case !od && nd:
		c.diskOnly.Add(1)
	case od && !nd:
		c.diskOnly.Add(-1)
	}
}

// memoryMask is the tierMask bits of the memory tiers (alloc.Tier.InMemory).
const memoryMask = 1<<alloc.TierMemory | 1<<alloc.TierNOF

// diskOnlyMask reports whether a tierMask is of an object on disk alone: replicas, none in memory.
func diskOnlyMask(m uint8) bool { return m != 0 && m&memoryMask == 0 }

// TierObjects is how many objects have a replica of each tier, and how many have replicas but
// none in memory (DiskOnly).
type TierObjects struct {
	Memory, NOF, LocalDisk, Disk, DFS, DiskOnly int64
}

// Of returns the count of tier t (0 for an invalid tier).
func (o TierObjects) Of(t alloc.Tier) int64 {
	switch t {
	case alloc.TierMemory:
		return o.Memory
	case alloc.TierNOF:
		return o.NOF
	case alloc.TierLocalDisk:
		return o.LocalDisk
	case alloc.TierDisk:
		return o.Disk
	case alloc.TierDFS:
		return o.DFS
	}
	return 0
}

func (c *tierTally) load() TierObjects {
	return TierObjects{Memory: c.objects[alloc.TierMemory].Load(), NOF: c.objects[alloc.TierNOF].Load(),
		LocalDisk: c.objects[alloc.TierLocalDisk].Load(), Disk: c.objects[alloc.TierDisk].Load(),
		DFS: c.objects[alloc.TierDFS].Load(), DiskOnly: c.diskOnly.Load()}
}

// TierObjects returns the objects by tier now (a lock-free read of counts kept as states change).
func (s *Store) TierObjects() TierObjects { return s.tiers.load() }
