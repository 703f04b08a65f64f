package zensim

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

// backend adapts this package to zenmetrics.Backend for the shared suite
// (package cpu does the same for users; importing it here would cycle).
type backend struct {
	name    string
	threads int
}

func (b backend) Name() string { return b.name }
func (b backend) Estimate(m zenmetrics.Metric, w, h int, _ zenmetrics.Mode) (int64, bool) {
	return EstimateBytes(w, h), m == zenmetrics.Zensim
}
func (b backend) Close() error { return nil }
func (b backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if m != zenmetrics.Zensim {
		return nil, zenmetrics.ErrUnsupported
	}
	return PrepareBackend(ctx, ref, opt, b.threads)
}

// TestSuite runs the parts of the shared suite that need no reference-tool
// scores (zensim has no corpus goldens: its reference is the published
// cross-platform scores, TestPublishedScores): the error contract,
// repeatability, concurrent scoring, and bit-identical scores between all
// cores and one goroutine on synthetic and real images (tolerance 0).
func TestSuite(t *testing.T) {
	all := backend{"zensim", 0}
	if runtime.GOMAXPROCS(0) == 1 {
		all.threads = 3 // still exercise the goroutine split
	}
	cfg := metrictest.Config{Reference: backend{"zensim-1thread", 1}}
	t.Run("Errors", func(t *testing.T) { metrictest.Errors(t, all, zenmetrics.Zensim, cfg) })
	t.Run("Determinism", func(t *testing.T) { metrictest.Determinism(t, all, zenmetrics.Zensim, cfg) })
	t.Run("Concurrent", func(t *testing.T) { metrictest.Concurrent(t, all, zenmetrics.Zensim, cfg) })
	t.Run("VsReference", func(t *testing.T) { metrictest.VsReference(t, all, zenmetrics.Zensim, cfg) })
}

// TestJPEGMonotonic: on every corpus photo with a JPEG ladder, scores fall strictly as JPEG
// quality falls (q95 > q80 > q50 > q20) and stay below 100.
func TestJPEGMonotonic(t *testing.T) {
	if testing.Short() {
		t.Skip("corpus photos left out under -short")
	}
	dir := shared.Dir(t, "corpus", "images")
	refs, err := filepath.Glob(filepath.Join(dir, "*__ref.png"))
	if err != nil || len(refs) == 0 {
		t.Fatalf("no *__ref.png in %s (%v)", dir, err)
	}
	checked := 0
	for _, rp := range refs {
		name := filepath.Base(rp[:len(rp)-len("__ref.png")])
		if m, _ := filepath.Glob(filepath.Join(dir, name+"__jpeg_q*.png")); len(m) < 4 {
			continue // this photo has no JPEG ladder in the corpus
		}
		checked++
		ref, err := imageio.DecodeFile(rp)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Prepare(ref, Config{})
		if err != nil {
			t.Fatal(err)
		}
		prev := 100.0
		var line []any
		for _, q := range []string{"95", "80", "50", "20"} {
			dist, err := imageio.DecodeFile(filepath.Join(dir, name+"__jpeg_q"+q+".png"))
			if err != nil {
				t.Fatal(err)
			}
			v, err := r.Score(context.Background(), dist)
			if err != nil {
				t.Fatal(err)
			}
			line = append(line, q, v)
			if !(v < prev) {
				t.Errorf("%s: q%s scores %.4f, not below the higher quality's %.4f", name, q, v, prev)
			}
			prev = v
		}
		r.Release()
		t.Logf("%s: q%s %.4f  q%s %.4f  q%s %.4f  q%s %.4f", append([]any{name}, line...)...)
	}
	if checked == 0 {
		t.Fatal("no corpus photo has the q95/q80/q50/q20 JPEG ladder")
	}
}
