package butteraugli

import (
	"context"
	"fmt"
	"sort"
	"time"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// BenchResult is what Bench measured.
type BenchResult struct {
	Width, Height int
	PrepareMS     float64 // one Prepare (upload, reference decomposition), warm device
	// ScoreMS are the wall times of the timed Score calls (raw upload,
	// every pass, 32-byte readback), sorted.
	ScoreMS  []float64
	MedianMS float64
	MinMS    float64
	// GPUMS is the median GPU time of the score's compute pass from
	// timestamp queries; 0 when the device has none.
	GPUMS float64
	// Max and PNorm3 of the last score (to check the run did real work).
	Max, PNorm3 float64
	Bytes       int64 // device memory the prepared reference holds
	// PassMS is, with profile set, the GPU time per kernel (summed over
	// its dispatches) of one score timed dispatch by dispatch.
	PassMS map[string]float64
}

func (b BenchResult) String() string {
	mp := float64(b.Width) * float64(b.Height) / 1e6
	return fmt.Sprintf("butteraugli %dx%d (%.2f MP): prepare %.2f ms, score median %.2f ms (min %.2f, %d runs, GPU pass %.2f ms), %.0f MP/s, %.1f MiB resident; max %.6f 3-norm %.6f",
		b.Width, b.Height, mp, b.PrepareMS, b.MedianMS, b.MinMS, len(b.ScoreMS), b.GPUMS, mp/(b.MedianMS/1e3),
		float64(b.Bytes)/(1<<20), b.Max, b.PNorm3)
}

// Bench measures Butteraugli on dev the way a cached reference
// is used: one Prepare of ref, warmup untimed scores of dist, then runs
// timed scores. Pass real (not flat) images. profile adds one score timed
// dispatch by dispatch (PassMS).
func Bench(ctx context.Context, dev *webgpu.Device, ref, dist *zenmetrics.Image, opt zenmetrics.Options, warmup, runs int, profile bool) (res BenchResult, err error) {
	defer zenmetrics.Recover(&err)
	if runs < 1 {
		runs = 1
	}
	// Compile outside the timed prepare.
	if err := dev.Do(ctx, func(g *webgpu.GPU) error { _, err := kernels(g); return err }); err != nil {
		return res, err
	}
	t0 := time.Now()
	r, err := prepareButteraugli(ctx, dev, ref, opt)
	if err != nil {
		return res, err
	}
	defer r.Release()
	res = BenchResult{Width: ref.Width, Height: ref.Height, PrepareMS: bfMS(time.Since(t0)), Bytes: r.Bytes()}
	for i := 0; i < warmup; i++ {
		if _, err := r.Score(ctx, dist); err != nil {
			return res, err
		}
	}
	var gpu []float64
	for i := 0; i < runs; i++ {
		t := time.Now()
		s, err := r.Score(ctx, dist)
		if err != nil {
			return res, err
		}
		res.ScoreMS = append(res.ScoreMS, bfMS(time.Since(t)))
		res.Max, res.PNorm3 = s.Value, s.Extras["pnorm3"]
	}
	// GPU time separately: the timestamp readback adds to the wall time.
	r.timed = dev.HasFeature(wgpu.FeatureTimestampQuery)
	for i := 0; r.timed && i < runs; i++ {
		if _, err := r.Score(ctx, dist); err != nil {
			return res, err
		}
		if r.lastGPU > 0 {
			gpu = append(gpu, r.lastGPU/1e6)
		}
	}
	if r.timed && profile {
		r.perPass = true
		if _, err := r.Score(ctx, dist); err != nil {
			return res, err
		}
		res.PassMS = map[string]float64{}
		for _, p := range r.passes {
			res.PassMS[p.Label] += p.DurationNS / 1e6
		}
	}
	sort.Float64s(res.ScoreMS)
	res.MedianMS = res.ScoreMS[len(res.ScoreMS)/2]
	res.MinMS = res.ScoreMS[0]
	if len(gpu) > 0 {
		sort.Float64s(gpu)
		res.GPUMS = gpu[len(gpu)/2]
	}
	return res, nil
}

func bfMS(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// PassProfile scores dist against a whole-image reference prepared by this
// package with every dispatch in its own timed pass, and returns the GPU
// time of each, labelled "kernel level" ("unpack s0", "opsin s1",
// "rowsLF s0", "maltaX s0", ..., "reduceMap"; s0 is full resolution, s1
// half; the LF/HF/UHF row blurs appear once per channel). Nil without
// TimestampQuery. Timing each dispatch separately serialises them, so the
// sum exceeds a plain score a little. An opaque image is 42 dispatches;
// with alpha (two backgrounds) the dispatches past the encoder's 64 timed
// passes run untimed and are missing from the list.
func PassProfile(ctx context.Context, ref zenmetrics.Reference, dist *zenmetrics.Image) ([]webgpu.PassTime, error) {
	r, ok := ref.(*butteraugliRef)
	if !ok {
		return nil, fmt.Errorf("webgpu: butteraugli.PassProfile: not a whole-image Butteraugli reference of this backend")
	}
	if !r.dev.HasFeature(wgpu.FeatureTimestampQuery) {
		return nil, nil
	}
	if err := webgpu.SizeMismatch(r.w, r.h, dist); err != nil {
		return nil, err
	}
	// timed, perPass and passes belong to the reference's lock, which
	// scoreWindow takes: set them under it too.
	r.mu.Lock()
	r.timed, r.perPass, r.passes = true, true, nil
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.timed, r.perPass = false, false
		r.mu.Unlock()
	}()
	if _, err := r.score(ctx, dist); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passes, nil
}
