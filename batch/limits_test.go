package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/internal/hostile"
	"github.com/zenmetrics-go/zenmetrics/internal/safeio"
)

// TestHostileRowsAreErrorRows (issue #21): manifest rows naming a
// character device, a FIFO, a socket, a directory, a text file holding a
// secret, a PNG claiming 32768² in 73 bytes, and a 20000² distorted image
// against a 24×16 reference each become one error row, at once, from the
// headers (nothing is decoded for them: the heap grows by far less than
// any of their claims), while the good pairs are scored. An error row
// never quotes the secret file's content.
func TestHostileRowsAreErrorRows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("FIFOs, sockets and /dev/zero are Unix")
	}
	if testing.Short() {
		t.Skip("writes a 20000² PNG (about 1.5 s)")
	}
	c := makeCorpus(t, 1, 2, false)
	img := filepath.Join(c.dir, "img")
	fifo := filepath.Join(img, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(img, "sock.png")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	secret := filepath.Join(img, "shadow")
	os.WriteFile(secret, []byte("root:*:20000:0:99999:7:::\n"), 0o600)
	os.WriteFile(filepath.Join(img, "claim.png"), hostile.ClaimingPNG(32768, 32768, 16, 6), 0o644)
	if err := hostile.WriteFlatPNG(filepath.Join(img, "huge.png"), 20000, 20000, 9); err != nil {
		t.Fatal(err)
	}
	bad := []string{"/dev/zero", "img/fifo.png", "img/sock.png", "img", "img/shadow", "img/claim.png", "img/huge.png"}
	m, _ := os.ReadFile(c.manifest)
	var b strings.Builder
	b.Write(m)
	for _, d := range bad {
		fmt.Fprintf(&b, "img/im000__ref.png\t%s\n", d)
	}
	os.WriteFile(c.manifest, []byte(b.String()), 0o644)

	out := filepath.Join(t.TempDir(), "o.jsonl")
	deps := Deps{OpenBackend: func(BackendOptions) (zenmetrics.Backend, error) { return &fakeBackend{name: "fake"}, nil }}
	var code int
	var stderr string
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	code, _, stderr = runCLI(t, deps, "--manifest", c.manifest, "--out", out, "--progress", "none", "--decoders", "2")
	runtime.ReadMemStats(&ms1)
	if code != ExitPartial {
		t.Fatalf("code %d, want %d (some rows failed); stderr:\n%s", code, ExitPartial, stderr)
	}
	// Bound: 64 MiB for the whole run (flag parsing, output, the small
	// images); the 20000² image alone would decode to 1.2 GB and the
	// 73-byte PNG claims 8 GiB.
	if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 64<<20 {
		t.Errorf("the run allocated %d MiB", d>>20)
	}
	rows := readAll(t, out)
	byDist := map[string]Row{}
	for _, r := range rows {
		byDist[r.Dist] = r
	}
	if len(rows) != c.pairs+len(bad) {
		t.Fatalf("%d rows, want %d", len(rows), c.pairs+len(bad))
	}
	want := map[string]string{
		"/dev/zero":     "not a regular file: it is a character device",
		"img/fifo.png":  "not a regular file: it is a FIFO",
		"img/sock.png":  "not a regular file: it is a socket",
		"img":           "not a regular file: it is a directory",
		"img/shadow":    "unknown image format",
		"img/claim.png": "image sizes differ: reference is 24x16, distorted is 32768x32768",
		"img/huge.png":  "image sizes differ: reference is 24x16, distorted is 20000x20000",
	}
	for d, msg := range want {
		r := byDist[d]
		if r.OK() || !strings.Contains(r.Error, msg) {
			t.Errorf("%s: row %+v, want an error containing %q", d, r, msg)
		}
		if strings.Contains(r.Error, "root") || strings.Contains(r.Error, "99999") {
			t.Errorf("%s: error row quotes the file: %q", d, r.Error)
		}
	}
	for _, r := range rows {
		if !strings.HasPrefix(r.Dist, "img/im000__v") {
			continue
		}
		if !r.OK() {
			t.Errorf("good pair %s failed: %s", r.Dist, r.Error)
		}
	}
}

