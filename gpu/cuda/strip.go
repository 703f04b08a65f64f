package cuda

import (
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/internal/strips"
)

// Strips (zenmetrics.ModeStrip) on CUDA: the plumbing the metric packages
// share. The rows are cut by internal/strips, the planner gpu/webgpu
// uses too, so a strip of a CUDA metric is the same band with the same
// halo as its WebGPU twin; each metric states its spec (halo, alignment)
// and why in its own strip.go.

// StripImpl is a MetricImpl that prepares ModeStrip references itself.
// Backend.Prepare refuses ModeStrip (ErrUnsupported) for the others, and
// their Estimate declines it, so the ladder goes on to the CPU.
type StripImpl interface {
	MetricImpl
	// PreparesStrips is a marker: the metric's Prepare honours
	// Options.Mode == ModeStrip and Options.StripHeight.
	PreparesStrips()
}

// StripHeadroom is the share of the free device memory a strip plan may
// take: the orchestrator admits a GPU rung only when its estimate is at
// most 0.85 × the free memory (orchestrator's vramHeadroom), so a plan
// sized to all of it would be refused there; planning within the same
// share makes Estimate(ModeStrip) propose a plan the chooser accepts.
const StripHeadroom = 0.85

// StripBudget is the bytes a strip plan may use now: StripHeadroom of the
// free device memory plus the device's cached free buffers (ours to reuse,
// as CheckMemory counts them).
func (b *Backend) StripBudget() (int64, error) {
	free, err := b.freeMemory()
	if err != nil {
		return 0, err
	}
	return int64(StripHeadroom * float64(free)), nil
}

// freeMemory is the device's free memory now plus its cached free buffers
// (ours to reuse, or to release when an allocation runs short), at most
// the SetFreeLimit cap.
func (b *Backend) freeMemory() (int64, error) {
	f, _, err := b.dev.MemInfo()
	if err != nil {
		return 0, err
	}
	free := int64(f) + b.dev.Cached()
	if l := b.limit.Load(); l > 0 {
		free = min(free, l)
	}
	return free, nil
}

// SetFreeLimit caps the free memory the backend plans strips in and checks
// references against at n bytes (0: no cap), as if the device had no
// more: the ladder tests use it to make a whole image not fit, and a
// process sharing a device with others can use it to stay within a share.
func (b *Backend) SetFreeLimit(n int64) { b.limit.Store(max(n, 0)) }

// FreeLimit is the SetFreeLimit cap (0: none).
func (b *Backend) FreeLimit() int64 { return b.limit.Load() }

// StripUpload is a worker's overlapped upload for strips, which upload
// one crop after another into the same buffer: the copy of the next crop
// (on the worker's Copy stream) must not overwrite bytes that the kernels
// of the previous one (on Stream) have not read yet. It makes the Copy
// stream wait for everything queued on Stream so far (an event, no host
// wait), then uploads as Worker.UploadOverlapped does.
type StripUpload struct {
	wk *Worker
	ev *Event
}

// NewStripUpload makes the event of wk's strip uploads; Close frees it.
func NewStripUpload(wk *Worker) (*StripUpload, error) {
	ev, err := wk.Dev.NewEvent()
	if err != nil {
		return nil, err
	}
	return &StripUpload{wk: wk, ev: ev}, nil
}

// Upload queues src into dst after Stream's queued work, calling ready as
// the chunks become visible to Stream (Worker.UploadOverlapped).
func (u *StripUpload) Upload(dst *Buffer, src []byte, ready func(end int64) error) error {
	if err := u.ev.Record(u.wk.Stream); err != nil {
		return err
	}
	if err := u.wk.Copy.Wait(u.ev); err != nil {
		return err
	}
	return u.wk.UploadOverlapped(dst, src, ready)
}

// Close frees the event (after the caller has waited for the streams).
func (u *StripUpload) Close() {
	if u != nil {
		u.ev.Destroy()
	}
}

// StripsOf reports the strip count of a CUDA reference and whether its
// reference planes stay resident (ok false: not a strip reference), for
// tools and tests (gpu/webgpu's StripInfo).
func StripsOf(r zenmetrics.Reference) (n int, kept, ok bool) {
	s, ok := r.(interface{ Strips() (int, bool) })
	if !ok {
		return 0, false, false
	}
	n, kept = s.Strips()
	return n, kept, true
}

