package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/ladder"
)

// gpuLadder is what --backend webgpu runs on: the GPU rungs of the ladder
// in order (whole image, then strips, then strip pairs for the metrics
// that have them) and never the CPU rung. A forced GPU backend used to
// try the whole image only, so a 64 MP pair on lavapipe failed with "a
// plane exceeds maxStorageBufferBindingSize" although strips fit; only
// auto's fallback reached them. Refusing the fall to the CPU is the point
// of forcing the GPU; refusing the GPU's own strips was not.
type gpuLadder struct {
	zenmetrics.Backend
}

// gpuRungs are the GPU rungs the ladder offers for m.
func gpuRungs(m zenmetrics.Metric) []ladder.Rung {
	var out []ladder.Rung
	for _, r := range ladder.Rungs(m, true) {
		if r.IsGPU() {
			out = append(out, r)
		}
	}
	return out
}

// Estimate answers for the first GPU rung that fits when asked about the
// whole image (the caller's question is "can this backend score it?").
func (g *gpuLadder) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if mode != zenmetrics.ModeFull {
		return g.Backend.Estimate(m, w, h, mode)
	}
	var last int64
	for _, r := range gpuRungs(m) {
		n, ok := g.Backend.Estimate(m, w, h, r.Mode())
		if ok {
			return n, true
		}
		last = n
	}
	return last, false
}

// Prepare tries each GPU rung while the one before ran out of memory; a
// rung the backend does not implement (ErrUnsupported after the first) is
// passed over. A caller that asks for a layout itself gets just that.
func (g *gpuLadder) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error) {
	if opt.Mode != zenmetrics.ModeFull {
		return g.Backend.Prepare(ctx, m, ref, opt)
	}
	var (
		oom   error
		tried []string
	)
	for i, r := range gpuRungs(m) {
		o := opt
		o.Mode = r.Mode()
		p, err := g.Backend.Prepare(ctx, m, ref, o)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, zenmetrics.ErrOutOfMemory):
			oom = err
			tried = append(tried, r.String())
		case i > 0 && errors.Is(err, zenmetrics.ErrUnsupported):
			// This layout does not exist on this backend: the next one may.
		default:
			return nil, err
		}
	}
	if oom == nil {
		return nil, fmt.Errorf("%w: no GPU rung for %v on %s", zenmetrics.ErrUnsupported, m, g.Name())
	}
	return nil, fmt.Errorf("%w (GPU rungs tried: %s; --backend %s does not fall back to the CPU, --backend auto does)",
		oom, strings.Join(tried, ", "), "webgpu")
}

// UploadStats forwards the GPU backend's upload counters (batch.UploadMeter).
func (g *gpuLadder) UploadStats() webgpu.UploadStats {
	if m, ok := g.Backend.(interface{ UploadStats() webgpu.UploadStats }); ok {
		return m.UploadStats()
	}
	return webgpu.UploadStats{}
}

// ConcurrentScores forwards the GPU backend's advice to schedulers.
func (g *gpuLadder) ConcurrentScores() int {
	if c, ok := g.Backend.(interface{ ConcurrentScores() int }); ok {
		return c.ConcurrentScores()
	}
	return 1
}
