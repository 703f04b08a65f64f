package cvvdp

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics"
)

// PrepareBackend prepares ref for a zenmetrics.Backend: threads maps onto
// Config.Threads, Options.Display onto Config.Display (an unknown name is
// ErrBadInput) and Options.DistMap onto Config.DistMap. Scores carry the
// JOD as Value and, when asked for, pycvvdp's raw heatmap as DistMap.
func PrepareBackend(ctx context.Context, ref *zenmetrics.Image, opt zenmetrics.Options, threads int) (zenmetrics.Reference, error) {
	r, err := PrepareContext(ctx, ref, Config{Threads: threads, Display: opt.Display, DistMap: opt.DistMap})
	if err != nil {
		return nil, err
	}
	return backendRef{r}, nil
}

type backendRef struct{ r *Reference }

func (b backendRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	res, err := b.r.ScoreContext(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.CVVDP, Value: res.JOD, DistMap: res.DistMap}, nil
}

func (b backendRef) Release() { b.r.Release() }
