package main

import (
	"strings"
	"testing"
)

func TestLsRmRegexAndReplicaClear(t *testing.T) {
	c := startCluster(t)
	mountFor(t, c)
	for _, k := range []string{"b1", "a2", "a1", "c1", "a3"} {
		metactl(t, c.addr, "put", k, "--size", "64").ok(t)
	}
	metactl(t, c.addr, "put-start", "a4", "--size", "64").ok(t)
	var ls []lsView
	metactl(t, c.addr, "ls", "-o", "json").ok(t).json(t, &ls)
	if got := keysOf(ls); got != "a1,a2,a3,a4,b1,c1" {
		t.Fatalf("ls over pages: %s", got)
	}
	metactl(t, c.addr, "ls", "--prefix", "a", "--limit", "3", "-o", "json").ok(t).json(t, &ls)
	if got := keysOf(ls); got != "a1,a2,a3" {
		t.Fatalf("ls --prefix a --limit 3: %s", got)
	}
	metactl(t, c.addr, "ls", "--regex", "^a", "-o", "json").ok(t).json(t, &ls)
	if got := keysOf(ls); got != "a1,a2,a3" || ls[0].Size != 64 || ls[0].Replicas != 1 {
		t.Fatalf("ls --regex ^a (a4 not readable): %+v", ls)
	}
	if r := metactl(t, c.addr, "ls", "--regex", "(("); r.code != exitError || !strings.HasPrefix(r.stderr, "error: INVALID_PARAMS") {
		t.Fatalf("bad regex: %+v", r)
	}
	if r := metactl(t, c.addr, "ls", "--regex", "a", "--prefix", "a"); r.code != exitUsage {
		t.Fatalf("--regex with --prefix: %+v", r)
	}
	var rm []rmResultView
	metactl(t, c.addr, "rm", "--regex", "^a", "-o", "json").ok(t).json(t, &rm)
	if len(rm) != 4 || !rm[0].OK || rm[3].Key != "a4" || rm[3].OK || rm[3].Reason != "REPLICA_IS_NOT_READY" {
		t.Fatalf("rm --regex: %+v", rm)
	}
	if r := metactl(t, c.addr, "rm", "--regex", "^b").ok(t); !strings.Contains(r.stdout, "removed 1 object of 1 matching") {
		t.Fatalf("rm --regex table:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"rm"}, {"rm", "k", "--regex", "x"}} {
		if r := metactl(t, c.addr, args...); r.code != exitUsage {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	metactl(t, c.addr, "replica-clear", "c1", "zz", "-o", "json").ok(t).json(t, &rm)
	if len(rm) != 2 || !rm[0].OK || rm[1].OK || rm[1].Reason != "OBJECT_NOT_FOUND" {
		t.Fatalf("replica-clear: %+v", rm)
	}
	if r := metactl(t, c.addr, "replica-clear", "c1", "--segment", "nope"); r.code != exitUsage {
		t.Fatalf("replica-clear --segment nope: %+v", r)
	}
}

func keysOf(ls []lsView) string {
	ks := make([]string, len(ls))
	for i, v := range ls {
		ks[i] = v.Key
	}
	return strings.Join(ks, ",")
}
