package main

import (
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
goarch: amd64
pkg: metad/store
BenchmarkPointGet/metad           	  415215	      2000 ns/op	      48 B/op	       1 allocs/op
BenchmarkPointGet/metad-2         	  719772	      1000 ns/op	      48 B/op	       1 allocs/op
BenchmarkPointGet/baseline        	  309082	      3000 ns/op	      48 B/op	       1 allocs/op
BenchmarkPointGet/baseline-2      	 1036878	       900 ns/op	      48 B/op	       1 allocs/op
BenchmarkHeapPerObject/group8/metad-2         	1000000000	         0.25 ns/op	       300.0 B/object	       0 B/op	       0 allocs/op
BenchmarkHeapPerObject/group8/baseline-2      	1000000000	         0.25 ns/op	       400.0 B/object	       0 B/op	       0 allocs/op
BenchmarkCensus/metad-4  	      10	 100 ns/op	 50.00 ns/object
BenchmarkCensus/metad-4  	      10	 300 ns/op	 50.00 ns/object
BenchmarkCensus/metad-4  	      10	 200 ns/op	 50.00 ns/object
BenchmarkCensus/baseline-4  	      10	 100 ns/op	 50.00 ns/object
BenchmarkOther/metad	100	50 ns/op
BenchmarkOther/baseline	100	100 ns/op
BenchmarkLonely/metad	100	50 ns/op
BenchmarkWeird/metad-x	100	50 ns/op
--- FAIL: BenchmarkSomething
PASS
`

func TestParseLine(t *testing.T) {
	s, ok := parseLine("BenchmarkHeapPerObject/singleton/baseline-16 \t 1 \t 5.0 ns/op \t 212.5 B/object")
	if !ok || s.name != "HeapPerObject/singleton" || s.design != "baseline" || s.cpu != 16 ||
		s.metrics["B/object"] != 212.5 || s.metrics["ns/op"] != 5 {
		t.Fatalf("got %+v, %v", s, ok)
	}
	if s, ok := parseLine("BenchmarkPointGet/metad   10   7 ns/op"); !ok || s.cpu != 1 || s.design != "metad" {
		t.Fatalf("no cpu suffix: got %+v, %v", s, ok)
	}
	for _, bad := range []string{
		"BenchmarkPointGet-2   10   7 ns/op", // no design
		"BenchmarkPointGet/other-2   10   7 ns/op",
		"BenchmarkPointGet/metad-x   10   7 ns/op",
		"BenchmarkPointGet/metad   ten   7 ns/op",
		"PASS",
		"ok  	metad/store	118.093s",
	} {
		if _, ok := parseLine(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestTable(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader(sampleOutput), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| PointGet | 1 | 2000 ns/op | 3000 ns/op | 1.50 | baseline/metad ns/op, higher is better | >= 1.00 | PASS |",
		"| PointGet | 2 | 1000 ns/op | 900 ns/op | 0.90 | baseline/metad ns/op, higher is better | >= 1.00 | MISS |",
		"| HeapPerObject/group8 | 2 | 300 B/object | 400 B/object | 0.75 | metad/baseline B/object, lower is better | <= 0.85 | PASS |",
		// the median of 100, 300, 200 against 100
		"| Census | 4 | 200 ns/op | 100 ns/op | 2.00 | metad/baseline ns/op, lower is better | <= 1.50 | MISS |",
		"| Other | 1 | 50.0 ns/op | 100 ns/op | 2.00 | baseline/metad ns/op, higher is better | - | - |",
		"2 of 4 targeted rows PASS.",
		"Not in the input: GroupMemberGet, Batch32, Batch32Collide, HeapPerObject/singleton.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "Lonely") || strings.Contains(got, "Weird") {
		t.Errorf("unpaired figure in the table:\n%s", got)
	}
	// PointGet rows come first, in cpu order, before the untargeted pair.
	if i, j := strings.Index(got, "| PointGet | 1"), strings.Index(got, "| Other"); i < 0 || j < i {
		t.Errorf("row order:\n%s", got)
	}
}

func TestNoPairs(t *testing.T) {
	var out strings.Builder
	if err := run(strings.NewReader("PASS\nBenchmarkLonely/metad 1 5 ns/op\n"), &out); err == nil {
		t.Fatalf("no error for an input with no pair; printed\n%s", out.String())
	}
}
