// Package cpu is the CPU reference backend: plain Go, no cgo, no SIMD, the
// implementations that define the project's scores (each matches its
// reference tool) and that faster backends are tested against.
//
// Metrics are dispatched to their packages by a simple switch in Prepare
// and Estimate; adding one is one case in each.
package cpu

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/cpu/dssim"
	"github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/cpu/zensim"
)

// Config tunes the CPU backend.
type Config struct {
	// Threads is the number of goroutines one Prepare or Score may use;
	// 0 means runtime.GOMAXPROCS(0). Scores do not depend on it.
	Threads int
	// MemBudget bounds what one prepared reference and one scoring take,
	// with the two images; Prepare refuses a larger one before allocating
	// (see checkMemory). 0 means sysmem.DefaultBudget(), negative no limit.
	MemBudget int64
}

// Backend is the CPU reference backend. It is safe for concurrent use.
type Backend struct {
	cfg    Config
	closed atomic.Bool
	// budget overrides Config.MemBudget when set (SetMemBudget).
	budget atomic.Int64
}

var _ zenmetrics.Backend = (*Backend)(nil)

// New returns a CPU backend.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// Name is "cpu".
func (b *Backend) Name() string { return "cpu" }

// Estimate returns the heap a prepared reference plus one scoring of a w×h
// image uses. Every mode is computed on the full image, so mode does not
// change it; strips are the CPU's answer to the memory budget alone
// (WorkingSet says what a pair takes under it).
func (b *Backend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	if CheckSize(m, w, h) != nil {
		return 0, false
	}
	switch m {
	case zenmetrics.SSIMULACRA2:
		mw, mh := ssim2.MinSize()
		if w < mw || h < mh {
			return 0, false
		}
		return ssim2.EstimateBytes(w, h), true
	case zenmetrics.Butteraugli:
		// Below 8 px: refused by CheckSize (libjxl's tool prints 0).
		return butteraugli.EstimateBytes(w, h), true
	case zenmetrics.DSSIM:
		// dssim-core has no minimum size either (it scores a 1×1 image).
		if w <= 0 || h <= 0 {
			return 0, false
		}
		return dssim.EstimateBytes(w, h), true
	case zenmetrics.IWSSIM:
		// At least 161×161 (piq's minimum for five scales): CheckSize.
		return iwssim.EstimateBytes(w, h), true
	case zenmetrics.Zensim:
		// At least 8×8 (zensim's minimum): CheckSize.
		return zensim.EstimateBytes(w, h), true
	case zenmetrics.CVVDP:
		// At least 2×2 (pycvvdp's pyramid): CheckSize. Without the
		// distortion map; plan adds cvvdp.MapBytes when one is asked for.
		return cvvdp.EstimateBytes(w, h), true
	}
	return 0, false
}