// TestManifestNotRegular: /dev/zero, a FIFO or a directory named as the
// manifest is a usage error at once (no hang, no unbounded read).
func TestManifestNotRegular(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("FIFOs and /dev/zero are Unix")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "m.tsv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"/dev/zero", fifo, dir} {
		if _, err := ReadManifest(m, ""); !errors.Is(err, zenmetrics.ErrBadInput) && !strings.Contains(fmt.Sprint(err), safeio.ErrNotRegular.Error()) {
			t.Errorf("ReadManifest(%s) = %v", m, err)
		}
		code, _, stderr := runCLI(t, Deps{}, "--manifest", m, "--out", filepath.Join(dir, "o.jsonl"))
		if code != ExitUsage || !strings.Contains(stderr, "not a regular file") {
			t.Errorf("--manifest %s: code %d, stderr %q", m, code, stderr)
		}
	}
}

// TestOversizedPairIsErrorRow (issue #21): a 20000×20000 PNG pair (1.5 MB
// files) in a manifest scored on the CPU backend with --mem-budget 4GiB:
// the decoding of the pair (6.4 GB; SSIMULACRA2's and Butteraugli's
// strips would fit, the whole image's 30 GB working set would not)
// exceeds it, so both rows are error rows matching
// ErrOutOfMemory, predicted from the headers before anything is decoded;
// the other pairs are scored, and --resume (and --resume --retry-failed)
// finish with the same rows instead of dying on the pair. A 5×5 pair gets
// Butteraugli's too-small error (libjxl's tool would print 0).
func TestOversizedPairIsErrorRow(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 20000² PNG (about 1.5 s)")
	}
	c := makeCorpus(t, 1, 1, false)
	img := filepath.Join(c.dir, "img")
	if err := hostile.WriteFlatPNG(filepath.Join(img, "huge__ref.png"), 20000, 20000, 9); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(img, "huge__ref.png"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(img, "huge__d.png"), data, 0o644)
	writePNG(t, filepath.Join(img, "small__ref.png"), 5, 5, 1)
	writePNG(t, filepath.Join(img, "small__d.png"), 5, 5, 2)
	m, _ := os.ReadFile(c.manifest)
	m = append(m, "img/huge__ref.png\timg/huge__d.png\nimg/small__ref.png\timg/small__d.png\n"...)
	os.WriteFile(c.manifest, m, 0o644)

	out := filepath.Join(t.TempDir(), "o.jsonl")
	args := []string{"--manifest", c.manifest, "--out", out, "--backend", "cpu", "--metric", "ssim2,butteraugli",
		"--mem-budget", "4GiB", "--progress", "none", "--quiet"}
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	code, _, stderr := runCLI(t, Deps{}, args...)
	runtime.ReadMemStats(&ms1)
	if code != ExitPartial {
		t.Fatalf("code %d, want %d; stderr:\n%s", code, ExitPartial, stderr)
	}
	// Bound: 256 MiB for the run (the real CPU backend scores the 24×16
	// pair); decoding the 20000² pair alone would take 5.6 GB.
	if d := ms1.TotalAlloc - ms0.TotalAlloc; d > 256<<20 {
		t.Errorf("the run allocated %d MiB", d>>20)
	}
	check := func(stage string) {
		rows := readAll(t, out)
		if len(rows) != 6 {
			t.Fatalf("%s: %d rows, want 6", stage, len(rows))
		}
		for _, r := range rows {
			switch {
			case strings.HasPrefix(r.Dist, "img/huge"):
				if r.OK() || !strings.Contains(r.Error, "out of memory") || !strings.Contains(r.Error, "--mem-budget") {
					t.Errorf("%s: huge pair %s: %+v, want an out-of-memory error row", stage, r.Metric, r)
				}
			case strings.HasPrefix(r.Dist, "img/small"):
				if r.Metric == "butteraugli" && (r.OK() || !strings.Contains(r.Error, "too small")) {
					t.Errorf("%s: 5×5 butteraugli: %+v, want a too-small error row", stage, r)
				}
			default:
				if !r.OK() {
					t.Errorf("%s: good pair %s failed: %s", stage, r.Metric, r.Error)
				}
			}
		}
	}
	check("first run")
	if code, _, stderr := runCLI(t, Deps{}, append(args, "--resume")...); code != ExitPartial {
		t.Fatalf("--resume: code %d; stderr:\n%s", code, stderr)
	}
	check("--resume")
	if code, _, stderr := runCLI(t, Deps{}, append(args, "--resume", "--retry-failed")...); code != ExitPartial {
		t.Fatalf("--resume --retry-failed: code %d; stderr:\n%s", code, stderr)
	}
	check("--retry-failed")
}

