// Command benchratio turns the output of the store benchmarks into the ratio table of
// docs/performance.md. It reads `go test -bench` output on stdin, pairs every
// Benchmark<Name>/metad-<cpu> with Benchmark<Name>/baseline-<cpu> (the same figure of the store and of
// the old shard-lock design, measured in the same run), and prints a markdown table: the figure, the
// CPU count, both values, their ratio, the figure's target and PASS or MISS.
//
//	go test -run '^$' -bench . -benchmem -cpu 1,2 ./store/ | tee bench-store.txt
//	go run ./store/internal/benchratio < bench-store.txt
//
// Ratios read so that the direction is stated in the table: for throughput figures (ns/op of an
// operation) ratio = baseline / metad, so above 1 means metad is faster; for heap bytes per object
// and for the census time ratio = metad / baseline, so below 1 means metad is smaller or faster.
// A figure measured several times (-count) is summarized by its median. The exit status is 1 when
// the input holds no pair at all, so a broken benchmark run does not pass as an empty table.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// figure is one row kind of the table: which benchmark, which unit, how the ratio is taken and what
// the target asks of it.
type figure struct {
	name    string // benchmark name without "Benchmark" and without the design
	unit    string // the metric compared
	inverse bool   // ratio = metad/baseline (smaller is better) instead of baseline/metad
	target  float64
	atLeast bool // PASS when ratio >= target; otherwise when ratio <= target
}

// targets are the targeted figures, in the order of the table in docs/performance.md.
var targets = []figure{
	{name: "PointGet", unit: "ns/op", target: 1.0, atLeast: true},
	{name: "GroupMemberGet", unit: "ns/op", target: 1.15, atLeast: true},
	{name: "Batch32", unit: "ns/op", target: 1.3, atLeast: true},
	{name: "Batch32Collide", unit: "ns/op", target: 10, atLeast: true},
	{name: "HeapPerObject/singleton", unit: "B/object", inverse: true, target: 1.0},
	{name: "HeapPerObject/group8", unit: "B/object", inverse: true, target: 0.85},
	{name: "Census", unit: "ns/op", inverse: true, target: 1.5},
}

func (f figure) means() string {
	if f.inverse {
		return "metad/baseline " + f.unit + ", lower is better"
	}
	return "baseline/metad " + f.unit + ", higher is better"
}

func (f figure) targetText() string {
	if f.target == 0 {
		return "-"
	}
	if f.atLeast {
		return ">= " + fmtRatio(f.target)
	}
	return "<= " + fmtRatio(f.target)
}

// sample is one benchmark line: a figure of one design at one CPU count.
type sample struct {
	name    string // without "Benchmark" and the design
	design  string // "metad" or "baseline"
	cpu     int
	metrics map[string]float64 // unit -> value
}

// parseLine parses one result line of `go test -bench`; ok is false for any other line and for
// benchmarks that are not .../metad or .../baseline.
func parseLine(line string) (s sample, ok bool) {
	fs := strings.Fields(line)
	if len(fs) < 4 || !strings.HasPrefix(fs[0], "Benchmark") {
		return sample{}, false
	}
	if _, err := strconv.ParseInt(fs[1], 10, 64); err != nil {
		return sample{}, false
	}
	full := strings.TrimPrefix(fs[0], "Benchmark")
	slash := strings.LastIndexByte(full, '/')
	if slash <= 0 {
		return sample{}, false
	}
	s.name, s.design, s.cpu = full[:slash], full[slash+1:], 1
	if dash := strings.LastIndexByte(s.design, '-'); dash >= 0 {
		n, err := strconv.Atoi(s.design[dash+1:])
		if err != nil || n < 1 {
			return sample{}, false
		}
		s.design, s.cpu = s.design[:dash], n
	}
	if s.design != "metad" && s.design != "baseline" {
		return sample{}, false
	}
	s.metrics = map[string]float64{}
	for i := 2; i+1 < len(fs); i += 2 {
		v, err := strconv.ParseFloat(fs[i], 64)
		if err != nil {
			return sample{}, false
		}
		s.metrics[fs[i+1]] = v
	}
	return s, true
}

// pairKey names one row: a figure at one CPU count.
type pairKey struct {
	name string
	cpu  int
}

