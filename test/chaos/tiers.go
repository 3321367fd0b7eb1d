package chaos

import (
	"fmt"
	"sort"
)

// A tiers drill (Config.Tiers) runs the drill's workload and faults against a cluster whose
// objects move between tiers beside it: each worker keeps a local SSD directory and answers
// offload and promotion tasks (`metactl worker --local-disk DIR --offload --promote`), every
// COMPLETE object is queued for its owner's SSD at its PutEnd, memory eviction runs with offload on
// evict (an object stays in memory until it is on the SSD, then loses its memory replicas and
// lives on on disk), and the leader promotes a disk-only object back to memory once reads hit it
// twice. The workers' memory is small (4 segments of tiersSegmentSize) against the keyspace, and
// eviction starts at 30 % of it, so objects cycle memory -> disk -> memory during the drill.
//
// The model sees these moves as the state changing by itself (model.go, input.Tiers); the checks
// are the drill's: linearizable presence and sizes, no acknowledged write lost, the same state
// on every node after heal. The workers' SSDs have room for every object (no SSD eviction, which
// would erase a disk-only object) and the workers are never expired, so no tier move may lose an
// object. countTiers shows that the moves happened.

// tiersSegmentSize is each worker segment's size in a tiers drill: the keyspace's objects (up to
// 64 KiB each, 72 keys and their copies) fill the 4 MiB past the eviction watermark.
const tiersSegmentSize = "1MiB"

// tiersMetadFlags are every member's extra flags in a tiers drill.
var tiersMetadFlags = []string{"--offload-on-evict", "--promote-on-hit", "--evict-high-watermark", "0.3"}

// tiersNote is the drill's note on what it covers of memory pressure.
const tiersNote = "tiers: workers offload every object to their local SSD, memory eviction (watermark 30 %) " +
	"waits for the offload and leaves the object on disk, reads promote disk-only objects back; " +
	"the model checks presence and sizes, not replica counts"

// tiersWorkerFlags are a tiers drill worker's extra flags, its SSD in dir.
func tiersWorkerFlags(dir string) []string {
	return []string{"--local-disk", dir, "--offload", "--promote", "--task-interval", "50ms"}
}

// tierCounts is what a tiers drill's successful reads saw of the tiers.
type tierCounts struct {
	Reads    int // successful Gets (BatchGet items included)
	OnDisk   int // of them, answers with a LOCAL_DISK replica
	DiskOnly int // of them, answers with a LOCAL_DISK replica alone (evicted from memory)
	// Promoted counts the keys read on disk alone and later, by a read that began after that one
	// returned, in memory again with their LOCAL_DISK replica (promoted on hit; an online restore
	// of an older snapshot can do the same, so a sign, not a proof).
	Promoted int
}

func (c tierCounts) String() string {
	return fmt.Sprintf("%d reads: %d with a LOCAL_DISK replica, %d on disk alone; %d keys promoted back to memory",
		c.Reads, c.OnDisk, c.DiskOnly, c.Promoted)
}

// countTiers counts what the successful Gets of ops saw.
func countTiers(ops []*Op) tierCounts {
	type key struct {
		part, member int
	}
	var c tierCounts
	diskOnlyAt := map[key]int64{} // the earliest return of a disk-only read of the key
	var gets []*Op
	for _, op := range ops {
		if op.In.Kind != opGet || op.Out.Res != resOK {
			continue
		}
		c.Reads++
		gets = append(gets, op)
		if op.Out.Disk == 0 {
			continue
		}
		c.OnDisk++
		if op.Out.Replicas == 0 {
			c.DiskOnly++
			k := key{op.Part, op.In.Member}
			if at, ok := diskOnlyAt[k]; !ok || int64(op.Return) < at {
				diskOnlyAt[k] = int64(op.Return)
			}
		}
	}
	sort.Slice(gets, func(i, j int) bool { return gets[i].Call < gets[j].Call })
	promoted := map[key]bool{}
	for _, op := range gets {
		k := key{op.Part, op.In.Member}
		if at, ok := diskOnlyAt[k]; ok && !promoted[k] && op.Out.Disk > 0 && op.Out.Replicas > 0 && int64(op.Call) > at {
			promoted[k] = true
			c.Promoted++
		}
	}
	return c
}
