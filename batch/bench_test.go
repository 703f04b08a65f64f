package batch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// corpusPairs is the shared corpus's scores.tsv read as a manifest (it has
// ref and dist columns relative to it).
func corpusPairs(tb testing.TB) []Pair {
	tb.Helper()
	dir := shared.Dir(tb, "corpus")
	pairs, err := ReadManifest(filepath.Join(dir, "scores.tsv"), TSV)
	if err != nil {
		tb.Fatal(err)
	}
	return pairs
}

// batchThroughput scores every corpus pair with SSIMULACRA2 on the CPU
// backend with the CLI's default settings (one worker per CPU, one thread
// per scoring, one decoder per CPU) and returns pairs per second and the
// stage table.
func batchThroughput(tb testing.TB, pairs []Pair) (float64, Summary, string) {
	tb.Helper()
	be := cpu.New(cpu.Config{Threads: 1})
	e, err := NewBackendEngine(BackendEngineConfig{
		Backend: func(zenmetrics.Metric) (zenmetrics.Backend, error) { return be, nil },
		Workers: runtime.NumCPU()})
	if err != nil {
		tb.Fatal(err)
	}
	defer e.Close()
	out := filepath.Join(tb.TempDir(), "bench.jsonl")
	start := time.Now()
	sum, err := Run(context.Background(), Config{Pairs: pairs, Metrics: []zenmetrics.Metric{zenmetrics.SSIMULACRA2},
		Out: out, Engine: e, Decode: imageio.DecodeFile})
	if err != nil {
		tb.Fatal(err)
	}
	rate := float64(len(pairs)) / time.Since(start).Seconds()
	if sum.OK != len(pairs) {
		tb.Fatalf("summary %+v", sum)
	}
	var table strings.Builder
	PrintStages(&table, &sum)
	return rate, sum, table.String()
}

// BenchmarkBatch: pairs/s of a whole batch run over the shared corpus.
func BenchmarkBatch(b *testing.B) {
	pairs := corpusPairs(b)
	var rate float64
	var table string
	for i := 0; i < b.N; i++ {
		rate, _, table = batchThroughput(b, pairs)
	}
	b.ReportMetric(rate, "pairs/s")
	b.Log("\n" + table)
}

// naiveThroughput runs one zmscore process per pair, n at once, and
// returns pairs per second.
func naiveThroughput(t *testing.T, bin string, pairs []Pair, n int) float64 {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	var mu sync.Mutex
	var fails []string
	for _, p := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cmd := exec.Command(bin, "--metric", "ssim2", "--backend", "cpu", p.RefPath, p.DistPath)
			if out, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				fails = append(fails, fmt.Sprintf("%s: %v %s", p.DistPath, err, out))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rate := float64(len(pairs)) / time.Since(start).Seconds()
	if len(fails) > 0 {
		t.Fatalf("naive runs failed: %v", fails[0])
	}
	return rate
}

// TestThroughputVsNaive compares the batch with the naive shape: one
// zmscore process per pair (its defaults: all cores per scoring), as many
// at once as there are CPUs. It builds cmd/zmscore and takes minutes, so
// it runs only with ZM_BATCH_NAIVE=1; ZM_BATCH_NAIVE_REPS (default 3)
// rounds alternate the two shapes and the median ratio is reported.
func TestThroughputVsNaive(t *testing.T) {
	if os.Getenv("ZM_BATCH_NAIVE") == "" {
		t.Skip("set ZM_BATCH_NAIVE=1 to compare with one process per pair")
	}
	reps := 3
	if v, err := strconv.Atoi(os.Getenv("ZM_BATCH_NAIVE_REPS")); err == nil && v > 0 {
		reps = v
	}
	pairs := corpusPairs(t)
	root, err := shared.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "zmscore")
	build := exec.Command("go", "build", "-o", bin, "./cmd/zmscore")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cannot build cmd/zmscore: %v\n%s", err, out)
	}
	n := runtime.NumCPU()
	var ratios []float64
	for i := 0; i < reps; i++ {
		naive := naiveThroughput(t, bin, pairs, n)
		batch, _, table := batchThroughput(t, pairs)
		ratios = append(ratios, batch/naive)
		t.Logf("round %d: %d pairs (SSIMULACRA2, CPU backend, %d CPUs): batch %.2f pairs/s, one process per pair ×%d %.2f pairs/s (%.2f×)\n%s",
			i+1, len(pairs), n, batch, n, naive, batch/naive, table)
	}
	sort.Float64s(ratios)
	t.Logf("median ratio over %d rounds: %.2f× (all: %.2f)", reps, ratios[len(ratios)/2], ratios)
}
