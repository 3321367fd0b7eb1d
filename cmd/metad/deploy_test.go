package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"metad/client"
	metadv1 "metad/proto/metadv1"
)

// The files of deploy/: the Grafana dashboard and the Prometheus alert rules an operator installs
// (docs/operations.md, "Dashboards and alerts").
const (
	dashboardFile  = "../../deploy/grafana/metad.json"
	alertRulesFile = "../../deploy/prometheus/alerts.yml"
	operationsDoc  = "../../docs/operations.md"
)

// deployExpr is one PromQL expression of the deploy files and where it is.
type deployExpr struct {
	where, expr string
}

// grafanaDatasource is a panel's, a target's or a variable's data source reference.
type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string             `json:"refId"`
		Expr       string             `json:"expr"`
		Datasource *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

type grafanaDashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string             `json:"name"`
			Type       string             `json:"type"`
			Query      json.RawMessage    `json:"query"`
			Datasource *grafanaDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

// promDatasource is the reference every query of the dashboard uses: its datasource variable.
var promDatasource = grafanaDatasource{Type: "prometheus", UID: "${datasource}"}

var (
	grafanaVarRE   = regexp.MustCompile(`\$(\{[^}]*\}|\w+)`)
	labelValuesRE  = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)
	queryResultRE  = regexp.MustCompile(`^query_result\((.*)\)$`)
	grafanaBuiltin = map[string]bool{"__rate_interval": true, "__interval": true, "__range": true}
)

// grafanaVarName is the name of a variable reference ($name, ${name} or ${name:format}).
func grafanaVarName(ref string) string {
	name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(ref, "$"), "{"), "}")
	name, _, _ = strings.Cut(name, ":")
	return name
}

// loadDashboard reads the dashboard, checks its shape (a datasource variable and a member
// variable; every panel queries through the datasource variable, has targets, an id of its own and
// a place on the grid; every variable a query names is defined) and returns its expressions, the
// variables' queries included.
func loadDashboard(t *testing.T) []deployExpr {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("%s: title %q, uid %q, schemaVersion %d: want a title, a uid and schemaVersion >= 36", dashboardFile, d.Title, d.UID, d.SchemaVersion)
	}
	var out []deployExpr
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type != "query" {
			continue
		}
		where := fmt.Sprintf("dashboard variable %s", v.Name)
		if v.Datasource == nil || *v.Datasource != promDatasource {
			t.Errorf("%s: datasource %v, want %v", where, v.Datasource, promDatasource)
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &obj); err != nil {
				t.Errorf("%s: query %s: %v", where, v.Query, err)
			}
			q = obj.Query
		}
		if m := labelValuesRE.FindStringSubmatch(q); m != nil {
			out = append(out, deployExpr{where, m[1]})
		} else if m := queryResultRE.FindStringSubmatch(q); m != nil {
			out = append(out, deployExpr{where, m[1]})
		} else if !strings.HasPrefix(q, "label_values(") {
			t.Errorf("%s: query %q: want label_values(selector, label) or query_result(expr)", where, q)
		}
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("%s: no variable datasource of type datasource", dashboardFile)
	}
	if vars["instance"] != "query" {
		t.Errorf("%s: no variable instance (the members) of type query", dashboardFile)
	}
	ids := map[int]string{}
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			where := fmt.Sprintf("dashboard panel %d %q", p.ID, p.Title)
			if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
				t.Errorf("%s: id taken by %s (or not positive)", where, prev)
			}
			ids[p.ID] = where
			if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
				t.Errorf("%s: gridPos %+v off the 24-column grid", where, g)
			}
			if p.Type == "row" {
				if len(p.Targets) > 0 {
					t.Errorf("%s: a row with targets", where)
				}
				walk(p.Panels)
				continue
			}
			if p.Title == "" || p.Datasource == nil || *p.Datasource != promDatasource || len(p.Targets) == 0 {
				t.Errorf("%s: want a title, datasource %v and targets; datasource %v, %d targets", where, promDatasource, p.Datasource, len(p.Targets))
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				tw := fmt.Sprintf("%s target %s", where, tg.RefID)
				if tg.RefID == "" || refs[tg.RefID] || strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: want a refId of its own and an expression", tw)
				}
				refs[tg.RefID] = true
				if tg.Datasource != nil && *tg.Datasource != promDatasource {
					t.Errorf("%s: datasource %v, want the panel's", tw, *tg.Datasource)
				}
				for _, ref := range grafanaVarRE.FindAllString(tg.Expr, -1) {
					if name := grafanaVarName(ref); vars[name] == "" && !grafanaBuiltin[name] {
						t.Errorf("%s: names variable %s, which the dashboard does not define", tw, ref)
					}
				}
				out = append(out, deployExpr{tw, tg.Expr})
			}
		}
	}
	walk(d.Panels)
	return out
}

