package cpu

import (
	"fmt"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/cpu/cvvdp"
	"github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
	"github.com/zenmetrics-go/zenmetrics/cpu/zensim"
	"github.com/zenmetrics-go/zenmetrics/internal/sysmem"
)

// MinSize is the smallest width and height metric m is computed for, on
// this backend and as the CLIs check before any backend runs.
//
// Butteraugli: below 8 px libjxl's butteraugli_main (v0.12.0) prints 0,
// whatever the images: its ButteraugliComparator (lib/jxl/butteraugli/
// butteraugli.cc, Make and Diffmap) leaves the distance map all zeros when
// a side is under 8 px. A distance of 0 reads as a perfect match, so this
// project refuses such images (an error matching zenmetrics.ErrBadInput),
// as it does for SSIMULACRA2. The cpu/butteraugli package itself keeps
// libjxl's zeros for callers that want the tool's exact behaviour.
func MinSize(m zenmetrics.Metric) (w, h int) {
	switch m {
	case zenmetrics.SSIMULACRA2:
		return ssim2.MinSize()
	case zenmetrics.Butteraugli:
		return butteraugli.MinSize, butteraugli.MinSize
	case zenmetrics.IWSSIM:
		// piq refuses images below (11 − 1)·2⁴ + 1 = 161 px a side.
		return iwssim.MinSize()
	case zenmetrics.Zensim:
		// zensim refuses images below 8 px a side (ImageTooSmall).
		return zensim.MinSize, zensim.MinSize
	case zenmetrics.CVVDP:
		// pycvvdp's pyramid fails below 2 px a side.
		return cvvdp.MinSide, cvvdp.MinSide
	}
	return 1, 1
}

// CheckSize returns a *zenmetrics.TooSmallError (matching
// zenmetrics.ErrBadInput) when a w×h image is below MinSize(m).
func CheckSize(m zenmetrics.Metric, w, h int) error {
	mw, mh := MinSize(m)
	if w < mw || h < mh {
		return &zenmetrics.TooSmallError{Metric: m, Width: w, Height: h, MinWidth: mw, MinHeight: mh}
	}
	return nil
}

// memBudget is the budget in force, ≤ 0 for none: SetMemBudget's, else
// Config.MemBudget's (0: sysmem.DefaultBudget()).
func (b *Backend) memBudget() int64 {
	if n := b.budget.Load(); n != 0 {
		return n
	}
	if b.cfg.MemBudget == 0 {
		return sysmem.DefaultBudget()
	}
	return b.cfg.MemBudget
}

// SetMemBudget replaces Config.MemBudget (the CLIs pass --mem-budget this
// way to a backend another package opened); n < 0 means no limit, 0 goes
// back to Config's.
func (b *Backend) SetMemBudget(n int64) { b.budget.Store(n) }

// plan is how metric m runs on a w×h pair of bpp bytes per pixel under the
// budget: need is the memory it takes with both images (and the full
// distance map when distMap), band > 0 says in strips of that many rows
// (Butteraugli and SSIMULACRA2 over the budget, where a strip fits).
// A need over the budget means it does not fit either way.
func (b *Backend) plan(m zenmetrics.Metric, w, h, bpp int, distMap bool) (need int64, band int, ok bool) {
	est, ok := b.Estimate(m, w, h, zenmetrics.ModeFull)
	if !ok {
		return 0, 0, false
	}
	images := 2 * int64(w) * int64(h) * int64(bpp)
	need = est + images
	if m == zenmetrics.CVVDP && distMap {
		need += cvvdp.MapBytes(w, h)
	}
	budget := b.memBudget()
	if budget <= 0 || need <= budget {
		return need, 0, true
	}
	held := images
	switch m {
	case zenmetrics.Butteraugli:
		if distMap {
			held += 4 * int64(w) * int64(h) // the assembled map
		}
		if band = butteraugli.StripBand(w, h, budget-held); band > 0 {
			return held + butteraugli.StripBytes(w, h, band), band, true
		}
	case zenmetrics.SSIMULACRA2:
		if band = ssim2.StripBand(w, h, budget-held); band > 0 {
			return held + ssim2.StripBytes(w, h, band), band, true
		}
	}
	return need, 0, true
}

// WorkingSet is the memory scoring metric m on a w×h pair takes on this
// backend under its budget, with the two decoded images of bpp bytes per
// pixel: Estimate (prepared reference plus one scoring) and the images,
// or, for Butteraugli and SSIMULACRA2 over the budget, one strip's working
// set and the images. ok is false where Estimate's is.
func (b *Backend) WorkingSet(m zenmetrics.Metric, w, h, bpp int) (int64, bool) {
	need, _, ok := b.plan(m, w, h, bpp, false)
	return need, ok
}

// ScoringBytes is WorkingSet without the two images: what the CLIs add to
// their own prediction of the decodes.
func (b *Backend) ScoringBytes(m zenmetrics.Metric, w, h, bpp int) (int64, bool) {
	need, ok := b.WorkingSet(m, w, h, bpp)
	return need - 2*int64(w)*int64(h)*int64(bpp), ok
}

// checkMemory refuses, before anything is allocated, a reference below the
// metric's minimum size and one whose working set would exceed the memory
// budget even in strips. The Go runtime cannot recover from failing to
// allocate (it aborts the process), so the prediction is the only guard:
// the budget turns what would be a crash into an error matching
// zenmetrics.ErrOutOfMemory for this reference alone. band > 0 says to
// score in strips of that many rows.
func (b *Backend) checkMemory(m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (band int, err error) {
	if ref == nil || ref.Width <= 0 || ref.Height <= 0 {
		return 0, nil // Prepare's own validation says what is wrong
	}
	if err := CheckSize(m, ref.Width, ref.Height); err != nil {
		return 0, err
	}
	budget := b.memBudget()
	if budget <= 0 {
		return 0, nil
	}
	need, band, ok := b.plan(m, ref.Width, ref.Height, ref.Format.BytesPerPixel(), opt.DistMap)
	if !ok || need <= budget {
		return band, nil // no CPU implementation (Prepare says so), or it fits
	}
	strips := "the CPU backend scores only Butteraugli and SSIMULACRA2 in strips"
	if m == zenmetrics.Butteraugli || m == zenmetrics.SSIMULACRA2 {
		strips = "even in strips"
	}
	return 0, &zenmetrics.OutOfMemoryError{Backend: "cpu", Requested: need, Free: budget,
		Detail: fmt.Sprintf("scoring %v on a %d×%d pair needs about %d MiB, more than the memory budget of %d MiB "+
			"(%s; raise --mem-budget if the machine has the memory)",
			m, ref.Width, ref.Height, need>>20, budget>>20, strips)}
}

// prepareStrips is the strip reference of Butteraugli or SSIMULACRA2 (see
// cpu/butteraugli's and cpu/ssim2's strip.go: the scores are the full
// image's bit for bit).
func (b *Backend) prepareStrips(m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options, band int) (zenmetrics.Reference, error) {
	if m == zenmetrics.SSIMULACRA2 {
		r, err := ssim2.PrepareStrips(ref, ssim2.Config{Threads: b.cfg.Threads}, band)
		if err != nil {
			return nil, err
		}
		return &ssim2StripRef{r: r}, nil
	}
	return butteraugli.PrepareStrips(ref, butteraugli.Config{Threads: b.cfg.Threads, IntensityTarget: opt.IntensityTarget,
		PNorm: opt.PNorm, DistMap: opt.DistMap}, band)
}
