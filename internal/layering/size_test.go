package layering

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MaxLines is the most lines a hand-written Go or Python file may have, tests included: past it a
// file holds more than one concern, and is split by concern.
const MaxLines = 800

// generated reports whether a file says in its first lines that a tool wrote it ("DO NOT EDIT",
// the Go convention, which protoc and this module's generators follow).
func generated(head []string) bool {
	for _, l := range head {
		if strings.Contains(l, "DO NOT EDIT") {
			return true
		}
	}
	return false
}

// TestNoFileOverMaxLines: no hand-written .go or .py file of the module is longer than MaxLines.
// Generated files, test data, virtual environments and build output are not hand-written.
func TestNoFileOverMaxLines(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata" || name == "node_modules" ||
				name == "__pycache__" || strings.HasSuffix(name, ".egg-info")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".py") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var head []string
		n := 0
		for sc.Scan() {
			if n < 30 {
				head = append(head, sc.Text())
			}
			n++
		}
		if err := sc.Err(); err != nil {
			return err
		}
		if n > MaxLines && !generated(head) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s: %d lines, more than %d: split it by concern", rel, n, MaxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
