package alloc

import (
	"net"
	"slices"
	"strings"
)

// MaxHostSegments is the most segments HostSegments returns: a put needs at most MaxReplicas
// memory replicas, so trying this many of the writer's segments before the usual order is plenty,
// and it bounds what a command carries.
const MaxHostSegments = 64

// HostOf returns the host a segment's endpoint names, the rule of local-first placement: the host
// part of "host:port" with a decimal port ("10.0.0.7" for "10.0.0.7:9000", "::1" for
// "[::1]:9000"), or else the whole endpoint ("node-7", "::1", "rdma://node-7/mlx5_0"), in ASCII
// lower case so that host names compare as DNS does. The same function reads a writer's
// preferred host, so "node-7:9000" there names host "node-7".
func HostOf(endpoint string) string {
	if h, port, err := net.SplitHostPort(endpoint); err == nil && h != "" && decimal(port) {
		return strings.ToLower(h)
	}
	return strings.ToLower(endpoint)
}

// decimal reports whether s is 1..5 decimal digits (a port).
func decimal(s string) bool {
	if len(s) == 0 || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// HostSegments returns the IDs of the mounted segments of tier t whose endpoint names host (HostOf
// of each side), at most MaxHostSegments, in the strategy's order as Place would try them: random
// is the Fisher-Yates shuffle of Place's candidates seeded with seed, over the host's segments
// sorted by ID; free_ratio_first is descending free/size, ties by ID. Empty host, or none: nil.
//
// The leader reads it to turn a request's preferred host into preferred segment IDs, which the
// command carries; apply never calls it, so the result need not be reproducible by followers.
func (r *Registry) HostSegments(host string, t Tier, strategy Strategy, seed uint64) []ID {
	if host == "" || !t.Placeable() {
		return nil
	}
	host = HostOf(host)
	r.mu.Lock()
	defer r.mu.Unlock()
	var segs []*segment
	for _, seg := range r.byTier[t] {
		if seg.host == host {
			segs = append(segs, seg)
		}
	}
	if len(segs) == 0 {
		return nil
	}
	if strategy == StrategyFreeRatioFirst {
		slices.SortFunc(segs, func(a, b *segment) int {
			if a == b {
				return 0
			}
			if freeRatioBefore(a, b) {
				return -1
			}
			return 1
		})
	} else {
		s := shuffle{n: len(segs), rng: splitmix64{state: seed}}
		ordered := make([]*segment, 0, len(segs))
		for i, ok := s.next(); ok; i, ok = s.next() {
			ordered = append(ordered, segs[i])
		}
		segs = ordered
	}
	out := make([]ID, 0, min(len(segs), MaxHostSegments))
	for _, seg := range segs[:min(len(segs), MaxHostSegments)] {
		out = append(out, seg.info.ID)
	}
	return out
}
