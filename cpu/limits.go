package cpu

import (
	"fmt"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/cpu/iwssim"
	"github.com/zenmetrics-go/zenmetrics/cpu/ssim2"
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

// memBudget is the budget in force, ≤ 0 for none.
func (c Config) memBudget() int64 {
	if c.MemBudget == 0 {
		return sysmem.DefaultBudget()
	}
	return c.MemBudget
}

// WorkingSet is the memory scoring metric m on a w×h pair takes on this
// backend: Estimate (prepared reference plus one scoring) and the two
// decoded images of bpp bytes per pixel. ok is false where Estimate's is.
func (b *Backend) WorkingSet(m zenmetrics.Metric, w, h, bpp int) (int64, bool) {
	est, ok := b.Estimate(m, w, h, zenmetrics.ModeFull)
	if !ok {
		return 0, false
	}
	return est + 2*int64(w)*int64(h)*int64(bpp), true
}

// checkMemory refuses, before anything is allocated, a reference below the
// metric's minimum size and one whose working set would exceed the memory
// budget. The Go runtime cannot recover from failing to allocate (it
// aborts the process), so the prediction is the only guard: the budget
// turns what would be a crash into an error matching
// zenmetrics.ErrOutOfMemory for this reference alone.
func (b *Backend) checkMemory(m zenmetrics.Metric, ref *zenmetrics.Image) error {
	if ref == nil || ref.Width <= 0 || ref.Height <= 0 {
		return nil // Prepare's own validation says what is wrong
	}
	if err := CheckSize(m, ref.Width, ref.Height); err != nil {
		return err
	}
	budget := b.cfg.memBudget()
	if budget <= 0 {
		return nil
	}
	need, ok := b.WorkingSet(m, ref.Width, ref.Height, ref.Format.BytesPerPixel())
	if !ok || need <= budget {
		return nil // no CPU implementation (Prepare says so), or it fits
	}
	return &zenmetrics.OutOfMemoryError{Backend: "cpu", Requested: need, Free: budget,
		Detail: fmt.Sprintf("scoring %v on a %d×%d pair needs about %d MiB, more than the memory budget of %d MiB "+
			"(raise --mem-budget if the machine has the memory; the CPU backend does not score in strips)",
			m, ref.Width, ref.Height, need>>20, budget>>20)}
}
