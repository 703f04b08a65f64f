package safeio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// TestReadFile: the limit is checked before the read, a missing file keeps
// fs.ErrNotExist, a directory is ErrNotRegular, and the content comes back
// whole under the limit.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.tsv")
	os.WriteFile(p, []byte("ref\tdist\n"), 0o644)
	if b, err := ReadFile(p, 9); err != nil || string(b) != "ref\tdist\n" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile(p, 8); !errors.Is(err, ErrTooLarge) || !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "absent"), 0); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, zenmetrics.ErrBadInput) {
		t.Errorf("missing: %v", err)
	}
	if _, err := ReadFile(dir, 0); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("directory: %v", err)
	}
	// A reader longer than the size Stat gave (a file growing while it is
	// read) is cut at limit+1 bytes and refused.
	if _, err := ReadAll(strings.NewReader("0123456789"), 4, 6); !errors.Is(err, ErrTooLarge) {
		t.Errorf("grown past the limit: %v", err)
	}
	if b, err := ReadAll(strings.NewReader("0123"), 10, 0); err != nil || string(b) != "0123" {
		t.Errorf("shrunk: %q, %v", b, err)
	}
}