// TestButteraugliStripsInBatch: under a --mem-budget too small for the
// whole image, the CPU backend scores Butteraugli in strips, and the row
// holds the same score as an unlimited run (compared as printed: the
// strips are bit-identical, cpu/butteraugli's TestStripsEqualFull).
func TestButteraugliStripsInBatch(t *testing.T) {
	c := makeCorpus(t, 0, 0, false)
	img := filepath.Join(c.dir, "img")
	writePNG(t, filepath.Join(img, "tall__ref.png"), 256, 600, 1)
	writePNG(t, filepath.Join(img, "tall__d.png"), 256, 600, 2)
	os.WriteFile(c.manifest, []byte("ref\tdist\nimg/tall__ref.png\timg/tall__d.png\n"), 0o644)
	score := func(budget string) Row {
		out := filepath.Join(t.TempDir(), "o.jsonl")
		args := []string{"--manifest", c.manifest, "--out", out, "--backend", "cpu", "--metric", "butteraugli", "--quiet"}
		if budget != "" {
			args = append(args, "--mem-budget", budget)
		}
		if code, _, stderr := runCLI(t, Deps{}, args...); code != ExitOK {
			t.Fatalf("--mem-budget %q: code %d; stderr:\n%s", budget, code, stderr)
		}
		rows := readAll(t, out)
		if len(rows) != 1 || !rows[0].OK() {
			t.Fatalf("--mem-budget %q: rows %+v", budget, rows)
		}
		return rows[0]
	}
	// 20 MB: the whole image needs ~32 MB (200 B/px), a strip of ~200
	// rows with its 2×84-row halo ~19 MB.
	full, strips := score(""), score("20MB")
	if *full.Score != *strips.Score || full.Extras["pnorm3"] != strips.Extras["pnorm3"] {
		t.Errorf("strips %v %v, full %v %v", *strips.Score, strips.Extras, *full.Score, full.Extras)
	}
}

