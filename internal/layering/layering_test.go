package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// designDoc is the file that holds the package table, relative to the module root.
const designDoc = "docs/design.md"

// tableHeading is the line above the package table in designDoc.
const tableHeading = "## Packages"

// tableHeader is the table's header row, column by column.
var tableHeader = []string{"package", "its one job", "imports"}

// table is the package table: for each package of the module, by its path below the module root,
// the packages of the module its row allows it to import, and its level.
type table struct {
	rows    []string            // packages in the order of the table
	allowed map[string][]string // package -> the packages its row names, in row order
	line    map[string]int      // package -> the line of its row in the document (1-based)
	level   map[string]int      // 0 for a row that names no package, else 1 + the highest level it names
}

var backticked = regexp.MustCompile("`([^`]*)`")

// names returns the names in backticks in a table cell, each as a package path below the module
// root: a leading "./" and a trailing "/" are dropped.
func names(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		n := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(m[1]), "./"), "/")
		out = append(out, n)
	}
	return out
}

// cells splits a markdown table row into its trimmed cells; ok is false when line is not a row.
func cells(line string) (out []string, ok bool) {
	line = strings.TrimSpace(line)
	if len(line) < 2 || !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil, false
	}
	for _, c := range strings.Split(line[1:len(line)-1], "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out, true
}

var separatorCell = regexp.MustCompile(`^:?-+:?$`)

// parseTable reads the first markdown table below the line tableHeading in doc. Its columns must be
// tableHeader. The first column names one or more packages in backticks; the imports column names in
// backticks the packages those may import, and each such name must have a row of its own. The
// allowed imports must form no cycle: levels are computed from them.
func parseTable(doc string) (*table, error) {
	lines := strings.Split(doc, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == tableHeading })
	if start < 0 {
		return nil, fmt.Errorf("no line %q", tableHeading)
	}
	first := -1
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "|") {
			first = i
			break
		}
		if strings.HasPrefix(l, "#") {
			break
		}
	}
	if first < 0 {
		return nil, fmt.Errorf("no table below %q", tableHeading)
	}
	var rows [][]string
	var rowLine []int
	for i := first; i < len(lines); i++ {
		c, ok := cells(lines[i])
		if !ok {
			break
		}
		rows = append(rows, c)
		rowLine = append(rowLine, i+1)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("line %d: the table has no header and separator rows", rowLine[0])
	}
	header := make([]string, len(rows[0]))
	for i, c := range rows[0] {
		header[i] = strings.ToLower(c)
	}
	if !slices.Equal(header, tableHeader) {
		return nil, fmt.Errorf("line %d: the table's columns are %q, want %q", rowLine[0], rows[0], tableHeader)
	}
	for _, c := range rows[1] {
		if !separatorCell.MatchString(c) {
			return nil, fmt.Errorf("line %d: not a separator row", rowLine[1])
		}
	}

	t := &table{allowed: map[string][]string{}, line: map[string]int{}, level: map[string]int{}}
	for i, r := range rows[2:] {
		ln := rowLine[i+2]
		if len(r) != len(tableHeader) {
			return nil, fmt.Errorf("line %d: %d cells, want %d", ln, len(r), len(tableHeader))
		}
		pkgs := names(r[0])
		if len(pkgs) == 0 {
			return nil, fmt.Errorf("line %d: the package column names no package in backticks", ln)
		}
		imports := names(r[2])
		for _, p := range pkgs {
			if p == "" {
				return nil, fmt.Errorf("line %d: an empty package name", ln)
			}
			if prev, dup := t.line[p]; dup {
				return nil, fmt.Errorf("line %d: %s already has a row at line %d", ln, p, prev)
			}
			t.rows = append(t.rows, p)
			t.line[p] = ln
			t.allowed[p] = imports
		}
	}
	for _, p := range t.rows {
		for _, imp := range t.allowed[p] {
			if imp == p {
				return nil, fmt.Errorf("line %d: %s names itself in its imports", t.line[p], p)
			}
			if _, ok := t.line[imp]; !ok {
				return nil, fmt.Errorf("line %d: the imports of %s name `%s`, which has no row (names in backticks are packages of this module)", t.line[p], p, imp)
			}
		}
	}
	if err := t.computeLevels(); err != nil {
		return nil, err
	}
	return t, nil
}