// results holds every parsed sample: [pairKey][design][unit] -> values, and the order in which
// figures first appeared.
type results struct {
	vals  map[pairKey]map[string]map[string][]float64
	order []pairKey
}

func parse(r io.Reader) (*results, error) {
	res := &results{vals: map[pairKey]map[string]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		s, ok := parseLine(sc.Text())
		if !ok {
			continue
		}
		k := pairKey{s.name, s.cpu}
		byDesign := res.vals[k]
		if byDesign == nil {
			byDesign = map[string]map[string][]float64{}
			res.vals[k] = byDesign
			res.order = append(res.order, k)
		}
		byUnit := byDesign[s.design]
		if byUnit == nil {
			byUnit = map[string][]float64{}
			byDesign[s.design] = byUnit
		}
		for u, v := range s.metrics {
			byUnit[u] = append(byUnit[u], v)
		}
	}
	return res, sc.Err()
}

// value returns the median of a figure's samples for one design and unit.
func (r *results) value(k pairKey, design, unit string) (float64, bool) {
	vs := r.vals[k][design][unit]
	if len(vs) == 0 {
		return 0, false
	}
	vs = slices.Clone(vs)
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2, true
	}
	return vs[len(vs)/2], true
}

// row is one line of the table.
type row struct {
	fig         figure
	cpu         int
	metad, base float64
	ratio       float64
	verdict     string // PASS, MISS or "-" (no target)
}

// rows pairs the results: the targeted figures first in the order of targets, then any other pair in
// input order. missing lists targeted figures with no pair at all.
func rows(r *results) (out []row, missing []string) {
	byName := map[string][]int{}
	for _, k := range r.order {
		byName[k.name] = append(byName[k.name], k.cpu)
	}
	add := func(f figure, cpu int) bool {
		k := pairKey{f.name, cpu}
		m, ok1 := r.value(k, "metad", f.unit)
		b, ok2 := r.value(k, "baseline", f.unit)
		if !ok1 || !ok2 || m <= 0 || b <= 0 {
			return false
		}
		rw := row{fig: f, cpu: cpu, metad: m, base: b, ratio: b / m, verdict: "-"}
		if f.inverse {
			rw.ratio = m / b
		}
		if f.target != 0 {
			pass := rw.ratio <= f.target
			if f.atLeast {
				pass = rw.ratio >= f.target
			}
			rw.verdict = "MISS"
			if pass {
				rw.verdict = "PASS"
			}
		}
		out = append(out, rw)
		return true
	}
	known := map[string]bool{}
	for _, f := range targets {
		known[f.name] = true
		cpus := slices.Clone(byName[f.name])
		slices.Sort(cpus)
		found := false
		for _, c := range slices.Compact(cpus) {
			if add(f, c) {
				found = true
			}
		}
		if !found {
			missing = append(missing, f.name)
		}
	}
	for _, k := range r.order {
		if !known[k.name] {
			add(figure{name: k.name, unit: "ns/op"}, k.cpu)
		}
	}
	return out, missing
}

func fmtRatio(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func fmtValue(v float64, unit string) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " " + unit
}

// write prints the markdown table and a one-line summary.
func write(w io.Writer, rs []row, missing []string) {
	fmt.Fprintln(w, "| figure | cpu | metad | baseline | ratio | ratio is | target | result |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
	pass, total := 0, 0
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", r.fig.name, r.cpu,
			fmtValue(r.metad, r.fig.unit), fmtValue(r.base, r.fig.unit), fmtRatio(r.ratio), r.fig.means(),
			r.fig.targetText(), r.verdict)
		if r.verdict != "-" {
			total++
			if r.verdict == "PASS" {
				pass++
			}
		}
	}
	fmt.Fprintf(w, "\n%d of %d targeted rows PASS.\n", pass, total)
	if len(missing) > 0 {
		fmt.Fprintf(w, "Not in the input: %s.\n", strings.Join(missing, ", "))
	}
}

func run(in io.Reader, out io.Writer) error {
	res, err := parse(in)
	if err != nil {
		return err
	}
	rs, missing := rows(res)
	if len(rs) == 0 {
		return fmt.Errorf("no .../metad and .../baseline benchmark pair in the input")
	}
	write(out, rs, missing)
	return nil
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
}
