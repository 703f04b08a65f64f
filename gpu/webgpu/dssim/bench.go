package dssim

import (
	"context"
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Benchmark helpers (cmd/zmbench, the benchmarks in bench_test.go).

// BytesPerPixel is the model of global-memory traffic per distorted pixel
// of one cached DSSIM score, counting every load and store a kernel issues
// once (the blur kernels' tile aprons, ~1.9 loads per value, counted as
// one). Per scale with N_s pixels (vec4 = 16 bytes): lab 16 read + 16
// written, chroma 16 + 16, stats 16 + 16, down 16·N_s read + 16·N_{s+1}
// written, ssim 4 planes read (64) + 4 written, sums and devs 4 + 4 read;
// plus the raw bytes and unpack's 16 at scale 0.
func BytesPerPixel(w, h, rawBytesPerPixel int) float64 {
	n0 := float64(w) * float64(h)
	total := float64(rawBytesPerPixel)*n0 + 16*n0
	sw, sh := w, h
	for s := 0; s < numScales(w, h); s++ {
		if s > 0 {
			sw, sh = sw/2, sh/2
		}
		n := float64(sw) * float64(sh)
		total += (32+32+32)*n + 16*n + 68*n + 8*n
		if s > 0 {
			total += 16 * n // down's write (its read is counted in the 16·n above of the finer scale)
		}
	}
	return total / n0
}

// PassProfile scores dist against a reference prepared by this package
// with every dispatch in its own timed pass and returns the GPU time of
// each ("unpack", "lab s0", "chroma s0", "stats s0", "down s1", ...,
// "ssim s0", "sums s0", ..., "pool"); nil without TimestampQuery. Timing
// each dispatch separately serialises them, so the sum exceeds a plain
// score a little. Whole-image references only (37 dispatches at 5
// scales, within the encoder's 64 timed passes).
func PassProfile(ctx context.Context, ref zenmetrics.Reference, dist *zenmetrics.Image) ([]webgpu.PassTime, error) {
	r, ok := ref.(*reference)
	if !ok {
		return nil, fmt.Errorf("webgpu: dssim.PassProfile: not a DSSIM reference of this backend")
	}
	if len(r.p.bands) != 1 {
		return nil, fmt.Errorf("webgpu: dssim.PassProfile: whole-image references only (this one has %d strips): %w", len(r.p.bands), zenmetrics.ErrUnsupported)
	}
	if dist.Width != r.p.w || dist.Height != r.p.h {
		return nil, &zenmetrics.SizeMismatchError{RefWidth: r.p.w, RefHeight: r.p.h, DistWidth: dist.Width, DistHeight: dist.Height}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return nil, zenmetrics.ErrReleased
	}
	r.timed = true
	defer func() { r.timed = false }()
	_, times, err := r.run(ctx, dist)
	return times, err
}
