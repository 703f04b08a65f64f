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

// TestButteraugliKernels scores with the kernels a device compiles where
// its workgroup memory holds the column Malta kernels, then with the 16×16
// Malta fallback (kernels.go), each against the CPU reference (the
// package's tolerance: the kernels are not the CPU's bits, see bfTolCPU),
// and the two against each other bit for bit: max, norms and every
// distance-map value. The sizes leave partial blocks at the right and
// bottom edges of both levels for every block shape (16×16, 32×32, 64×4
// and 32×8 outputs), with odd sides, a width past 256 columns, the 8-pixel
// minimum and inputs with alpha (two backgrounds) and 16 bits.
func TestButteraugliKernels(t *testing.T) {
	dev := gputest.Device(t)
	defer func() { bfForceMalta16 = false }()
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
		var cols zenmetrics.Score
		for _, malta16 := range []bool{false, true} {
			name := fmt.Sprintf("%dx%d %v malta16=%v", c.w, c.h, c.f, malta16)
			bfForceMalta16 = malta16
			s, got := bfScoreKernels(t, dev, ref, dist, opt)
			if got != malta16 {
				t.Fatalf("%s: compiled malta16=%v (the device's workgroup memory limit is %d bytes; the column Malta kernels need %d)",
					name, got, dev.Limits().MaxComputeWorkgroupStorageSize, bfMaltaBytes)
			}
			bfCompare(t, name, s, cpu, opt)
			if !malta16 {
				cols = s
				continue
			}
			bfSame(t, name+" vs column Malta kernels", cols, s)
		}
	}
}

// bfScoreKernels is bfScoreGPU that also returns whether the reference's
// kernels were compiled with the 16×16 Malta fallback.
func bfScoreKernels(t *testing.T, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Score, bool) {
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
	return s, r.k.malta16
}
