package chaos

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// writeReport writes the drill's report folder: summary.txt, timeline.txt, timeline.svg, and,
// when something failed (or cfg.KeepHistory), history.txt and each node's digest text.
func writeReport(r *Result, cfg Config, ops []*Op, parts []*partition, end time.Duration) error {
	dir := cfg.ReportDir
	if err := writeFile(filepath.Join(dir, "summary.txt"), func(w io.Writer) error { return writeSummary(w, r, cfg) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "timeline.txt"), func(w io.Writer) error { return writeTimeline(w, r) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "timeline.svg"), func(w io.Writer) error { return writeSVG(w, r, end) }); err != nil {
		return err
	}
	if r.Failed() || cfg.KeepHistory {
		if err := writeFile(filepath.Join(dir, "history.txt"), func(w io.Writer) error { return writeHistory(w, ops, parts) }); err != nil {
			return err
		}
	}
	if r.Differing > 0 || cfg.KeepHistory {
		for _, d := range r.Digests {
			if err := os.WriteFile(filepath.Join(dir, "state-"+d.Node+".txt"), []byte(d.Text), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := fn(w); err != nil {
		_ = f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func ms(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// medianMax returns the median (upper middle) and the maximum of ds; -1, -1 when empty.
func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return -1, -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}

func writeSummary(w io.Writer, r *Result, cfg Config) error {
	verdict := "PASS"
	if r.Failed() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "metad failover drill, seed %d: %s\n", r.Seed, verdict)
	tiers := ""
	if cfg.Tiers {
		tiers = "CHAOS_TIERS=1 "
	}
	fmt.Fprintf(w, "rerun: %sCHAOS_SEED=%d CHAOS_DURATION=%s go test -run 'TestDrillShort$' -v ./test/chaos/\n\n", tiers, r.Seed, cfg.Duration)
	fmt.Fprintf(w, "fault phase %s after %s warmup, %s settle; %d clients; tenants %v, %d keys and %d groups of %d each; %.1fs wall\n\n",
		cfg.Duration, cfg.Warmup, cfg.Settle, cfg.Clients, cfg.Tenants, cfg.Singletons, cfg.Groups, groupMembers, r.Elapsed.Seconds())

	fmt.Fprintln(w, "checks")
	fmt.Fprintf(w, "  linearizability violations:             %d partitions (%d not decided within %s)\n", r.Strict(), r.Undecided(), cfg.CheckTimeout)
	bc := r.ByClass()
	var classNames []string
	for class := range bc {
		classNames = append(classNames, class)
	}
	sort.Strings(classNames)
	for _, class := range classNames {
		n := bc[class]
		what := "unexplained"
		if class != "" {
			what = "explained by the known anomaly " + class
			if slices.Contains(cfg.Tolerate, class) {
				what += " (tolerated)"
			}
		}
		fmt.Fprintf(w, "    %d %s\n", n, what)
	}
	fmt.Fprintf(w, "  acknowledged writes lost:               %d\n", len(r.Lost))
	fmt.Fprintf(w, "  reads absent during a write:            %d\n", len(r.Absent))
	fmt.Fprintf(w, "  nodes with a different state after heal: %d of %d (%s)\n", r.Differing, len(r.Digests), r.DigestBy)
	fmt.Fprintf(w, "  terms with two leaders:                 %d\n", len(r.TwoLeader))
	fmt.Fprintf(w, "  clients expired while a quorum was up:  %d\n", len(r.Expired))
	if cfg.Tiers {
		fmt.Fprintf(w, "  tiers seen by the reads:                %s\n", r.Tiers)
	}
	for _, e := range r.Expired {
		fmt.Fprintf(w, "    expired: %s\n", e)
	}
	for _, lr := range r.Nonlinear {
		class := ""
		if lr.Class != "" {
			class = " [" + lr.Class + "]"
		}
		fmt.Fprintf(w, "    partition p%d %s: %s%s (%d ops, %.1fs) %s\n", lr.Part.ID, lr.Part.label(), lr.Result, class, lr.Ops, lr.Elapsed.Seconds(), lr.Visual)
	}
	for _, l := range r.Lost {
		fmt.Fprintf(w, "    lost: %s\n", l)
	}
	for _, a := range r.Absent {
		fmt.Fprintf(w, "    absent: %s\n", a)
	}
	for _, t := range r.TwoLeader {
		fmt.Fprintf(w, "    two leaders in %s\n", t)
	}
	for _, d := range r.Digests {
		snap := ""
		if d.Snapshot != "" {
			snap = " snapshot " + d.Snapshot[:16]
		}
		fmt.Fprintf(w, "    %s applied %d state %.16s%s\n", d.Node, d.Applied, d.Sum, snap)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  harness error: %s\n", e)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}

	fmt.Fprintf(w, "\nhistory: %d operations, %d with an unknown outcome; left out: %d failed reads, %d write attempts certainly not proposed\n",
		r.Ops, r.Unknown, r.Dropped, r.Noops)
	var kinds []string
	for k := range r.ByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, k := range kinds {
		fmt.Fprintf(tw, "  %s\t%d\n", k, r.ByKind[k])
	}
	_ = tw.Flush()

	fmt.Fprintln(w, "\nfaults (unavailability: injection to the first successful probe write called after it)")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  at\tfault\thealed\tunavailable\tnote")
	for _, f := range r.Faults {
		fmt.Fprintf(tw, "  %.3fs\t%s\t%.3fs\t%s\t%s\n", f.At.Seconds(), f, f.HealedAt.Seconds(), ms(f.Unavail), f.Err)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nunavailability by fault kind")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  kind\tcount\tmedian\tmax")
	for _, k := range allFaults {
		ds := r.Unavail(k.Kind)
		if len(ds) == 0 {
			continue
		}
		med, mx := medianMax(ds)
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", k.Kind, len(ds), ms(med), ms(mx))
	}
	return tw.Flush()
}

// event is one line of the timeline.
type event struct {
	At   time.Duration
	Text string
}

func writeTimeline(w io.Writer, r *Result) error {
	var evs []event
	for _, f := range r.Faults {
		evs = append(evs, event{f.At, "inject " + f.String() + errSuffix(f.Err)})
		if f.HealedAt > f.At {
			evs = append(evs, event{f.HealedAt, fmt.Sprintf("heal   %s", f.Kind)})
		}
		if f.Unavail >= 0 {
			evs = append(evs, event{f.At + f.Unavail, fmt.Sprintf("write  first successful write after %s: unavailable %s", f.Kind, ms(f.Unavail))})
		}
	}
	for _, s := range r.Leaders {
		who := "none"
		if s.Node >= 0 {
			who = fmt.Sprintf("n%d (term %d)", s.Node+1, s.Term)
		}
		evs = append(evs, event{s.From, "leader " + who})
	}
	// Probe failures, coalesced into stretches.
	var failFrom time.Duration = -1
	var failN int
	for _, pw := range r.Probe {
		switch {
		case !pw.OK && failFrom < 0:
			failFrom, failN = pw.Call, 1
		case !pw.OK:
			failN++
		case failFrom >= 0:
			evs = append(evs, event{failFrom, fmt.Sprintf("probe  %d writes failed until %.3fs", failN, pw.Call.Seconds())})
			failFrom = -1
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At < evs[j].At })
	for _, e := range evs {
		if _, err := fmt.Fprintf(w, "%8.3fs  %s\n", e.At.Seconds(), e.Text); err != nil {
			return err
		}
	}
	return nil
}

// nodeColors are the leader colours of n1, n2, n3 (then repeat).
var nodeColors = []string{"#4c78a8", "#54a24b", "#e45756", "#b279a2", "#f58518"}

// writeSVG draws the timeline: one row per node (down, paused, isolated), the leader row, the
// probe's writes, and each fault's unavailability window.
func writeSVG(w io.Writer, r *Result, end time.Duration) error {
	const (
		left, right = 110.0, 20.0
		width       = 1400.0
		rowH, gap   = 22.0, 8.0
	)
	nodes := 3
	for _, s := range r.Leaders {
		nodes = max(nodes, s.Node+1)
	}
	rows := nodes + 3 // nodes, leader, probe, unavailability
	top := 40.0
	height := top + float64(rows)*(rowH+gap) + 70
	span := max(end.Seconds(), 1)
	x := func(d time.Duration) float64 { return left + (width-left-right)*d.Seconds()/span }
	rowY := func(i int) float64 { return top + float64(i)*(rowH+gap) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="monospace" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14">metad drill seed %d: %s</text>`+"\n", r.Seed, html.EscapeString(verdictLine(r)))
	label := func(i int, s string) {
		fmt.Fprintf(&b, `<text x="10" y="%.1f">%s</text>`+"\n", rowY(i)+rowH*0.7, html.EscapeString(s))
	}
	rect := func(i int, from, to time.Duration, fill, title string) {
		w := max(x(to)-x(from), 1)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
			x(from), rowY(i), w, rowH, fill, html.EscapeString(title))
	}
	// Node rows: a grey bar for up, coloured stretches for faults.
	for n := range nodes {
		label(n, fmt.Sprintf("n%d", n+1))
		rect(n, 0, end, "#eeeeee", fmt.Sprintf("n%d up", n+1))
	}
	for _, f := range r.Faults {
		n := -1
		fmt.Sscanf(f.Target, "n%d", &n)
		n--
		if n < 0 || n >= nodes || f.HealedAt <= f.At {
			continue
		}
		fill := map[FaultKind]string{KillLeader: "#d62728", KillFollower: "#d62728", StopLeader: "#ff9896",
			PauseLeader: "#ff7f0e", PauseFollower: "#ff7f0e", IsolateLeader: "#9467bd", IsolateFollower: "#9467bd"}[f.Kind]
		if fill == "" {
			continue
		}
		rect(n, f.At, f.HealedAt, fill, f.String())
	}
	// Leader row.
	li := nodes
	label(li, "leader")
	for _, s := range r.Leaders {
		fill, title := "#ffffff", "no leader"
		if s.Node >= 0 {
			fill, title = nodeColors[s.Node%len(nodeColors)], fmt.Sprintf("n%d term %d", s.Node+1, s.Term)
		}
		rect(li, s.From, s.To, fill, fmt.Sprintf("%s %.3f-%.3fs", title, s.From.Seconds(), s.To.Seconds()))
	}
	// Probe row: a tick per write at its return, green ok, red failed.
	pi := nodes + 1
	label(pi, "writes")
	for _, pw := range r.Probe {
		c := "#2ca02c"
		if !pw.OK {
			c = "#d62728"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`+"\n",
			x(pw.Return), x(pw.Return), rowY(pi)+2, rowY(pi)+rowH-2, c)
	}
	// Unavailability windows.
	ui := nodes + 2
	label(ui, "unavailable")
	for _, f := range r.Faults {
		if f.Unavail < 0 {
			continue
		}
		rect(ui, f.At, f.At+f.Unavail, "#d62728", fmt.Sprintf("%s: %s", f, ms(f.Unavail)))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333" stroke-dasharray="2,2"/>`+"\n",
			x(f.At), x(f.At), top-4, rowY(ui)+rowH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" transform="rotate(30 %.1f %.1f)">%s %s</text>`+"\n",
			x(f.At)+2, rowY(ui)+rowH+12, x(f.At)+2, rowY(ui)+rowH+12, html.EscapeString(string(f.Kind)), ms(f.Unavail))
	}
	// Time axis.
	ay := rowY(rows) + 40
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", left, width-right, ay, ay)
	step := 5 * time.Second
	if span > 120 {
		step = 15 * time.Second
	}
	for t := time.Duration(0); t <= end; t += step {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/><text x="%.1f" y="%.1f" text-anchor="middle">%ds</text>`+"\n",
			x(t), x(t), ay, ay+4, x(t), ay+16, int(t.Seconds()))
	}
	// Legend.
	ly := ay + 28
	legend := []struct{ c, s string }{{"#d62728", "killed"}, {"#ff9896", "stopped (SIGTERM)"}, {"#ff7f0e", "paused"},
		{"#9467bd", "isolated"}, {nodeColors[0], "n1 leads"}, {nodeColors[1], "n2 leads"}, {nodeColors[2], "n3 leads"}}
	lx := left
	for _, l := range legend {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			lx, ly-9, l.c, lx+14, ly, html.EscapeString(l.s))
		lx += 14 + 7*float64(len(l.s)) + 16
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func verdictLine(r *Result) string {
	v := "PASS"
	if r.Failed() {
		v = "FAIL"
	}
	med, mx := medianMax(r.Unavail(KillLeader))
	return fmt.Sprintf("%s; %d violations, %d lost, %d absent during a write, %d differing, %d two-leader terms; leader kill unavailability median %s max %s",
		v, r.Violations(), len(r.Lost), len(r.Absent), r.Differing, len(r.TwoLeader), ms(med), ms(mx))
}

// Summary is the table over many drills: one row per seed, then the totals and the unavailability
// after a leader kill over every drill's leader kills.
func Summary(w io.Writer, rs []*Result) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seed\tops\tunknown\tfaults\tviolations\tunexplained\tgroup-not-found\tdirty-absent\trestore-fenced\tundecided\tlost\tabsent\tdiffering\ttwo-leader\texpired\tleader kills\tmedian\tmax\tverdict\t")
	var all, longPauses []time.Duration
	var strict, unexpl, undec, lost, absent, diff, two, expired int
	classes := map[string]int{}
	for _, r := range rs {
		ds := r.Unavail(KillLeader)
		all = append(all, ds...)
		med, mx := medianMax(ds)
		v := "PASS"
		if r.Failed() {
			v = "FAIL"
		}
		bc := r.ByClass()
		for c, n := range bc {
			classes[c] += n
		}
		strict += r.Strict()
		unexpl += bc[""]
		undec += r.Undecided()
		lost += len(r.Lost)
		absent += len(r.Absent)
		diff += r.Differing
		two += len(r.TwoLeader)
		expired += len(r.Expired)
		for _, f := range r.Faults {
			if f.Kind == PauseLeader && f.Hold > clientTTL && f.Unavail >= 0 && f.Err == "" {
				longPauses = append(longPauses, f.Unavail)
			}
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", r.Seed, r.Ops, r.Unknown, len(r.Faults),
			r.Strict(), bc[""], bc[tolNames[tolGroupNotFound]], bc[tolNames[tolDirtyAbsent]], bc[tolNames[tolRestoreFenced]], r.Undecided(), len(r.Lost), len(r.Absent), r.Differing,
			len(r.TwoLeader), len(r.Expired), len(ds), ms(med), ms(mx), v)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	med, mx := medianMax(all)
	fmt.Fprintf(w, "\n%d drills\n", len(rs))
	fmt.Fprintf(w, "linearizability violations (partitions):   %d: %d unexplained, %d group-not-found, %d dirty-absent, %d restore-fenced; %d undecided\n",
		strict, unexpl, classes[tolNames[tolGroupNotFound]], classes[tolNames[tolDirtyAbsent]], classes[tolNames[tolRestoreFenced]], undec)
	fmt.Fprintf(w, "acknowledged writes lost:                  %d\n", lost)
	fmt.Fprintf(w, "reads absent during a write:               %d\n", absent)
	fmt.Fprintf(w, "nodes with a different state after heal:   %d\n", diff)
	fmt.Fprintf(w, "terms with two leaders:                    %d\n", two)
	fmt.Fprintf(w, "clients expired while a quorum was up:     %d\n", expired)
	fmt.Fprintf(w, "unavailability after a leader kill:        median %s, max %s over %d kills\n", ms(med), ms(mx), len(all))
	for _, k := range allFaults {
		if k.Kind == KillLeader {
			continue
		}
		var ds []time.Duration
		for _, r := range rs {
			ds = append(ds, r.Unavail(k.Kind)...)
		}
		if len(ds) > 0 {
			m, x := medianMax(ds)
			fmt.Fprintf(w, "unavailability after %-18s         median %s, max %s over %d\n", string(k.Kind)+":", ms(m), ms(x), len(ds))
		}
	}
	if len(longPauses) > 0 {
		m, x := medianMax(longPauses)
		fmt.Fprintf(w, "  of which leader pauses past client ttl:   median %s, max %s over %d\n", ms(m), ms(x), len(longPauses))
	}
	return nil
}
