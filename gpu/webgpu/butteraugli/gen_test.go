package butteraugli

import (
	"context"
	"fmt"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// bfGens are values of ZENMETRICS_WEBGPU_BA_NEW: old kernels only,
// each new family alone, every new family.
var bfGens = []bfGen{{}, {malta: true}, {opsin: true}, {blur: true}, bfGenAll}

// TestButteraugliGenerations scores every variant of the kernel switch
// (kernels.go) against the CPU reference (the package's tolerance: the
// kernels are not the CPU's bits, see bfTolCPU) and against the old
// kernels bit for bit: max, norms and every distance-map value. The sizes
// leave partial blocks at the right and bottom edges of both levels for
// every block shape (16×16, 32×16, 32×32 and 256×8 outputs), with odd
// sides, a width past one 256-column row block, the 8-pixel minimum and
// inputs with alpha (two backgrounds) and 16 bits.
func TestButteraugliGenerations(t *testing.T) {
	dev := gputest.Device(t)
	defer func() { bfGenOverride = nil }()
	cases := []struct {
		w, h int
		f    zenmetrics.PixelFormat
	}{
		{67, 41, zenmetrics.RGB8},
		{261, 37, zenmetrics.RGBA8},
		{35, 263, zenmetrics.RGB8},
		{9, 8, zenmetrics.Gray8},
		{130, 71, zenmetrics.RGBA16},
	}
	if testing.Short() {
		cases = cases[:2]
	}
	for i, c := range cases {
		ref, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.f)
		opt := zenmetrics.Options{DistMap: true, PNorm: 2.5}
		cpu := bfScoreCPU(t, ref, dist, opt)
		var old zenmetrics.Score
		for _, gen := range bfGens {
			name := fmt.Sprintf("%dx%d %v gen %v", c.w, c.h, c.f, gen)
			bfGenOverride = &gen
			s, got := bfScoreGen(t, dev, ref, dist, opt)
			if got != gen {
				t.Fatalf("%s: compiled generation %v (workgroup memory limit?)", name, got)
			}
			bfCompare(t, name, s, cpu, opt)
			if gen == (bfGen{}) {
				old = s
				continue
			}
			bfSame(t, name+" vs old kernels", old, s)
		}
	}
}

// bfScoreGen is bfScoreGPU that also returns the generation the
// reference's kernels were compiled as.
func bfScoreGen(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Score, bfGen) {
	t.Helper()
	r, err := prepareButteraugli(context.Background(), dev, ref, opt)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	defer r.Release()
	s, err := r.Score(context.Background(), dist)
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	return s, r.k.gen
}

// TestGenEnv: the values of ZENMETRICS_WEBGPU_BA_NEW.
func TestGenEnv(t *testing.T) {
	for v, want := range map[string]bfGen{"": bfGenAll, "0": {}, "all": bfGenAll, "malta": {malta: true},
		"blur": {blur: true}, "opsin": {opsin: true}, "malta+blur": {malta: true, blur: true},
		"opsin,blur": {opsin: true, blur: true}, "1": bfGenAll} {
		t.Setenv("ZENMETRICS_WEBGPU_BA_NEW", v)
		got := bfGenEnv()
		if got != want {
			t.Errorf("%q: %+v, want %+v", v, got, want)
		}
		if v != "" && v != "1" && v != "opsin,blur" && got.String() != v {
			t.Errorf("%q: String %q", v, got.String())
		}
	}
}
