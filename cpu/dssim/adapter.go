package dssim

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics"
)

// PrepareBackend prepares ref for a zenmetrics.Backend: opt.DistMap maps
// onto Config.SSIMMap, threads onto Config.Threads; other options do not
// apply to DSSIM. Its scores carry the DSSIM value as Value and, when
// asked, scale 0's per-pixel SSIM map as DistMap (1 = identical there).
func PrepareBackend(ctx context.Context, ref *zenmetrics.Image, opt zenmetrics.Options, threads int) (zenmetrics.Reference, error) {
	r, err := PrepareContext(ctx, ref, Config{Threads: threads, SSIMMap: opt.DistMap})
	if err != nil {
		return nil, err
	}
	return backendRef{r}, nil
}

type backendRef struct{ r *Reference }

func (b backendRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	v, m, err := b.r.Score(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.DSSIM, Value: v, DistMap: m}, nil
}

func (b backendRef) Release() { b.r.Release() }
