package store

// Batch forms of the replicated writes: one request, one replicated command, per-item results in
// request order. Item i of a BatchPutStart draws its placement from ItemSeed(seed, i), so the items
// of one command place independently and every replica places them alike.

// PutStartResult is one item's outcome in a BatchPutStart.
type PutStartResult struct {
	Replicas []Replica
	Err      error
}

// ItemSeed derives the seed of batch item i from the command's seed (splitmix64 finalizer).
func ItemSeed(seed uint64, i int) uint64 {
	z := seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// BatchPutStart is PutStart for each item, but those skip marks (the leader answered them from its
// arenas), whose results stay zero.
func (s *Store) BatchPutStart(now int64, seed uint64, reqs []PutStartRequest, skip []bool) []PutStartResult {
	out := make([]PutStartResult, len(reqs))
	for i, r := range reqs {
		if i < len(skip) && skip[i] {
			continue
		}
		out[i].Replicas, out[i].Err = s.PutStart(now, ItemSeed(seed, i), r)
	}
	return out
}

// BatchPutEnd is PutEnd for each item.
func (s *Store) BatchPutEnd(now int64, reqs []PutEndRequest) []error {
	out := make([]error, len(reqs))
	for i, r := range reqs {
		out[i] = s.PutEnd(now, r)
	}
	return out
}

// BatchPutRevoke is PutRevoke for each item.
func (s *Store) BatchPutRevoke(now int64, reqs []PutEndRequest) []error {
	out := make([]error, len(reqs))
	for i, r := range reqs {
		out[i] = s.PutRevoke(now, r)
	}
	return out
}