// alertRules is the shape of a Prometheus rule file.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// loadAlertRules reads the rule file, checks that every rule is an alert with a for, a severity,
// a summary and a description, and a runbook_url naming a section of docs/operations.md, and
// returns the expressions.
func loadAlertRules(t *testing.T) []deployExpr {
	t.Helper()
	raw, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f alertRules
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertRulesFile, err)
	}
	anchors := docAnchors(t, operationsDoc)
	var out []deployExpr
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			where := fmt.Sprintf("rule group %s alert %s", g.Name, r.Alert)
			if r.Alert == "" || r.For == "" || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("%s: want alert, expr and for (record rules: none here)", where)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", where, s)
			}
			if r.Annotations["summary"] == "" || !strings.Contains(r.Annotations["description"], "docs/operations.md") {
				t.Errorf("%s: want a summary and a description that names its section of docs/operations.md", where)
			}
			doc, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "#")
			if doc != "docs/operations.md" || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q names no section of docs/operations.md", where, r.Annotations["runbook_url"])
			}
			out = append(out, deployExpr{where, r.Expr})
		}
	}
	if len(out) == 0 {
		t.Errorf("%s: no rules", alertRulesFile)
	}
	return out
}

// docAnchors returns the anchors of the headings of a Markdown file, as GitHub makes them
// (lower case, punctuation dropped, spaces as hyphens).
func docAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		out[b.String()] = true
	}
	return out
}

// TestDeployFilesAreWellFormed: the dashboard and the rules parse, have the shape
// loadDashboard and loadAlertRules check, and every expression names at least one metric and
// reads as PromQL to promqlMetrics.
func TestDeployFilesAreWellFormed(t *testing.T) {
	exprs := append(loadDashboard(t), loadAlertRules(t)...)
	for _, e := range exprs {
		names, err := promqlMetrics(e.expr)
		if err != nil || len(names) == 0 {
			t.Errorf("%s: %q: metrics %v, %v", e.where, e.expr, names, err)
		}
	}
}

