package capability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
)

func testReport() *Report {
	return &Report{
		CPU: CPUInfo{Brand: "Test CPU 9000", LogicalCores: 2, Features: []string{"AVX2", "FMA3"}, RAMMiB: 4096},
		GPUs: []GPUInfo{{Name: "Test GPU", Driver: "1.2.3", Runtime: "dawn/vulkan", VRAMMiB: 8192,
			Features: map[string]string{"f16": "no"}}},
	}
}

func TestMachineHashStableAndSensitive(t *testing.T) {
	r := testReport()
	h := ReportHash(r)
	if len(h) != 16 {
		t.Fatalf("hash %q is not 16 hex digits", h)
	}
	// Order of features and adapters must not matter.
	r2 := testReport()
	r2.CPU.Features = []string{"FMA3", "AVX2"}
	r2.CPU.LogicalCores = 64 // not part of the identity
	if ReportHash(r2) != h {
		t.Fatalf("feature order or core count changed the hash")
	}
	for name, mut := range map[string]func(*Report){
		"driver":  func(r *Report) { r.GPUs[0].Driver = "1.2.4" },
		"gpu":     func(r *Report) { r.GPUs[0].Name = "Other GPU" },
		"brand":   func(r *Report) { r.CPU.Brand = "Other" },
		"feature": func(r *Report) { r.CPU.Features = append(r.CPU.Features, "AVX512F") },
		"no gpu":  func(r *Report) { r.GPUs = nil },
	} {
		r3 := testReport()
		mut(r3)
		if ReportHash(r3) == h {
			t.Errorf("%s change did not change the hash", name)
		}
	}
}

func sampleProfile(now time.Time) *Profile {
	p := NewProfile(testReport(), now)
	p.LastValidated = now
	p.SetSample(zenmetrics.SSIMULACRA2, ClassGPUFull, Sample{Pixels: 1 << 20, NsPerPx: 0.38, VRAMMiB: 96})
	p.SetSample(zenmetrics.SSIMULACRA2, ClassCPU, Sample{Pixels: 1 << 20, NsPerPx: 95})
	p.SetSample(zenmetrics.SSIMULACRA2, ClassCPU, Sample{Pixels: 1 << 22, NsPerPx: 101.5})
	p.RecordOOM(zenmetrics.SSIMULACRA2, Cell{ClassGPUFull, 268435456})
	p.Metric(zenmetrics.SSIMULACRA2).LastMeasured = now
	return p
}

func TestProfileRoundTripAndLayout(t *testing.T) {
	now := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	p := sampleProfile(now)
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, want := range []string{
		"schema_version = 1",
		`machine_hash = "` + p.MachineHash + `"`,
		"detected_at = 2026-11-21T05:00:00Z",
		"[cpu]",
		"[[gpu]]",
		`cells_failed_oom = [["gpu_full", 268435456]]`,
		"[metrics.ssim2.ns_per_px_at.1048576]",
		"gpu_full = 0.38",
		"[metrics.ssim2.vram_mib_at.1048576]",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("profile lacks %q:\n%s", want, s)
		}
	}
	q, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if q.MachineHash != p.MachineHash || !q.DetectedAt.Equal(p.DetectedAt) || q.CPU.Brand != p.CPU.Brand || len(q.GPUs) != 1 {
		t.Fatalf("header lost: %+v", q)
	}
	got := q.Samples(zenmetrics.SSIMULACRA2, ClassCPU)
	if len(got) != 2 || got[0].Pixels != 1<<20 || got[0].NsPerPx != 95 || got[1].NsPerPx != 101.5 {
		t.Fatalf("cpu samples: %+v", got)
	}
	g := q.Samples(zenmetrics.SSIMULACRA2, ClassGPUFull)
	if len(g) != 1 || g[0].VRAMMiB != 96 {
		t.Fatalf("gpu samples: %+v", g)
	}
	if c := q.OOMCells(zenmetrics.SSIMULACRA2); len(c) != 1 || c[0] != (Cell{ClassGPUFull, 268435456}) {
		t.Fatalf("cells: %+v", c)
	}
}

