package store

import (
	"sync/atomic"

	"metad/store/alloc"
)

// tierTally counts the objects that have a replica of each tier, and those whose every replica
// is LOCAL_DISK (disk-only), kept as every state changes (setStateLocked, created, erased, a
// restore's objects), so that the metrics read them with no walk. A count, not replicated state:
// it follows from the states, so every node's agrees.
type tierTally struct {
	objects  [alloc.TierLocalDisk + 1]atomic.Int64
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
	for t := alloc.TierMemory; t <= alloc.TierLocalDisk; t++ {
		switch b := uint8(1) << t; {
		case om&b == 0 && nm&b != 0:
			c.objects[t].Add(1)
		case om&b != 0 && nm&b == 0:
			c.objects[t].Add(-1)
		}
	}
	const disk = 1 << alloc.TierLocalDisk
	switch {
	case om != disk && nm == disk:
		c.diskOnly.Add(1)
	case om == disk && nm != disk:
		c.diskOnly.Add(-1)
	}
}

// TierObjects is how many objects have a replica of each tier, and how many have only LOCAL_DISK ones.
type TierObjects struct {
	Memory, NOF, LocalDisk, DiskOnly int64
}

func (c *tierTally) load() TierObjects {
	return TierObjects{Memory: c.objects[alloc.TierMemory].Load(), NOF: c.objects[alloc.TierNOF].Load(),
		LocalDisk: c.objects[alloc.TierLocalDisk].Load(), DiskOnly: c.diskOnly.Load()}
}

// TierObjects returns the objects by tier now (a lock-free read of counts kept as states change).
func (s *Store) TierObjects() TierObjects { return s.tiers.load() }
