// Package shared locates the project's read-only reference material (the
// real-photo corpus and published test vectors) for tests and benchmarks.
//
// The material lives beside the repository as ../shared and is never copied
// into it (only testdata/tiny is). Tests call Dir or Corpus, which skip the
// test cleanly when the material is absent, so a plain clone still passes.
package shared

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EnvDir overrides the location of the shared folder.
const EnvDir = "ZENMETRICS_SHARED"

// RepoRoot returns the directory holding go.mod, walking up from the
// current directory (tests run in their package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Find returns the shared folder, or an error saying where it looked.
func Find() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
		return "", fmt.Errorf("%s=%q is not a directory", EnvDir, d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(root, "..", "shared")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return filepath.Clean(d), nil
	}
	return "", fmt.Errorf("no shared material at %s (set %s to point elsewhere)", d, EnvDir)
}

// Dir returns the shared folder joined with elem, skipping the test when
// that path does not exist.
func Dir(tb testing.TB, elem ...string) string {
	tb.Helper()
	d, err := Find()
	if err != nil {
		tb.Skipf("shared material absent: %v", err)
	}
	p := filepath.Join(append([]string{d}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared material absent: %v", err)
	}
	return p
}

// Testdata returns the repository's testdata folder joined with elem.
func Testdata(tb testing.TB, elem ...string) string {
	tb.Helper()
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(append([]string{root, "testdata"}, elem...)...)
}

// Table is a parsed TSV file with a header row.
type Table struct {
	Path   string
	Header []string
	Rows   [][]string
	col    map[string]int
}

// ReadTSV parses a tab-separated file whose first line names the columns.
// Lines starting with '#' and blank lines are ignored.
func ReadTSV(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := &Table{Path: path, col: map[string]int{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if t.Header == nil {
			t.Header = fields
			for i, h := range fields {
				t.col[h] = i
			}
			continue
		}
		t.Rows = append(t.Rows, fields)
	}
	return t, sc.Err()
}

// Get returns row r's value in the named column ("" if absent).
func (t *Table) Get(r int, name string) string {
	i, ok := t.col[name]
	if !ok || i >= len(t.Rows[r]) {
		return ""
	}
	return t.Rows[r][i]
}

// Float returns row r's value in the named column as a float64.
func (t *Table) Float(r int, name string) (float64, error) {
	return strconv.ParseFloat(strings.TrimSpace(t.Get(r, name)), 64)
}

// Has reports whether the table has the named column.
func (t *Table) Has(name string) bool { _, ok := t.col[name]; return ok }

// Tolerance parses "abs:X" or "rel:X" and reports whether got is within it
// of want.
func Tolerance(spec string, want, got float64) (ok bool, err error) {
	kind, v, found := strings.Cut(spec, ":")
	if !found {
		return false, fmt.Errorf("bad tolerance %q", spec)
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return false, fmt.Errorf("bad tolerance %q: %v", spec, err)
	}
	d := got - want
	if d < 0 {
		d = -d
	}
	switch kind {
	case "abs":
		return d <= x, nil
	case "rel":
		w := want
		if w < 0 {
			w = -w
		}
		return d <= x*w, nil
	}
	return false, fmt.Errorf("bad tolerance kind %q", spec)
}
