package butteraugli

import (
	"context"

	"github.com/zenmetrics-go/zenmetrics"
)

// PrepareBackend prepares ref for a zenmetrics.Backend: opt's
// IntensityTarget, PNorm and DistMap map onto Config, threads onto
// Config.Threads. Its scores carry Max as Value, the 3-norm as
// Extras["pnorm3"], the optional p-norm as Extras["pnorm"] and the map in
// DistMap when asked for.
func PrepareBackend(ctx context.Context, ref *zenmetrics.Image, opt zenmetrics.Options, threads int) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := Prepare(ref, Config{
		Threads:         threads,
		IntensityTarget: opt.IntensityTarget,
		PNorm:           opt.PNorm,
		DistMap:         opt.DistMap,
	})
	if err != nil {
		return nil, err
	}
	return backendRef{r}, nil
}

type backendRef struct{ r *Reference }

func (b backendRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	if err := ctx.Err(); err != nil {
		return zenmetrics.Score{}, err
	}
	res, err := b.r.Score(dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return toScore(res, b.r.cfg), nil
}

// toScore is a Result as a zenmetrics.Score.
func toScore(res Result, cfg Config) zenmetrics.Score {
	sc := zenmetrics.Score{
		Metric: zenmetrics.Butteraugli,
		Value:  res.Max,
		Extras: map[string]float64{"pnorm3": res.PNorm3},
	}
	if cfg.PNorm > 0 {
		sc.Extras["pnorm"] = res.PNorm
	}
	if res.DistMap != nil {
		sc.DistMap = &zenmetrics.FloatPlane{Width: res.Width, Height: res.Height, Pix: res.DistMap}
	}
	return sc
}

func (b backendRef) Release() { b.r.Release() }