// A timing's spread (its noise) is kept beside it in ns_per_px_spread_at,
// round trips, and goes when the timing is replaced by one without it; a
// profile without any spread writes no such table, so its file is what
// it was before spreads were kept. A table this build does not know (as
// ns_per_px_spread_at is to older builds) is skipped, not an error.
func TestSpreadRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 21, 5, 0, 0, 0, time.UTC)
	m := zenmetrics.SSIMULACRA2
	plain, _ := sampleProfile(now).Marshal()
	if strings.Contains(string(plain), "spread") {
		t.Fatalf("a profile without spreads writes a spread table:\n%s", plain)
	}
	p := sampleProfile(now)
	p.SetSample(m, ClassCUDAFull, Sample{Pixels: 1 << 20, NsPerPx: 0.31, Spread: 0.042})
	p.SetSample(m, ClassGPUFull, Sample{Pixels: 1 << 22, NsPerPx: 0.30, Spread: 0.0104})
	data, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "[metrics.ssim2.ns_per_px_spread_at.1048576]") {
		t.Fatalf("no spread table:\n%s", data)
	}
	q, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if s := q.Samples(m, ClassCUDAFull); len(s) != 1 || s[0].Spread != 0.042 {
		t.Fatalf("cuda_full: %+v", s)
	}
	if s := q.Samples(m, ClassGPUFull); len(s) != 2 || s[0].Spread != 0 || s[1].Spread != 0.01 {
		t.Fatalf("gpu_full: %+v, want no spread at 1 MP and 0.01 (three decimals) at 4 MP", s)
	}
	if c := q.Clone(); c.Samples(m, ClassCUDAFull)[0].Spread != 0.042 {
		t.Fatal("Clone lost the spread")
	}
	q.SetSample(m, ClassCUDAFull, Sample{Pixels: 1 << 20, NsPerPx: 0.5})
	if s := q.Samples(m, ClassCUDAFull); s[0].NsPerPx != 0.5 || s[0].Spread != 0 {
		t.Fatalf("replaced timing kept the old spread: %+v", s)
	}
	future := strings.Replace(string(data), "[metrics.ssim2.ns_per_px_spread_at.1048576]", "[metrics.ssim2.ns_per_px_p90_at.1048576]", 1)
	if _, err := Unmarshal([]byte(future)); err != nil {
		t.Fatalf("a table from a newer build: %v", err)
	}
	bad := strings.Replace(string(data), "cuda_full = 0.042", "cuda_full = -0.042", 1)
	if _, err := Unmarshal([]byte(bad)); !errors.Is(err, ErrCorruptProfile) {
		t.Fatalf("negative spread: %v", err)
	}
}