// computeLevels fills t.level, or reports a cycle in the allowed imports.
func (t *table) computeLevels() error {
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(p string) error
	visit = func(p string) error {
		switch state[p] {
		case done:
			return nil
		case visiting:
			i := slices.Index(path, p)
			return fmt.Errorf("the imports of the table form a cycle: %s", strings.Join(append(path[i:], p), " -> "))
		}
		state[p] = visiting
		path = append(path, p)
		level := 0
		for _, imp := range t.allowed[p] {
			if err := visit(imp); err != nil {
				return err
			}
			level = max(level, t.level[imp]+1)
		}
		path = path[:len(path)-1]
		state[p] = done
		t.level[p] = level
		return nil
	}
	for _, p := range t.rows {
		if err := visit(p); err != nil {
			return err
		}
	}
	return nil
}

// pkg is a package of the module as `go list` reports it.
type pkg struct {
	ImportPath string
	Imports    []string // of the non-test files
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// rel returns importPath below modulePath ("." for the module root); ok is false when importPath is
// not a package of the module.
func rel(modulePath, importPath string) (string, bool) {
	if importPath == modulePath {
		return ".", true
	}
	r, ok := strings.CutPrefix(importPath, modulePath+"/")
	return r, ok
}

// check returns, sorted, every disagreement between t and the packages of the module modulePath.
func check(t *table, modulePath string, pkgs []pkg) []string {
	var problems []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, ok := rel(modulePath, p.ImportPath)
		if !ok {
			continue
		}
		seen[name] = true
		var imports []string
		for _, full := range p.Imports {
			if imp, ok := rel(modulePath, full); ok {
				imports = append(imports, imp)
			}
		}
		allowed, inTable := t.allowed[name]
		if !inTable {
			problems = append(problems, fmt.Sprintf("%s has no row in the table; it imports %s", name, importList(imports)))
			continue
		}
		for _, imp := range imports {
			if slices.Contains(allowed, imp) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s imports %s, which its row does not allow: %s may import %s; %s",
				name, imp, name, allowList(allowed), t.direction(name, imp)))
		}
	}
	for _, p := range t.rows {
		if !seen[p] {
			problems = append(problems, fmt.Sprintf("the table has a row for %s (line %d), but the module has no such package", p, t.line[p]))
		}
	}
	slices.Sort(problems)
	return problems
}

func importList(imports []string) string {
	if len(imports) == 0 {
		return "no package of this module"
	}
	return strings.Join(imports, ", ")
}

func allowList(allowed []string) string {
	if len(allowed) == 0 {
		return "no package of this module"
	}
	return "only `" + strings.Join(allowed, "`, `") + "`"
}

// direction describes the import of imp by p in terms of their levels.
func (t *table) direction(p, imp string) string {
	lp := t.level[p]
	li, ok := t.level[imp]
	switch {
	case !ok:
		return fmt.Sprintf("%s has no row", imp)
	case li > lp:
		return fmt.Sprintf("the import points up (level %d imports level %d)", lp, li)
	case li == lp:
		return fmt.Sprintf("the import points sideways (both at level %d)", lp)
	default:
		return fmt.Sprintf("the import points down (level %d imports level %d) but is not named", lp, li)
	}
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod)
}

// goList returns every package of the module rooted at root, and the module's path.
func goList(t *testing.T, root string) ([]pkg, string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Module,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	modulePath := ""
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: decoding its output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Module == nil {
			t.Fatalf("go list: %s belongs to no module", p.ImportPath)
		}
		if modulePath == "" {
			modulePath = p.Module.Path
		} else if p.Module.Path != modulePath {
			t.Fatalf("go list: %s is in module %s, want %s", p.ImportPath, p.Module.Path, modulePath)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list: no packages")
	}
	return pkgs, modulePath
}

// TestTableMatchesImports checks the imports of every package of the module against the package
// table of designDoc.
func TestTableMatchesImports(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, designDoc))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := parseTable(string(doc))
	if err != nil {
		t.Fatalf("%s, table under %q: %v", designDoc, tableHeading, err)
	}
	for _, p := range tab.rows {
		t.Logf("level %d: %s", tab.level[p], p)
	}
	pkgs, modulePath := goList(t, root)
	if problems := check(tab, modulePath, pkgs); len(problems) > 0 {
		t.Errorf("%s, table under %q, disagrees with the imports of the code (go list ./...):\n\t%s",
			designDoc, tableHeading, strings.Join(problems, "\n\t"))
	}
}