// TestDeployNamesExportedMetrics: every metric an expression of the dashboard or the rules names
// is a family a real member exports. The daemon's registry lives inside serve, so the test starts
// a one-member TLS cluster in this process, exercises it until the vectors that appear only after
// a first use have a child (calls, one refused; a segment filled past a low watermark, so the
// evictor runs a round), and reads the families of its /metrics (their # TYPE lines). A metric
// that exists but that no member exports until some use the exercise lacks fails too: extend the
// exercise. A histogram is named by its _bucket, _sum or _count series; `up` is Prometheus's own.
func TestDeployNamesExportedMetrics(t *testing.T) {
	exprs := append(loadDashboard(t), loadAlertRules(t)...)
	used := map[string][]string{} // metric -> where
	for _, e := range exprs {
		names, err := promqlMetrics(e.expr)
		if err != nil {
			t.Fatalf("%s: %v", e.where, err)
		}
		for _, n := range names {
			used[n] = append(used[n], e.where)
		}
	}

	c := newCerts(t, "n1")
	cfg := startNode(t, c, "require", func(cfg *Config) {
		cfg.LeaseTTL = time.Second    // the evictor waits one lease ttl after the election
		cfg.EvictHighWatermark = 0.25 // the one object put below fills the segment past it
	})
	exerciseMember(t, c, cfg)

	root := c.client("root")
	var missing []string
	var families map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		families = scrapeFamilies(metricsText(t, cfg.ListenMetrics, root))
		missing = missing[:0]
		for n, where := range used {
			if err := exported(n, families); err != nil {
				missing = append(missing, fmt.Sprintf("%s (%v), named by %s", n, err, strings.Join(where, "; ")))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no member exports %s", m)
	}
	var unused []string
	for n := range families {
		if strings.HasPrefix(n, "metad_") && used[n] == nil && used[n+"_bucket"] == nil && used[n+"_sum"] == nil && used[n+"_count"] == nil {
			unused = append(unused, n)
		}
	}
	sort.Strings(unused)
	t.Logf("%d metrics named; metad families the files leave out: %s", len(used), strings.Join(unused, " "))
}

// exerciseMember makes the member create the series that appear only after a first use: calls of
// some methods (one of them refused by authorization) and an eviction round (a segment filled past
// the watermark the test set).
func exerciseMember(t *testing.T, c *certs, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := client.New(client.Config{Endpoints: []string{cfg.ListenClient}, TLS: c.client("root")})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.MountSegment(ctx, &metadv1.SegmentDesc{Id: client.NewUUID().Bytes(), Name: "dash", Base: 1 << 30, Size: 1 << 20,
		Endpoint: "127.0.0.1:1", Tier: metadv1.Tier_TIER_MEMORY}); err != nil {
		t.Fatalf("mount: %v", err)
	}
	if _, err := cl.Put(ctx, "default", "fill", 512<<10, nil); err != nil {
		t.Fatalf("put: %v", err)
	}
	if _, err := cl.ListTenants(ctx); err != nil {
		t.Fatalf("tenant ls: %v", err)
	}
	alice, err := client.New(client.Config{Endpoints: []string{cfg.ListenClient}, TLS: c.client("alice"), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	if _, err := alice.ListTenants(ctx); err == nil {
		t.Fatal("a principal with no role listed the tenants")
	}
}

// scrapeFamilies returns the metric families of a /metrics page in the text format, by name, with
// their types.
func scrapeFamilies(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// exported says whether name is a series of one of the families: the family itself (not a
// histogram, which has no series of its bare name), a histogram's _bucket, _sum or _count, a
// summary's _sum or _count, or `up`, the series Prometheus adds to every target.
func exported(name string, families map[string]string) error {
	if name == "up" {
		return nil
	}
	if typ, ok := families[name]; ok {
		if typ == "histogram" {
			return fmt.Errorf("a histogram: name its _bucket, _sum or _count")
		}
		return nil
	}
	for _, sfx := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, sfx)
		if !ok {
			continue
		}
		if typ := families[base]; typ == "histogram" || (typ == "summary" && sfx != "_bucket") {
			return nil
		} else if typ != "" {
			return fmt.Errorf("%s is a %s", base, typ)
		}
	}
	return fmt.Errorf("no such family")
}

// TestDashboardQueriesPassPromtool: with $PROMTOOL set (make lint sets it), every expression of
// the dashboard, its variables replaced by values, is a recording rule that `promtool check
// rules` accepts, so the dashboard's PromQL is checked as strictly as the alert rules'.
func TestDashboardQueriesPassPromtool(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		t.Skip("PROMTOOL is not set (make lint sets it)")
	}
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	exprs := loadDashboard(t)
	for i, e := range exprs {
		expr := grafanaVarRE.ReplaceAllStringFunc(e.expr, func(ref string) string {
			if strings.HasPrefix(grafanaVarName(ref), "__") {
				return "5m" // the interval variables stand in a range
			}
			return "x" // the others stand in label values
		})
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: expr})
	}
	raw, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		for i, e := range exprs {
			if strings.Contains(string(out), fmt.Sprintf("dashboard:query_%d\"", i)) {
				t.Logf("%s: %s", e.where, e.expr)
			}
		}
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s", len(rules), err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

// promqlKeywords are the words of PromQL that are no metric: binary operators and modifiers,
// aggregation operators (followed by a clause or a bracket) and the number literals. Any other
// word followed by "(" is a function.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true, "stdvar": true,
	"topk": true, "bottomk": true, "quantile": true, "count_values": true, "limitk": true, "limit_ratio": true,
	"inf": true, "nan": true,
}

// promqlLabelClauses are the words whose bracket lists label names.
var promqlLabelClauses = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// promqlToken is one token of an expression: a word, a number or duration, a string, a Grafana
// variable or one character of punctuation.
type promqlToken struct {
	kind byte // 'w' word, 'n' number, 's' string, 'v' variable, 'p' punctuation
	text string
}

