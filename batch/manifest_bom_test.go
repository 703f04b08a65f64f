package batch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONLManifestBOM: a JSONL manifest starting with a UTF-8 byte-order
// mark is read like one without (TSV and CSV already were), whether its
// format comes from the extension or from sniffing.
func TestJSONLManifestBOM(t *testing.T) {
	dir := t.TempDir()
	body := "\ufeff{\"ref\": \"a.png\", \"dist\": \"b.png\", \"id\": 7}\n{\"ref\": \"a.png\", \"dist\": \"c.png\"}\n"
	for _, name := range []string{"m.jsonl", "manifest"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		pairs, err := ReadManifest(p, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(pairs) != 2 || pairs[0].ID != "7" || pairs[0].Ref != "a.png" || pairs[1].Dist != "c.png" {
			t.Fatalf("%s: %+v", name, pairs)
		}
	}
}

// TestDuplicateRowsOneWarning: 100,000 copies of one manifest row make one
// warning with the count and the first examples, and one scored row.
func TestDuplicateRowsOneWarning(t *testing.T) {
	c := makeCorpus(t, 1, 1, false)
	var b strings.Builder
	b.WriteString("ref\tdist\n")
	const n = 100_000
	for range n {
		b.WriteString("img/im000__ref.png\timg/im000__v0.png\n")
	}
	if err := os.WriteFile(c.manifest, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o.jsonl")
	code, _, stderr := runCLI(t, fakeDeps(&fakeBackend{name: "fake"}, nil), "--manifest", c.manifest, "--out", out, "--progress", "none")
	if code != ExitOK {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if k := strings.Count(stderr, "warning"); k != 1 || !strings.Contains(stderr, "99999 manifest rows repeat") ||
		!strings.Contains(stderr, "(ssim2, line 3), ") || !strings.Contains(stderr, " and 99996 more") {
		t.Fatalf("%d warning lines; stderr starts %q", k, stderr[:min(len(stderr), 400)])
	}
	if rows := readAll(t, out); len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
}
