package zensim

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics"
)

// PrepareBackend prepares ref for a zenmetrics.Backend: threads maps onto
// Config.Threads; zensim has no options (a distortion map is not offered).
func PrepareBackend(ctx context.Context, ref *zenmetrics.Image, _ zenmetrics.Options, threads int) (zenmetrics.Reference, error) {
	r, err := PrepareContext(ctx, ref, Config{Threads: threads})
	if err != nil {
		return nil, err
	}
	return backendRef{r}, nil
}

type backendRef struct{ r *Reference }

func (b backendRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	v, err := b.r.Score(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.Zensim, Value: v}, nil
}

func (b backendRef) Release() { b.r.Release() }
