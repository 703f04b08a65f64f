package dssim

import (
	"context"
	"math"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
	"github.com/zenmetrics-go/zenmetrics/internal/shared"
)

func scoreMode(t *testing.T, b *webgpu.Backend, ref, dist *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Score, int, bool) {
	t.Helper()
	r, err := b.Prepare(context.Background(), zenmetrics.DSSIM, ref, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatal(err)
	}
	n, kept, _ := webgpu.StripInfo(r)
	return s, n, kept
}

// TestStripsEqualFull scores images in strips of several heights, with the
// reference kept and recomputed per score, against the full image: the SSIM
// maps must be bit-identical (plan.go: the 64-row halo covers the four 3×3
// passes at every scale and the crops start on multiples of 16, so every
// owned value is computed from the full image's values), and the scores
// within 1e-6 relative (they differ only in how the f32 partial sums are
// grouped; measured below).
func TestStripsEqualFull(t *testing.T) {
	b := backend(t)
	type tc struct {
		name      string
		ref, dist *zenmetrics.Image
	}
	var cases []tc
	r, d := metrictest.Synthetic(150, 333, 21, zenmetrics.RGBA8) // alpha: the pattern's y offset per strip
	cases = append(cases, tc{"synthetic_rgba8_150x333", r, d})
	r2, d2 := metrictest.Synthetic(97, 260, 22, zenmetrics.Gray16)
	cases = append(cases, tc{"synthetic_gray16_97x260", r2, d2})
	dir := shared.Testdata(t, "tiny")
	rr, err := imageio.DecodeFile(dir + "/coffee_crop256__ref.png")
	if err != nil {
		t.Fatal(err)
	}
	dd, err := imageio.DecodeFile(dir + "/coffee_crop256__jpeg_q20.png")
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, tc{"coffee_crop256_jpeg_q20", rr, dd})
	worst := 0.0
	defer func() { forceKeep = nil }()
	for _, c := range cases {
		full, n, _ := scoreMode(t, b, c.ref, c.dist, zenmetrics.Options{DistMap: true})
		if n != 1 {
			t.Fatalf("%s: full image in %d strips", c.name, n)
		}
		for _, sh := range []int{16, 48, 112} {
			for _, keep := range []bool{true, false} {
				forceKeep = &keep
				s, n, kept := scoreMode(t, b, c.ref, c.dist, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: sh, DistMap: true})
				if n < 2 || kept != keep {
					t.Fatalf("%s strip height %d: %d strips, kept %v (want ≥ 2, %v)", c.name, sh, n, kept, keep)
				}
				rel := math.Abs(s.Value-full.Value) / math.Max(full.Value, 1e-300)
				worst = math.Max(worst, rel)
				if rel > 1e-6 {
					t.Errorf("%s strip height %d keep %v: %v vs full %v (rel %.3g > 1e-6)", c.name, sh, keep, s.Value, full.Value, rel)
				}
				for i, v := range s.DistMap.Pix {
					if v != full.DistMap.Pix[i] {
						t.Errorf("%s strip height %d keep %v: map value %d (row %d) %v, full %v", c.name, sh, keep, i, i/c.ref.Width, v, full.DistMap.Pix[i])
						break
					}
				}
			}
		}
	}
	forceKeep = nil
	t.Logf("strips vs full: max relative difference %.3g", worst)
}

// TestStripsConcurrent scores one strip reference from several goroutines
// (the suite's Concurrent covers the full-image reference).
func TestStripsConcurrent(t *testing.T) {
	b := backend(t)
	ref, _ := metrictest.Synthetic(64, 200, 5, zenmetrics.RGB8)
	var dists []*zenmetrics.Image
	for i := 0; i < 4; i++ {
		_, d := metrictest.Synthetic(64, 200, int64(30+i), zenmetrics.RGB8)
		dists = append(dists, d)
	}
	r, err := b.Prepare(context.Background(), zenmetrics.DSSIM, ref, zenmetrics.Options{Mode: zenmetrics.ModeStrip, StripHeight: 48})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	want := make([]float64, len(dists))
	for i, d := range dists {
		s, err := r.Score(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = s.Value
	}
	got := make([]float64, len(dists))
	errs := make([]error, len(dists))
	done := make(chan int)
	for i, d := range dists {
		go func() {
			s, err := r.Score(context.Background(), d)
			got[i], errs[i] = s.Value, err
			done <- i
		}()
	}
	for range dists {
		<-done
	}
	for i := range dists {
		if errs[i] != nil || math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("dist %d: concurrent %v (%v), sequential %v", i, got[i], errs[i], want[i])
		}
	}
}

// TestPipelined compares the pipelined path (whole images of at least
// webgpu.StagingMin bytes, pipe.go) with the serial one, bit for bit, and
// scores concurrently through it.
func TestPipelined(t *testing.T) {
	b := backend(t)
	ref, _ := metrictest.Synthetic(700, 600, 8, zenmetrics.RGB8)
	var dists []*zenmetrics.Image
	for i := 0; i < 3; i++ {
		_, d := metrictest.Synthetic(700, 600, int64(40+i), zenmetrics.RGB8)
		dists = append(dists, d)
	}
	pr, err := b.Prepare(context.Background(), zenmetrics.DSSIM, ref, zenmetrics.Options{DistMap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Release()
	r := pr.(*reference)
	if !r.ringable(dists[0]) {
		t.Fatal("700x600 RGB8 does not take the pipelined path")
	}
	want := make([]float64, len(dists))
	for i, d := range dists {
		r.mu.Lock()
		s, _, err := r.run(context.Background(), d)
		r.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		want[i] = s.Value
		p, err := r.Score(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(p.Value) != math.Float64bits(s.Value) {
			t.Errorf("dist %d: pipelined %v, serial %v", i, p.Value, s.Value)
		}
		for j := range p.DistMap.Pix {
			if p.DistMap.Pix[j] != s.DistMap.Pix[j] {
				t.Errorf("dist %d: map value %d differs", i, j)
				break
			}
		}
	}
	got := make([]float64, len(dists))
	errs := make([]error, len(dists))
	done := make(chan int)
	for i, d := range dists {
		go func() {
			s, err := r.Score(context.Background(), d)
			got[i], errs[i] = s.Value, err
			done <- i
		}()
	}
	for range dists {
		<-done
	}
	for i := range dists {
		if errs[i] != nil || math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("dist %d: concurrent %v (%v), sequential %v", i, got[i], errs[i], want[i])
		}
	}
}
