package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
)

// readLines reads the records of one file.
func readLines(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestLogRotatesAndKeepsOrder: lines are written in order; the file rotates before it would pass
// MaxBytes, the newest rotated file is .1, no more than MaxFiles are kept, and every line that
// was not deleted with the oldest file is there once, in order.
func TestLogRotatesAndKeepsOrder(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(Config{Path: path, MaxBytes: 4096, MaxFiles: 2, Member: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	for i := range n {
		l.Write(&Record{Time: time.Unix(int64(i), 0).UTC(), Method: "Metadata/PutEnd", Key: fmt.Sprintf("k%03d", i), Code: "OK"})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(l.dropped); got != 0 {
		t.Fatalf("%v lines dropped with a queue of %d", got, DefaultQueue)
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Fatalf("a third rotated file: %v", err)
	}
	var all []Record
	for _, p := range []string{path + ".2", path + ".1", path} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 4096 {
			t.Fatalf("%s holds %d bytes, over the bound", p, st.Size())
		}
		all = append(all, readLines(t, p)...)
	}
	if len(all) == 0 || len(all) >= n {
		t.Fatalf("%d lines kept of %d: the oldest file should be gone", len(all), n)
	}
	first := n - len(all)
	for i, r := range all {
		if r.Key != fmt.Sprintf("k%03d", first+i) || r.Member != "n1" {
			t.Fatalf("line %d is %+v, want key k%03d of member n1", i, r, first+i)
		}
	}
	if got := testutil.ToFloat64(l.lines); got != n {
		t.Fatalf("lines counted %v, want %d", got, n)
	}
}

// TestLogAppendsAndDropsAfterClose: a reopened log appends to its file; a line written after
// Close is dropped and counted.
func TestLogAppendsAndDropsAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "audit.log")
	for round := range 2 {
		l, err := Open(Config{Path: path, MaxBytes: DefaultMaxBytes, MaxFiles: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Write(&Record{Method: fmt.Sprint("m", round), Code: "OK"})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l.Write(&Record{Method: "late"})
		if got := testutil.ToFloat64(l.dropped); got != 1 {
			t.Fatalf("dropped %v after close, want 1", got)
		}
	}
	if got := readLines(t, path); len(got) != 2 || got[0].Method != "m0" || got[1].Method != "m1" {
		t.Fatalf("lines %+v", got)
	}
}

func TestConfigRefusals(t *testing.T) {
	for _, c := range []Config{
		{MaxBytes: DefaultMaxBytes, MaxFiles: 1},
		{Path: "x", MaxBytes: 10, MaxFiles: 1},
		{Path: "x", MaxBytes: DefaultMaxBytes},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := Open(Config{Path: filepath.Join(t.TempDir(), "no", "such", "dir"), MaxBytes: DefaultMaxBytes, MaxFiles: 1}, nil); err == nil {
		t.Fatal("opened a file in a missing directory")
	}
}

func TestKeyText(t *testing.T) {
	for k, want := range map[string]string{"cache/a-1": "cache/a-1", "k\x00": "b64:awA=", "\xff": "b64:/w==", "тест": "тест"} {
		if got := KeyText([]byte(k)); got != want {
			t.Errorf("KeyText(%q) = %q, want %q", k, got, want)
		}
	}
}

// BenchmarkWrite is what a call pays for its line: encoding and queueing (the writer drains the
// queue to a file meanwhile).
func BenchmarkWrite(b *testing.B) {
	l, err := Open(Config{Path: filepath.Join(b.TempDir(), "audit.log"), MaxBytes: DefaultMaxBytes, MaxFiles: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	r := &Record{Time: time.Now().UTC(), Member: "n1", Principal: "alice", KeyID: "k-0123456789", Peer: "127.0.0.1:50000",
		Method: "Metadata/PutEnd", Tenant: "acme", Key: "cache/model-7/block-000123", Code: "OK", LatencyUS: 812}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l.Write(r)
	}
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(testutil.ToFloat64(l.dropped), "dropped")
}