// TestSSIM2StripsInBatch (issue #21): under a --mem-budget too small for
// the whole image but above the least strip working set, the CPU backend
// scores SSIMULACRA2 in strips and the row holds the unlimited run's
// score (compared as printed: cpu/ssim2's strips are bit-identical, its
// TestStripsEqualFull*); under the least strip working set the row is an
// out-of-memory error row and the run goes on (exit code 3). The budgets
// come from the CPU backend's own plan, so they hold on any core count.
func TestSSIM2StripsInBatch(t *testing.T) {
	const w, h = 256, 600
	c := makeCorpus(t, 0, 0, false)
	img := filepath.Join(c.dir, "img")
	writePNG(t, filepath.Join(img, "tall__ref.png"), w, h, 1)
	writePNG(t, filepath.Join(img, "tall__d.png"), w, h, 2)
	os.WriteFile(c.manifest, []byte("ref\tdist\nimg/tall__ref.png\timg/tall__d.png\n"), 0o644)
	score := func(budget int64, want int) Row {
		out := filepath.Join(t.TempDir(), "o.jsonl")
		args := []string{"--manifest", c.manifest, "--out", out, "--backend", "cpu", "--metric", "ssim2", "--quiet"}
		if budget != 0 {
			args = append(args, "--mem-budget", fmt.Sprint(budget))
		}
		if code, _, stderr := runCLI(t, Deps{}, args...); code != want {
			t.Fatalf("--mem-budget %d: code %d, want %d; stderr:\n%s", budget, code, want, stderr)
		}
		rows := readAll(t, out)
		if len(rows) != 1 {
			t.Fatalf("--mem-budget %d: rows %+v", budget, rows)
		}
		return rows[0]
	}
	// The decoded pair is RGBA8 (the PNGs are NRGBA).
	images := int64(2 * w * h * 4)
	full, _ := cpu.New(cpu.Config{MemBudget: -1}).WorkingSet(zenmetrics.SSIMULACRA2, w, h, 4)
	least := images + ssim2.MinStripBytes(w, h)
	if least >= full {
		t.Fatalf("least strip working set %d not below the full %d", least, full)
	}
	whole := score(0, ExitOK)
	for _, budget := range []int64{full - 1, least} {
		r := score(budget, ExitOK)
		if !whole.OK() || !r.OK() || *whole.Score != *r.Score {
			t.Errorf("--mem-budget %d (full %d): strips %+v, full %+v", budget, full, r, whole)
		}
	}
	if r := score(least-1, ExitPartial); r.OK() || !strings.Contains(r.Error, "out of memory") || !strings.Contains(r.Error, "--mem-budget") {
		t.Errorf("--mem-budget %d (least strip %d): %+v, want an out-of-memory error row", least-1, least, r)
	}
}

// TestDecodesShareTheBudget: each decode takes its predicted peak
// (Probe's DecodeBytes) from --mem-budget while it runs, so several
// decoders cannot together exceed the budget with decoder buffers. With
// every file predicted at 40 % of the budget, 4 decoders and 12 files, at
// most 2 decodes run at once (without the reservation all 4 would).
func TestDecodesShareTheBudget(t *testing.T) {
	c := makeCorpus(t, 3, 3, false)
	pairs, err := ReadManifest(c.manifest, "")
	if err != nil {
		t.Fatal(err)
	}
	const budget = 10 << 20
	var mu sync.Mutex
	cur, peak := 0, 0
	decode := func(path string) (*zenmetrics.Image, error) {
		mu.Lock()
		cur++
		peak = max(peak, cur)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // long enough for the others to pile up
		mu.Lock()
		cur--
		mu.Unlock()
		return decodeStd(path)
	}
	probe := func(path string) (ImageHeader, error) {
		im, err := decodeStd(path)
		if err != nil {
			return ImageHeader{}, err
		}
		return ImageHeader{Width: im.Width, Height: im.Height, DecodeBytes: budget * 4 / 10}, nil
	}
	out := filepath.Join(t.TempDir(), "o.jsonl")
	sum, err := Run(context.Background(), Config{Pairs: pairs, Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Out: out, Engine: newFakeEngine(t, &fakeBackend{name: "fake"}, 2), Decoders: 4, MemoryBudget: budget,
		Decode: decode, Probe: probe})
	if err != nil || sum.OK != c.pairs {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	if peak > 2 || peak < 1 {
		t.Errorf("%d decodes ran at once, want at most 2 (2 × 40 %% of the budget)", peak)
	}
}

// TestDecodeStdLimits: the fallback decoder (Config.Decode nil) opens
// regular files only and refuses a header over imageio.DefaultMaxPixels
// before image/png allocates it.
func TestDecodeStdLimits(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "claim.png")
	os.WriteFile(p, hostile.ClaimingPNG(40000, 40000, 8, 6), 0o644)
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	_, err := decodeStd(p)
	runtime.ReadMemStats(&b)
	if !errors.Is(err, zenmetrics.ErrBadInput) || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("40000² claim: %v", err)
	}
	// Bound: 1 MiB; the claim is 6.4 GB.
	if d := b.TotalAlloc - a.TotalAlloc; d > 1<<20 {
		t.Errorf("refusing allocated %d bytes", d)
	}
	if _, err := decodeStd(dir); !errors.Is(err, safeio.ErrNotRegular) {
		t.Errorf("directory: %v", err)
	}
}