func isWordStart(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isWordByte(c byte) bool { return isWordStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// promqlLex splits expr into tokens; an unterminated string is an error.
func promqlLex(expr string) ([]promqlToken, error) {
	var out []promqlToken
	for i := 0; i < len(expr); {
		c := expr[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '#': // a comment, to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
			continue
		case c == '"' || c == '\'' || c == '`':
			i++
			for i < len(expr) && expr[i] != c {
				if expr[i] == '\\' && c != '`' {
					i++
				}
				i++
			}
			if i >= len(expr) {
				return nil, fmt.Errorf("unterminated string at offset %d", start)
			}
			i++
			out = append(out, promqlToken{'s', expr[start:i]})
		case c == '$': // a Grafana variable: $name or ${name...}
			i++
			if i < len(expr) && expr[i] == '{' {
				end := strings.IndexByte(expr[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated variable at offset %d", start)
				}
				i += end + 1
			} else {
				for i < len(expr) && isWordByte(expr[i]) {
					i++
				}
			}
			out = append(out, promqlToken{'v', expr[start:i]})
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])): // 0.99, 1e-3, 0x1f, 5m, 1h30m
			i++
			for i < len(expr) {
				if d := expr[i]; d == '.' || isDigit(d) || (d >= 'a' && d <= 'z') || (d >= 'A' && d <= 'Z') {
					i++
				} else if (d == '-' || d == '+') && (expr[i-1] == 'e' || expr[i-1] == 'E') && !strings.HasPrefix(expr[start:], "0x") &&
					i+1 < len(expr) && isDigit(expr[i+1]) {
					i++
				} else {
					break
				}
			}
			out = append(out, promqlToken{'n', expr[start:i]})
		case isWordStart(c):
			for i < len(expr) && isWordByte(expr[i]) {
				i++
			}
			out = append(out, promqlToken{'w', expr[start:i]})
		default:
			i++
			out = append(out, promqlToken{'p', expr[start:i]})
		}
	}
	return out, nil
}

// promqlMetrics returns the metric names expr selects, each once, in order of first use: the
// words that are not keywords, not functions (a word followed by "("), not label names (inside
// {...} or the bracket of by, without, on, ignoring, group_left, group_right) and not inside a
// range [...]. Grafana variables and strings are no names. Brackets must balance, and a selector
// must name its metric (a bare {__name__=...} cannot be checked).
func promqlMetrics(expr string) ([]string, error) {
	toks, err := promqlLex(expr)
	if err != nil {
		return nil, err
	}
	type frame struct {
		open   string
		labels bool // a bracket of label names
	}
	var stack []frame
	var names []string
	lastMetric := -1
	closers := map[string]string{")": "(", "}": "{", "]": "["}
	for i, tk := range toks {
		var top frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tk.kind {
		case 'p':
			switch tk.text {
			case "(":
				prev := i > 0 && toks[i-1].kind == 'w' && promqlLabelClauses[strings.ToLower(toks[i-1].text)]
				stack = append(stack, frame{open: "(", labels: prev})
			case "{":
				if i == 0 || lastMetric != i-1 {
					return nil, fmt.Errorf("a selector with no metric name at token %d", i)
				}
				stack = append(stack, frame{open: "{"})
			case "[":
				stack = append(stack, frame{open: "["})
			case ")", "}", "]":
				if top.open != closers[tk.text] {
					return nil, fmt.Errorf("%q at token %d closes %q", tk.text, i, top.open)
				}
				stack = stack[:len(stack)-1]
			}
		case 'w':
			if top.open == "{" || top.open == "[" || top.labels {
				continue
			}
			if (i+1 < len(toks) && toks[i+1].text == "(") || promqlKeywords[strings.ToLower(tk.text)] {
				continue
			}
			lastMetric = i
			if !slices.Contains(names, tk.text) {
				names = append(names, tk.text)
			}
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("%q is never closed", stack[len(stack)-1].open)
	}
	return names, nil
}

func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`histogram_quantile(0.99, sum by (method, le) (rate(a_seconds_bucket{job="$job", instance=~"$instance"}[$__rate_interval])))`, []string{"a_seconds_bucket"}},
		{`max by (job) (is_leader) == 0`, []string{"is_leader"}},
		{`a - on (job) group_left b * ignoring(le) group_right (x) c`, []string{"a", "b", "c"}},
		{`sum without (instance) (rate(x_total[5m] offset 1h)) > bool 0`, []string{"x_total"}},
		{`up{job="metad"} == 0 AND ON() absent(y{le="+Inf"})`, []string{"up", "y"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{"m1 / m2 # a comment naming not_a_metric\n + m1", []string{"m1", "m2"}},
		{`min by (listener) (exp) < 14 * 86400 and 1e-3 * m > Inf`, []string{"exp", "m"}},
		{`delta((c - a)[10m:1m]) > 0 unless topk(3, sum by (tenant) (q:rule))`, []string{"c", "a", "q:rule"}},
		{`deriv(applied{instance=~"${instance:regex}"}[5m])`, []string{"applied"}},
	} {
		got, err := promqlMetrics(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{job="x"}`, `sum(rate(m[5m])`, `m{a="b}`, `m)`, `rate(m{a="b"]`} {
		if got, err := promqlMetrics(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, got)
		}
	}
}
