package butteraugli

import (
	"context"
	"sync"

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

// PrepareOnceBackend is PrepareBackend for a reference that scores one
// distorted image: it checks ref and the options as PrepareBackend does
// (its errors are PrepareBackend's) but keeps only the image, and the
// first Score compares the pair streamed (ComparePair), without the
// prepared reference's planes; a later Score prepares the reference then.
// ref must not change until the Reference is released. The scores are
// PrepareBackend's bits.
func PrepareOnceBackend(ctx context.Context, ref *zenmetrics.Image, opt zenmetrics.Options, threads int) (zenmetrics.Reference, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := Config{
		Threads:         threads,
		IntensityTarget: opt.IntensityTarget,
		PNorm:           opt.PNorm,
		DistMap:         opt.DistMap,
	}
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	return &onceRef{ref: ref, cfg: cfg}, nil
}

// onceRef is PrepareOnceBackend's reference.
type onceRef struct {
	ref *zenmetrics.Image
	cfg Config

	mu       sync.Mutex
	used     bool       // the streamed Score has been taken
	full     *Reference // prepared for the Scores after it
	released bool
}

func (o *onceRef) Score(ctx context.Context, dist *zenmetrics.Image) (zenmetrics.Score, error) {
	if err := ctx.Err(); err != nil {
		return zenmetrics.Score{}, err
	}
	o.mu.Lock()
	if o.released {
		o.mu.Unlock()
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	var res Result
	var err error
	if !o.used {
		o.used = true
		ref := o.ref
		o.mu.Unlock()
		res, err = ComparePair(ref, dist, o.cfg)
	} else {
		if o.full == nil {
			if o.full, err = Prepare(o.ref, o.cfg); err != nil {
				o.mu.Unlock()
				return zenmetrics.Score{}, err
			}
		}
		full := o.full
		o.mu.Unlock()
		res, err = full.Score(dist)
	}
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return toScore(res, o.cfg), nil
}

func (o *onceRef) Release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.released = true
	o.ref = nil
	if o.full != nil {
		o.full.Release()
		o.full = nil
	}
}
