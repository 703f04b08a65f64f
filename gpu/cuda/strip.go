package cuda

import (
	zenmetrics "github.com/zenmetrics-go/zenmetrics"
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
