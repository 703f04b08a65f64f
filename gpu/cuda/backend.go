package cuda

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// MetricImpl is one metric's host code on CUDA (gpu/cuda/<metric>),
// registered from its package's init and reached through Backend. The
// registry keeps this package free of metric code: it is the device
// runtime, the metrics sit on top of it (gpu/cuda/all imports them all).
type MetricImpl interface {
	// Estimate is the device bytes a prepared reference plus one scoring
	// of a w×h image use in mode (the worst case over pixel formats), and
	// whether the metric can do it at all.
	Estimate(b *Backend, w, h int, mode zenmetrics.Mode) (int64, bool)
	// Prepare prepares ref. Never return a typed nil.
	Prepare(ctx context.Context, b *Backend, ref *zenmetrics.Image, opt zenmetrics.Options) (zenmetrics.Reference, error)
}

var (
	regMu    sync.RWMutex
	registry = map[zenmetrics.Metric]MetricImpl{}
)

// Register adds a metric implementation; registering one twice panics (a
// programming error caught at init).
func Register(m zenmetrics.Metric, impl MetricImpl) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[m]; dup {
		panic(fmt.Sprintf("cuda: metric %v registered twice", m))
	}
	registry[m] = impl
}

// Metrics lists the registered metrics, in their numeric order.
func Metrics() []zenmetrics.Metric {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]zenmetrics.Metric, 0, len(registry))
	for m := range registry {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func impl(m zenmetrics.Metric) MetricImpl {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[m]
}

// Backend is the CUDA compute backend on one device. It implements
// zenmetrics.Backend; unregistered metrics return ErrUnsupported.
type Backend struct {
	dev   *Device
	own   bool
	limit atomic.Int64 // SetFreeLimit's cap on the free memory (0: none)
}

var _ zenmetrics.Backend = (*Backend)(nil)

// NewBackend opens device ordinal; Close closes it.
func NewBackend(ordinal int) (*Backend, error) {
	d, err := Open(ordinal)
	if err != nil {
		return nil, err
	}
	return &Backend{dev: d, own: true}, nil
}

// NewBackendOn makes a backend on a device the caller keeps owning.
func NewBackendOn(d *Device) *Backend { return &Backend{dev: d} }

// Device is the backend's device.
func (b *Backend) Device() *Device { return b.dev }

// Name is "cuda:<device name>".
func (b *Backend) Name() string { return b.dev.Name() }

// ConcurrentScores is how many scores a scheduler should run at once: 2.
// Each caller gets its own stream and staging buffers, so one's upload
// overlaps the other's kernels.
func (b *Backend) ConcurrentScores() int { return 2 }

// Estimate implements zenmetrics.Backend: the metric's own model, refused
// above the device's total memory.
func (b *Backend) Estimate(m zenmetrics.Metric, w, h int, mode zenmetrics.Mode) (int64, bool) {
	mi := impl(m)
	if mi == nil || (mode != zenmetrics.ModeFull && mode != zenmetrics.ModeStrip) {
		return 0, false
	}
	bytes, ok := mi.Estimate(b, w, h, mode)
	if !ok || uint64(bytes) > b.dev.info.TotalMem {
		return bytes, false
	}
	return bytes, true
}

// CheckMemory returns a *zenmetrics.OutOfMemoryError when need bytes
// exceed the device's free memory now, so a reference that cannot fit is
// refused before anything is allocated (a half-built reference would
// only be freed again).
func (b *Backend) CheckMemory(need int64) error {
	free, err := b.freeMemory()
	if err != nil {
		return err
	}
	if need > free {
		return &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: need, Free: free}
	}
	return nil
}

// CheckFits is the check every metric makes before it allocates a whole
// image's reference: an image past its kernels' int indexing (fits
// false) is an OutOfMemoryError for need bytes whose detail names the
// kernels ("a WxH image exceeds the <kernels> kernels' indexing"), as no
// device could run it; anything else is CheckMemory(need).
func (b *Backend) CheckFits(kernels string, w, h int, fits bool, need int64) error {
	if !fits {
		return &zenmetrics.OutOfMemoryError{Backend: b.Name(), Requested: need, Free: -1,
			Detail: fmt.Sprintf("a %dx%d image exceeds the %s kernels' indexing", w, h, kernels)}
	}
	return b.CheckMemory(need)
}

// Prepare implements zenmetrics.Backend through the metric's
// MetricImpl.Prepare.
func (b *Backend) Prepare(ctx context.Context, m zenmetrics.Metric, ref *zenmetrics.Image, opt zenmetrics.Options) (r zenmetrics.Reference, err error) {
	defer zenmetrics.Recover(&err)
	mi := impl(m)
	if mi == nil {
		return nil, fmt.Errorf("%w: metric %v on %s", zenmetrics.ErrUnsupported, m, b.Name())
	}
	if _, strips := mi.(StripImpl); opt.Mode != zenmetrics.ModeFull && (opt.Mode != zenmetrics.ModeStrip || !strips) {
		return nil, fmt.Errorf("%w: mode %v for %v on %s", zenmetrics.ErrUnsupported, opt.Mode, m, b.Name())
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return mi.Prepare(ctx, b, ref, opt)
}

// Close implements zenmetrics.Backend.
func (b *Backend) Close() error {
	if b.own {
		return b.dev.Close()
	}
	return nil
}
