package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"metad/proto/metadv1"
)

// fakeLimits holds each fake cluster's limit records (*fakeCluster -> *fakeLimitSet).
var fakeLimits sync.Map

// fakeLimitSet is a fake cluster's limit records, in the order they were set. Safe for concurrent
// use.
type fakeLimitSet struct {
	mu  sync.Mutex // guards all
	all []*metadv1.Limit
}

func limitsOf(c *fakeCluster) *fakeLimitSet {
	l, _ := fakeLimits.LoadOrStore(c, &fakeLimitSet{})
	return l.(*fakeLimitSet)
}

func (a *fakeAdmin) SetLimit(_ context.Context, r *metadv1.SetLimitRequest) (*metadv1.SetLimitResponse, error) {
	s := limitsOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	l := r.GetLimit()
	var kept []*metadv1.Limit
	for _, o := range s.all {
		if o.GetPrincipal() != l.GetPrincipal() || o.GetRole() != l.GetRole() {
			kept = append(kept, o)
		}
	}
	if l.GetCallsPerSec() != 0 || l.GetKeysPerSec() != 0 || l.GetStreams() != 0 {
		kept = append(kept, proto.CloneOf(l))
	}
	s.all = kept
	return &metadv1.SetLimitResponse{}, nil
}

func (a *fakeAdmin) ListLimits(_ context.Context, r *metadv1.ListLimitsRequest) (*metadv1.ListLimitsResponse, error) {
	s := limitsOf(a.c)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &metadv1.ListLimitsResponse{Limits: s.all}
	if p := r.GetPrincipal(); p != "" {
		out.Effective = &metadv1.Limit{Principal: p}
		for _, l := range s.all {
			if l.GetPrincipal() == p {
				out.Effective = proto.CloneOf(l)
			}
		}
	}
	return out, nil
}

func TestLimitVerbs(t *testing.T) {
	c := startCluster(t)
	if r := metactl(t, c.addr, "limit", "set", "--principal", "alice", "--calls-per-sec", "100", "--streams", "8").ok(t); !strings.Contains(r.stdout,
		"limits of principal alice: calls/s 100, keys/s -, streams 8 (on each member)") {
		t.Fatalf("limit set:\n%s", r.stdout)
	}
	metactl(t, c.addr, "limit", "set", "--role", "*", "--keys-per-sec", "5000").ok(t)
	var ls struct {
		Limits    []limitView `json:"limits"`
		Effective *limitView  `json:"effective"`
	}
	metactl(t, c.addr, "limit", "ls", "--principal", "alice", "-o", "json").ok(t).json(t, &ls)
	if len(ls.Limits) != 2 || ls.Limits[1].Role != "*" || ls.Limits[1].KeysPerSec != 5000 || ls.Effective == nil || ls.Effective.CallsPerSec != 100 {
		t.Fatalf("limit ls: %+v", ls)
	}
	if r := metactl(t, c.addr, "limit", "ls").ok(t); !strings.Contains(r.stdout, "principal alice") || !strings.Contains(r.stdout, "role *") ||
		!strings.Contains(r.stdout, "5000") {
		t.Fatalf("limit ls table:\n%s", r.stdout)
	}
	if r := metactl(t, c.addr, "limit", "rm", "--principal", "alice").ok(t); !strings.Contains(r.stdout, "removed the limits of principal alice") {
		t.Fatalf("limit rm:\n%s", r.stdout)
	}
	metactl(t, c.addr, "limit", "ls", "-o", "json").ok(t).json(t, &ls)
	if len(ls.Limits) != 1 {
		t.Fatalf("after rm: %+v", ls)
	}
	for _, args := range [][]string{{"limit", "set", "--principal", "a"}, {"limit", "set", "--calls-per-sec", "1"},
		{"limit", "set", "--principal", "a", "--role", "admin", "--streams", "1"}, {"limit", "rm"}} {
		if r := metactl(t, c.addr, args...); r.code != exitUsage {
			t.Errorf("metactl %s: exit %d, want usage", strings.Join(args, " "), r.code)
		}
	}
}
