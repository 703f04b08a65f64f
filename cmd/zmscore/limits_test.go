package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/internal/hostile"
)

// runMeasured runs the CLI in-process and returns what the Go heap handed
// out during the run (runtime.MemStats.TotalAlloc delta).
func runMeasured(args ...string) (code int, stdout, stderr string, alloc uint64) {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	code, stdout, stderr = runCLI(args...)
	runtime.ReadMemStats(&b)
	return code, stdout, stderr, b.TotalAlloc - a.TotalAlloc
}

// smallPNG writes a w×h RGB8 PNG with a gradient.
func smallPNG(t *testing.T, path string, w, h, seed int) {
	t.Helper()
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	for i := range im.Pix {
		im.Pix[i] = byte(i*7 + seed*31)
	}
	if err := writePNG(path, im); err != nil {
		t.Fatal(err)
	}
}

// TestHostileInputsPairMode (issue #21): in pair mode a FIFO (as DIST and
// as REF), /dev/zero, a directory and a non-image holding a secret are
// refused at once with a per-DIST error; the secret's bytes never reach
// the output; nothing hangs (a FIFO open would block without a writer,
// and this test would time out).
func TestHostileInputsPairMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("FIFOs and /dev/zero are Unix")
	}
	dir := t.TempDir()
	ref, good := filepath.Join(dir, "ref.png"), filepath.Join(dir, "good.png")
	smallPNG(t, ref, 32, 24, 1)
	smallPNG(t, good, 32, 24, 2)
	fifo := filepath.Join(dir, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "shadow")
	os.WriteFile(secret, []byte("root:*:20000:0:99999:7:::\n"), 0o600)
	code, out, errOut := runCLI("--backend", "cpu", ref, fifo, "/dev/zero", dir, secret, good)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || lines[0] != "nan" || lines[3] != "nan" || lines[4] == "nan" {
		t.Fatalf("stdout %q: want nan×4 then a score", out)
	}
	for _, want := range []string{"fifo.png: zenmetrics: bad input: not a regular file: it is a FIFO",
		"/dev/zero: zenmetrics: bad input: not a regular file: it is a character device",
		"not a regular file: it is a directory", "shadow: zenmetrics: bad input: unknown image format"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut+out, "root") || strings.Contains(errOut+out, "99999") {
		t.Errorf("output quotes the secret file:\n%s%s", out, errOut)
	}
	// A FIFO as the reference: every DIST gets the reference's error.
	code, out, errOut = runCLI("--backend", "cpu", fifo, good)
	if code != 1 || out != "nan\n" || !strings.Contains(errOut, "reference: "+fifo+": zenmetrics: bad input: not a regular file") {
		t.Errorf("FIFO reference: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestOversizedPairMode (issue #21): a 20000² DIST against a 32×24
// reference is refused from its header (the run allocates a few MiB, not
// the 1.2 GB of the decoded image); a 20000² pair over --mem-budget on
// the CPU is an out-of-memory error before decoding, not a Go fatal
// error; --max-pixels refuses from the header.
func TestOversizedPairMode(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 20000² PNG (about 1.5 s)")
	}
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.png")
	smallPNG(t, ref, 32, 24, 1)
	huge, huge2 := filepath.Join(dir, "huge.png"), filepath.Join(dir, "huge2.png")
	if err := hostile.WriteFlatPNG(huge, 20000, 20000, 9); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(huge)
	os.WriteFile(huge2, data, 0o644)

	// Bound for every refused run: 32 MiB (flag parsing, the 32×24
	// reference, error texts); the refused images claim 1.2 GB or more.
	const bound = 32 << 20
	code, out, errOut, alloc := runMeasured("--backend", "cpu", ref, huge)
	if code != 1 || out != "nan\n" || !strings.Contains(errOut, "reference is 32x24, distorted is 20000x20000") {
		t.Errorf("size mismatch: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if alloc > bound {
		t.Errorf("size mismatch: the run allocated %d MiB", alloc>>20)
	}
	// The other way round: a 20000² reference against a 32×24 DIST is
	// not decoded either (every DIST is refused from its header; the
	// budget is raised so that the reference's own check passes).
	code, out, errOut, alloc = runMeasured("--backend", "cpu", "--mem-budget", "1TiB", huge, ref)
	if code != 1 || out != "nan\n" || !strings.Contains(errOut, "reference is 20000x20000, distorted is 32x24") {
		t.Errorf("size mismatch, huge reference: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if alloc > bound {
		t.Errorf("size mismatch, huge reference: the run allocated %d MiB", alloc>>20)
	}
	// Both over 4 GiB by the decoding (6.4 GB; their CPU strips would fit,
	// SSIMULACRA2's whole-image working set of 30 GB would not). Under a
	// small budget even the strips do not fit: TestSSIM2StripsPairMode.
	for metric, budget := range map[string]string{"ssim2": "4GiB", "butteraugli": "4GiB"} {
		code, out, errOut, alloc = runMeasured("--backend", "cpu", "--metric", metric, "--mem-budget", budget, huge, huge2)
		if code != 1 || out != "nan\n" || !strings.Contains(errOut, "out of memory") || !strings.Contains(errOut, "--mem-budget") {
			t.Errorf("%s over budget: exit %d, stdout %q, stderr %q", metric, code, out, errOut)
		}
		if alloc > bound {
			t.Errorf("%s over budget: the run allocated %d MiB", metric, alloc>>20)
		}
	}
	code, _, errOut, alloc = runMeasured("--backend", "cpu", "--max-pixels", "1000000", huge, huge2)
	if code != 1 || !strings.Contains(errOut, "exceeds the limit of 1000000 pixels") || alloc > bound {
		t.Errorf("--max-pixels: exit %d, %d bytes allocated, stderr %q", code, alloc, errOut)
	}
	if code, _, errOut := runCLI("--max-pixels", "0", ref, ref); code != 2 || !strings.Contains(errOut, "--max-pixels") {
		t.Errorf("--max-pixels 0: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI("--mem-budget", "lots", ref, ref); code != 2 || !strings.Contains(errOut, "--mem-budget") {
		t.Errorf("--mem-budget lots: exit %d, stderr %q", code, errOut)
	}
}

// TestButteraugliTooSmallPairMode (issue #21): two unrelated 1×5000
// images, for which libjxl's butteraugli_main prints 0, are refused as too
// small (as SSIMULACRA2 refuses them), whatever the backend.
func TestButteraugliTooSmallPairMode(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	smallPNG(t, a, 1, 5000, 1)
	smallPNG(t, b, 1, 5000, 9)
	for _, metric := range []string{"butteraugli", "ssim2"} {
		code, out, errOut := runCLI("--backend", "cpu", "--metric", metric, a, b)
		if code != 1 || out != "nan\n" || !strings.Contains(errOut, "too small") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", metric, code, out, errOut)
		}
	}
}

// TestSSIM2StripsPairMode (issue #21): under a --mem-budget too small for
// the whole image but above the least strip working set, the CPU backend
// scores SSIMULACRA2 in strips and prints the unlimited run's score (the
// strips are bit-identical: cpu/ssim2's TestStripsEqualFull*); below the
// least strip working set it is an out-of-memory error (exit 1). The
// budgets come from the CPU backend's own plan, so they hold on any core
// count.
func TestSSIM2StripsPairMode(t *testing.T) {
	const w, h = 256, 600
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	smallPNG(t, a, w, h, 1)
	smallPNG(t, b, w, h, 5)
	// zmscore predicts from the headers with 4 bytes per pixel (the
	// decoded format is not known before decoding).
	images := int64(2 * w * h * 4)
	full, _ := cpu.New(cpu.Config{MemBudget: -1}).WorkingSet(zenmetrics.SSIMULACRA2, w, h, 4)
	least := images + ssim2.MinStripBytes(w, h)
	if least >= full {
		t.Fatalf("least strip working set %d not below the full %d", least, full)
	}
	code, whole, errOut := runCLI("--backend", "cpu", "--metric", "ssim2", a, b)
	if code != 0 {
		t.Fatalf("unlimited: exit %d: %s", code, errOut)
	}
	for _, budget := range []int64{full - 1, least} {
		code, strips, errOut := runCLI("--backend", "cpu", "--metric", "ssim2", "--mem-budget", fmt.Sprint(budget), a, b)
		if code != 0 || strips != whole {
			t.Errorf("--mem-budget %d (full %d): exit %d, %q, want %q; stderr %q", budget, full, code, strips, whole, errOut)
		}
	}
	code, out, errOut := runCLI("--backend", "cpu", "--metric", "ssim2", "--mem-budget", fmt.Sprint(least-1), a, b)
	if code != 1 || out != "nan\n" || !strings.Contains(errOut, "out of memory") || !strings.Contains(errOut, "--mem-budget") {
		t.Errorf("--mem-budget %d (least strip %d): exit %d, stdout %q, stderr %q", least-1, least, code, out, errOut)
	}
}

// TestButteraugliStripsPairMode: under a --mem-budget too small for the
// whole image the CPU backend scores Butteraugli in strips and prints the
// same score and 3-norm as an unlimited run (the strips are bit-identical:
// cpu/butteraugli's TestStripsEqualFull).
func TestButteraugliStripsPairMode(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	smallPNG(t, a, 256, 600, 1)
	smallPNG(t, b, 256, 600, 5)
	code, full, errOut := runCLI("--backend", "cpu", "--metric", "butteraugli", "--json", a, b)
	if code != 0 {
		t.Fatalf("unlimited: exit %d: %s", code, errOut)
	}
	// 20 MB: the whole image needs ~32 MB (200 B/px), a strip of ~200
	// rows with its 2×84-row halo ~19 MB.
	code, strips, errOut := runCLI("--backend", "cpu", "--metric", "butteraugli", "--json", "--mem-budget", "20MB", a, b)
	if code != 0 {
		t.Fatalf("20MB: exit %d: %s", code, errOut)
	}
	// The whole image would need ~32 MB, so 20 MB scored in strips; 6 MB
	// is below even one 2-row strip (170 rows with the halo, ~9.7 MB) and
	// is refused, which shows the budget is in force.
	if code, _, errOut := runCLI("--backend", "cpu", "--metric", "butteraugli", "--mem-budget", "6MB", a, b); code != 1 || !strings.Contains(errOut, "out of memory") {
		t.Errorf("butteraugli at 6MB: exit %d, stderr %q", code, errOut)
	}
	field := func(js, key string) string {
		i := strings.Index(js, `"`+key+`":`)
		if i < 0 {
			return ""
		}
		rest := js[i+len(key)+3:]
		return rest[:strings.IndexAny(rest, ",}")]
	}
	for _, k := range []string{"score", "pnorm3"} {
		if f, s := field(full, k), field(strips, k); f == "" || f != s {
			t.Errorf("%s: strips %q, full %q", k, s, f)
		}
	}
}