// Prepare does the reference-only work of metric m. Metrics without a CPU
// implementation give an error wrapping zenmetrics.ErrUnsupported.
func (b *Backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (r zenmetrics.Reference, err error) {
	defer zenmetrics.Recover(&err)
	if b.closed.Load() {
		return nil, fmt.Errorf("%w: cpu backend is closed", zenmetrics.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	band, err := b.checkMemory(m, ref, opt)
	if err != nil {
		return nil, err
	}
	if band > 0 {
		// Over the budget at once, within it in strips (Butteraugli,
		// SSIMULACRA2).
		return b.prepareStrips(m, ref, opt, band)
	}
	switch m {
	case zenmetrics.SSIMULACRA2:
		p, err := ssim2.PrepareContext(ctx, ref, ssim2.Config{Threads: b.cfg.Threads})
		if err != nil {
			return nil, err
		}
		return &ssim2Ref{r: p}, nil
	case zenmetrics.Butteraugli:
		return butteraugli.PrepareBackend(ctx, ref, opt, b.cfg.Threads)
	case zenmetrics.DSSIM:
		return dssim.PrepareBackend(ctx, ref, opt, b.cfg.Threads)
	case zenmetrics.IWSSIM:
		return iwssim.PrepareBackend(ctx, ref, opt, b.cfg.Threads)
	case zenmetrics.Zensim:
		return zensim.PrepareBackend(ctx, ref, opt, b.cfg.Threads)
	case zenmetrics.CVVDP:
		return cvvdp.PrepareBackend(ctx, ref, opt, b.cfg.Threads)
	}
	return nil, fmt.Errorf("%w: metric %v on the cpu backend", zenmetrics.ErrUnsupported, m)
}

// PrepareOnce is Prepare for a reference that scores one distorted image:
// it checks ref as Prepare does (its errors are Prepare's), but for
// SSIMULACRA2 and Butteraugli within the memory budget it keeps only the
// image, and the first Score computes both halves in one streamed pass
// (ssim2.ScorePair, butteraugli.ComparePair), which touches a fraction of
// the memory of a prepared reference; a later Score prepares the
// reference then. ref must not change until the Reference is released.
// Other metrics: Prepare. The scores are Prepare's bits.
func (b *Backend) PrepareOnce(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (r zenmetrics.Reference, err error) {
	defer zenmetrics.Recover(&err)
	if (m != zenmetrics.SSIMULACRA2 && m != zenmetrics.Butteraugli) || b.closed.Load() {
		return b.Prepare(ctx, m, ref, opt)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	band, err := b.checkMemory(m, ref, opt)
	if err != nil {
		return nil, err
	}
	if band > 0 {
		return b.Prepare(ctx, m, ref, opt)
	}
	if m == zenmetrics.Butteraugli {
		return butteraugli.PrepareOnceBackend(ctx, ref, opt, b.cfg.Threads)
	}
	return &ssim2Once{b: b, ref: ref, opt: opt}, nil
}

// ssim2Once is PrepareOnce's SSIMULACRA2 reference.
type ssim2Once struct {
	b   *Backend
	ref *zenmetrics.Image
	opt zenmetrics.Options

	mu       sync.Mutex
	used     bool                 // the one-pass Score has been taken
	full     zenmetrics.Reference // prepared for the Scores after it
	released bool
}

func (s *ssim2Once) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	s.mu.Lock()
	if s.released {
		s.mu.Unlock()
		return zenmetrics.Score{}, zenmetrics.ErrReleased
	}
	if !s.used {
		s.used = true
		ref := s.ref
		s.mu.Unlock()
		v, err := ssim2.ScorePair(ctx, ref, dist, ssim2.Config{Threads: s.b.cfg.Threads})
		if err != nil {
			return zenmetrics.Score{}, err
		}
		return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: v}, nil
	}
	if s.full == nil {
		if s.full, err = s.b.Prepare(ctx, zenmetrics.SSIMULACRA2, s.ref, s.opt); err != nil {
			s.mu.Unlock()
			return zenmetrics.Score{}, err
		}
	}
	full := s.full
	s.mu.Unlock()
	return full.Score(ctx, dist)
}

func (s *ssim2Once) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = true
	if s.full != nil {
		s.full.Release()
		s.full = nil
	}
	s.ref = nil
}

// Close marks the backend closed; later Prepare calls fail. The CPU backend
// holds nothing beyond its references, which the garbage collector frees.
func (b *Backend) Close() error {
	b.closed.Store(true)
	return nil
}

// ssim2Ref adapts *ssim2.Reference to zenmetrics.Reference.
type ssim2Ref struct {
	r *ssim2.Reference
}

func (s *ssim2Ref) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	if err := ctx.Err(); err != nil {
		return zenmetrics.Score{}, err
	}
	v, err := s.r.ScoreContext(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: v}, nil
}

func (s *ssim2Ref) Release() { s.r.Release() }

// ssim2StripRef adapts *ssim2.StripReference to zenmetrics.Reference.
type ssim2StripRef struct {
	r *ssim2.StripReference
}

func (s *ssim2StripRef) Score(ctx context.Context, dist *zenmetrics.Image) (sc zenmetrics.Score, err error) {
	defer zenmetrics.Recover(&err)
	v, err := s.r.Score(ctx, dist)
	if err != nil {
		return zenmetrics.Score{}, err
	}
	return zenmetrics.Score{Metric: zenmetrics.SSIMULACRA2, Value: v}, nil
}

func (s *ssim2StripRef) Release() { s.r.Release() }

// Band is the interior rows of each strip.
func (s *ssim2StripRef) Band() int { return s.r.Band() }
