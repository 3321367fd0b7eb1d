package layering

import (
	"strings"
	"testing"
)

const testModule = "example.com/m"

// doc returns a design document whose package table has the given data rows.
func doc(rows ...string) string {
	return "# design\n\n## Packages\n\nSome prose.\n\n| package | its one job | imports |\n| --- | --- | --- |\n" +
		strings.Join(rows, "\n") + "\n\n## Next\n\n| not | the | table |\n"
}

func mustParse(t *testing.T, d string) *table {
	t.Helper()
	tab, err := parseTable(d)
	if err != nil {
		t.Fatalf("parseTable: %v", err)
	}
	return tab
}

func TestParseTable(t *testing.T) {
	tab := mustParse(t, doc(
		"| `store/` | the store, with `backticks` in the job | `store/alloc` only |",
		"| `store/alloc/` | the allocator | btree |",
		"| `cmd/a`, `cmd/b` | two commands | `store`, `store/alloc`; grpc |",
	))
	if got, want := strings.Join(tab.rows, " "), "store store/alloc cmd/a cmd/b"; got != want {
		t.Errorf("rows = %q, want %q", got, want)
	}
	if got, want := strings.Join(tab.allowed["cmd/b"], " "), "store store/alloc"; got != want {
		t.Errorf("allowed[cmd/b] = %q, want %q", got, want)
	}
	for p, want := range map[string]int{"store/alloc": 0, "store": 1, "cmd/a": 2, "cmd/b": 2} {
		if tab.level[p] != want {
			t.Errorf("level[%s] = %d, want %d", p, tab.level[p], want)
		}
	}
}

func TestParseTableErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"no heading", "# design\n\n| package | its one job | imports |\n| --- | --- | --- |\n", "no line"},
		{"no table", "## Packages\n\nprose\n\n## Next\n\n| package | its one job | imports |\n", "no table"},
		{"columns", "## Packages\n\n| package | imports |\n| --- | --- |\n| `a` | |\n", "columns"},
		{"cells", doc("| `a` | job |"), "2 cells, want 3"},
		{"no package", doc("| a | job | |"), "names no package"},
		{"duplicate", doc("| `a` | job | |", "| `a/` | job | |"), "already has a row"},
		{"unknown import", doc("| `a` | job | `b` |"), "`b`, which has no row"},
		{"self", doc("| `a` | job | `a` |"), "names itself"},
		{"cycle", doc("| `a` | job | `b` |", "| `b` | job | `c` |", "| `c` | job | `a` |"), "cycle: a -> b -> c -> a"},
	} {
		_, err := parseTable(tc.doc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// packages returns go list's view of a module whose packages import as given (paths below the
// module root, with a third-party import added to each to be ignored).
func packages(imports map[string][]string) []pkg {
	var out []pkg
	for p, imps := range imports {
		full := []string{"github.com/google/btree"}
		for _, i := range imps {
			full = append(full, testModule+"/"+i)
		}
		out = append(out, pkg{ImportPath: testModule + "/" + p, Imports: full})
	}
	return out
}

func TestCheck(t *testing.T) {
	tab := mustParse(t, doc(
		"| `store/` | the store | `store/alloc` only |",
		"| `store/alloc/` | the allocator | btree |",
		"| `server/` | the server | `store` |",
		"| `client/` | the client | none |",
		"| `gone/` | no longer exists | none |",
	))
	for _, tc := range []struct {
		name    string
		imports map[string][]string
		want    []string
	}{
		{"agrees", map[string][]string{
			"store": {"store/alloc"}, "store/alloc": nil, "server": {"store"}, "client": nil, "gone": nil,
		}, nil},
		{"upward import", map[string][]string{
			"store": {"store/alloc"}, "store/alloc": {"store"}, "server": {"store"}, "client": nil, "gone": nil,
		}, []string{"store/alloc imports store, which its row does not allow: store/alloc may import no package of this module; the import points up (level 0 imports level 1)"}},
		{"sideways import", map[string][]string{
			"store": {"store/alloc"}, "store/alloc": nil, "server": {"store"}, "client": {"store/alloc"}, "gone": nil,
		}, []string{"client imports store/alloc, which its row does not allow: client may import no package of this module; the import points sideways (both at level 0)"}},
		{"unnamed downward import", map[string][]string{
			"store": {"store/alloc"}, "store/alloc": nil, "server": {"store", "store/alloc"}, "client": nil, "gone": nil,
		}, []string{"server imports store/alloc, which its row does not allow: server may import only `store`; the import points down (level 2 imports level 0) but is not named"}},
		{"missing row and stale row", map[string][]string{
			"store": {"store/alloc"}, "store/alloc": nil, "server": {"store"}, "client": nil, "wire": {"client"},
		}, []string{
			"the table has a row for gone (line 13), but the module has no such package",
			"wire has no row in the table; it imports client",
		}},
	} {
		got := check(tab, testModule, packages(tc.imports))
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