// NewStripScratch is Device.NewScratch for a strip slot: the worker and
// the buffers fill allocates, plus the worker's StripUpload, which every
// strip slot needs and whose failure must give back all the rest. On
// failure everything taken is given back (FreeStripScratch) and the
// first error returned.
func (d *Device) NewStripScratch(raw, out int64, fill func(alloc func(int64) *Buffer)) (*Worker, *StripUpload, error) {
	var bufs []*Buffer
	wk, err := d.NewScratch(raw, out, func(alloc func(int64) *Buffer) {
		fill(func(n int64) *Buffer {
			b := alloc(n)
			if b != nil {
				bufs = append(bufs, b)
			}
			return b
		})
	})
	if err != nil {
		return nil, nil, err
	}
	up, err := NewStripUpload(wk)
	if err != nil {
		d.FreeStripScratch(wk, nil, bufs...)
		return nil, nil, err
	}
	return wk, up, nil
}

// FreeStripScratch is Device.FreeScratch for a strip slot: it first waits
// for wk's copy stream (the strip upload's last copy may still be queued
// there, and FreeScratch waits only for the kernels' stream), then frees
// bufs, gives wk back and frees up's event. wk and up may be nil.
func (d *Device) FreeStripScratch(wk *Worker, up *StripUpload, bufs ...*Buffer) {
	if wk != nil {
		_ = wk.Copy.Sync()
	}
	d.FreeScratch(wk, bufs...)
	up.Close()
}

// PlanStrips is the start every strip prepare shares: plan (which honours
// a forced strip height) makes the plan within StripBudget now, and the
// plan's memory is checked against the free device memory before
// anything is allocated, so that a plan that no longer fits is an
// OutOfMemoryError (the ladder's cue to go on), not a failed allocation.
func PlanStrips[P any](b *Backend, plan func(budget int64) (P, error), memory func(P) int64) (P, error) {
	var zero P
	budget, err := b.StripBudget()
	if err != nil {
		return zero, err
	}
	p, err := plan(budget)
	if err != nil {
		return zero, err
	}
	if err := b.CheckMemory(memory(p)); err != nil {
		return zero, err
	}
	return p, nil
}

// EstimateMode is the mode switch of a StripImpl's Estimate: full for
// ModeFull, EstimateStrips(strips) for ModeStrip, and not ok for any
// other mode (a strip pair: the ladder goes on). b may be nil (no device)
// for ModeFull.
func (b *Backend) EstimateMode(mode zenmetrics.Mode, full func() (int64, bool), strips func(budget int64) (int64, bool)) (int64, bool) {
	switch mode {
	case zenmetrics.ModeFull:
		return full()
	case zenmetrics.ModeStrip:
		return b.EstimateStrips(strips)
	}
	return 0, false
}

// EstimateStrips is the ModeStrip half of a StripImpl's Estimate: est's
// memory for the plan it would make within StripBudget now. Not ok
// without a device to plan in (b nil) or when the budget cannot be read:
// the ladder then goes on to the CPU.
func (b *Backend) EstimateStrips(est func(budget int64) (int64, bool)) (int64, bool) {
	if b == nil {
		return 0, false
	}
	budget, err := b.StripBudget()
	if err != nil {
		return 0, false
	}
	return est(budget)
}

// Prepared is r as a zenmetrics.Reference, or a nil interface with err: a
// metric's Prepare returns its concrete reference through it so that a
// failure is never a typed nil inside the interface.
func Prepared[R zenmetrics.Reference](r R, err error) (zenmetrics.Reference, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ChooseStrips is strips.Choose for a CUDA metric's planner: the bands and
// residency the shared policy picks for a w×h image, fitsIn telling
// whether a candidate's plan fits budget. None fitting is an
// OutOfMemoryError naming what (the metric) and the size, with budget as
// the free memory: the ladder's cue to go on. With a forced strip height
// (force > 0) a non-nil forceKeep (the package's test hook) overrides the
// residency, so that the tests run both on one device.
func ChooseStrips(what string, w, h int, spec strips.Spec, force int, budget int64, forceKeep *bool, fitsIn func(ss []strips.Strip, keep bool) bool) ([]strips.Strip, bool, error) {
	ss, keep, ok, err := strips.Choose(h, spec, force, fitsIn)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, &zenmetrics.OutOfMemoryError{Backend: "cuda", Requested: -1, Free: budget,
			Detail: fmt.Sprintf("no %s strip plan of a %dx%d image fits", what, w, h)}
	}
	if force > 0 && forceKeep != nil {
		keep = *forceKeep
	}
	return ss, keep, nil
}
