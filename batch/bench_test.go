package batch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
// backend, one scoring per core at once, and returns pairs per second.
func batchThroughput(tb testing.TB, pairs []Pair) (float64, Summary) {
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
	if sum.OK != len(pairs) {
		tb.Fatalf("summary %+v", sum)
	}
	return float64(len(pairs)) / time.Since(start).Seconds(), sum
}

// BenchmarkBatch: pairs/s of a whole batch run over the shared corpus.
func BenchmarkBatch(b *testing.B) {
	pairs := corpusPairs(b)
	var rate float64
	for i := 0; i < b.N; i++ {
		rate, _ = batchThroughput(b, pairs)
	}
	b.ReportMetric(rate, "pairs/s")
}

// TestThroughputVsNaive compares the batch with the naive shape: one
// zmscore process per pair, as many at once as there are CPUs. It builds
// cmd/zmscore and takes a while, so it runs only with ZM_BATCH_NAIVE=1.
func TestThroughputVsNaive(t *testing.T) {
	if os.Getenv("ZM_BATCH_NAIVE") == "" {
		t.Skip("set ZM_BATCH_NAIVE=1 to compare with one process per pair")
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
	naive := float64(len(pairs)) / time.Since(start).Seconds()
	if len(fails) > 0 {
		t.Fatalf("naive runs failed: %v", fails[0])
	}
	batch, _ := batchThroughput(t, pairs)
	t.Logf("%d pairs (SSIMULACRA2, CPU backend, %d CPUs): batch %.2f pairs/s, one process per pair ×%d %.2f pairs/s (%.2f×)",
		len(pairs), n, batch, n, naive, batch/naive)
}