// The example in DESIGN.md must be readable as is.
func TestUnmarshalDesignExample(t *testing.T) {
	const doc = `schema_version = 1
machine_hash   = "3f2a9c0d1e4b5a6c"
detected_at    = 2026-11-21T05:00:00Z
last_validated = 2026-11-21T05:00:00Z

[cpu]
brand = "AMD EPYC 9654"
logical_cores = 16
features = ["AVX2", "FMA3", "AVX512F"]
ram_mib = 128000

[[gpu]]
name = "NVIDIA H200"
runtime = "dawn/vulkan"
driver = "580.159.04"
vram_mib = 143771
init_ms = 180.0
features = { f32_atomics = "emulated-cas", f16 = "no", subgroups = "32" }

[metrics.ssim2]
last_measured = 2026-11-21T05:00:00Z
cells_failed_oom = [["gpu_full", 268435456]]
[metrics.ssim2.ns_per_px_at.1048576]
gpu_full = 0.38
gpu_strip = 0.45
cpu = 95.0
[metrics.ssim2.vram_mib_at.1048576]
gpu_full = 96
gpu_strip = 40
`
	p, err := Unmarshal([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p.GPUs[0].InitMs != 180 || p.GPUs[0].Features["subgroups"] != "32" {
		t.Fatalf("gpu: %+v", p.GPUs[0])
	}
	if s := p.Samples(zenmetrics.SSIMULACRA2, ClassGPUStrip); len(s) != 1 || s[0].NsPerPx != 0.45 || s[0].VRAMMiB != 40 {
		t.Fatalf("strip: %+v", s)
	}
	// Its hash is made up, so it is foreign to the hardware it lists.
	if r := p.Staleness(nil, p.LastValidated, 0); r != StaleHardware {
		t.Fatalf("staleness %q, want hardware mismatch", r)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	good, _ := sampleProfile(time.Now()).Marshal()
	cases := map[string]struct {
		data string
		want error
	}{
		"garbage":      {"this is {{ not toml", ErrCorruptProfile},
		"truncated":    {string(good[:len(good)/2]) + "\n[[[", ErrCorruptProfile},
		"empty":        {"", ErrCorruptProfile},
		"schema":       {strings.Replace(string(good), "schema_version = 1", "schema_version = 99", 1), ErrSchemaMismatch},
		"bad cell":     {strings.Replace(string(good), `[["gpu_full", 268435456]]`, `[["gpu_full"]]`, 1), ErrCorruptProfile},
		"bad pixel":    {strings.Replace(string(good), "ns_per_px_at.1048576]", "ns_per_px_at.lots]", 1), ErrCorruptProfile},
		"short hash":   {strings.Replace(string(good), "machine_hash = \"", "machine_hash = \"ab", 1), ErrCorruptProfile},
		"negative val": {strings.Replace(string(good), "cpu = 95.0", "cpu = -95.0", 1), ErrCorruptProfile},
	}
	for name, c := range cases {
		if _, err := Unmarshal([]byte(c.data)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

func TestStaleness(t *testing.T) {
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	p := sampleProfile(now)
	r := testReport()
	if got := p.Staleness(r, now.Add(6*24*time.Hour), 0); got != "" {
		t.Fatalf("6 days old: %q", got)
	}
	if got := p.Staleness(r, now.Add(8*24*time.Hour), 0); got != StaleAge {
		t.Fatalf("8 days old: %q", got)
	}
	if got := p.Staleness(r, now.Add(2*time.Hour), time.Hour); got != StaleAge {
		t.Fatalf("custom validity: %q", got)
	}
	r2 := testReport()
	r2.GPUs[0].Driver = "9.9"
	if got := p.Staleness(r2, now, 0); got != StaleGPUChanged {
		t.Fatalf("driver change: %q", got)
	}
	r3 := testReport()
	r3.CPU.Brand = "Other"
	if got := p.Staleness(r3, now, 0); got != StaleHardware {
		t.Fatalf("cpu change: %q", got)
	}
	var nilp *Profile
	if got := nilp.Staleness(r, now, 0); got != StaleMissing {
		t.Fatalf("nil: %q", got)
	}
	q := p.Clone()
	q.MachineHash = "0123456789abcdef"
	if got := q.Staleness(r, now, 0); got != StaleHardware {
		t.Fatalf("edited hash: %q", got)
	}
}

func TestStoreForeignAndMissing(t *testing.T) {
	ctx := context.Background()
	s := &Store{Dir: t.TempDir()}
	hash := ReportHash(testReport())
	if _, err := s.Load(ctx, hash); !errors.Is(err, ErrNoProfile) {
		t.Fatalf("missing: %v", err)
	}
	// A profile from another machine copied under this machine's name.
	other := testReport()
	other.CPU.Brand = "Elsewhere"
	op := NewProfile(other, time.Now())
	data, _ := op.Marshal()
	path, _ := s.Path(hash)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, hash); !errors.Is(err, ErrForeignProfile) {
		t.Fatalf("foreign: %v", err)
	}
	// Same, but someone also rewrote machine_hash to match the file name.
	op.MachineHash = hash
	data, _ = op.Marshal()
	os.WriteFile(path, data, 0o644)
	if _, err := s.Load(ctx, hash); !errors.Is(err, ErrForeignProfile) {
		t.Fatalf("foreign with forged hash: %v", err)
	}
}

// Goroutines doing read-modify-write through one Store must not lose each
// other's cells nor leave a file that does not parse.
func TestConcurrentUpdatesGoroutines(t *testing.T) {
	dir := t.TempDir()
	r := testReport()
	const writers, each = 8, 15
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &Store{Dir: dir}
			if err := addCells(s, r, w, each); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	checkCells(t, dir, r, writers, each)
}

func addCells(s *Store, r *Report, writer, n int) error {
	hash := ReportHash(r)
	for i := range n {
		err := s.Update(context.Background(), hash, func(cur *Profile, _ error) (*Profile, error) {
			if cur == nil {
				cur = NewProfile(r, time.Now())
			}
			cur.RecordOOM(zenmetrics.SSIMULACRA2, Cell{Backend: fmt.Sprintf("w%d", writer), Pixels: int64(i + 1)})
			return cur, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func checkCells(t *testing.T, dir string, r *Report, writers, each int) {
	t.Helper()
	s := &Store{Dir: dir}
	p, err := s.Load(context.Background(), ReportHash(r))
	if err != nil {
		t.Fatalf("final profile unreadable: %v", err)
	}
	cells := p.OOMCells(zenmetrics.SSIMULACRA2)
	if len(cells) != writers*each {
		t.Fatalf("%d cells survived, want %d (lost updates)", len(cells), writers*each)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".capability_*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temp files left behind: %v", left)
	}
}

const childEnv = "ZM_CAPABILITY_CHILD_WRITER"

// TestConcurrentUpdatesProcesses re-executes the test binary so that two
// real processes fight over the same file through the OS lock.
func TestConcurrentUpdatesProcesses(t *testing.T) {
	if v := os.Getenv(childEnv); v != "" {
		return // the child's work is done in TestMain
	}
	dir := t.TempDir()
	const procs, each = 3, 20
	var cmds []*exec.Cmd
	for w := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(w)+":"+strconv.Itoa(each)+":"+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("child %d: %s", w, out.String())
			}
		})
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	checkCells(t, dir, testReport(), procs, each)
}

func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		parts := strings.SplitN(v, ":", 3)
		w, _ := strconv.Atoi(parts[0])
		n, _ := strconv.Atoi(parts[1])
		if err := addCells(&Store{Dir: parts[2]}, testReport(), w, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// logBuffer captures slog output for assertions on warnings.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}
