package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/batch"
	"github.com/zenmetrics-go/zenmetrics/cpu"
	"github.com/zenmetrics-go/zenmetrics/imageio"
	"github.com/zenmetrics-go/zenmetrics/internal/sysmem"
)

// parseLimits checks --max-pixels and turns --mem-budget into bytes (""
// is the default, sysmem.DefaultBudget()).
//
// The default pixel limit, imageio.DefaultMaxPixels (2^30), is kept: it
// is above any camera or scanner image (the largest sensors give ~400 MP
// in pixel-shift modes) so it never refuses a real photograph, and it only
// has to stop absurd header claims; whether a large pair fits is the
// memory budget's question, answered from the same headers.
func parseLimits(opt *options, memBudget string) error {
	if opt.maxPixels <= 0 {
		return fmt.Errorf("--max-pixels must be positive, not %d", opt.maxPixels)
	}
	opt.memBudget = sysmem.DefaultBudget()
	if memBudget != "" {
		n, err := batch.ParseSize(memBudget)
		if err != nil || n <= 0 {
			return fmt.Errorf("--mem-budget: bad size %q", memBudget)
		}
		opt.memBudget = n
	}
	return nil
}

// cpuBudget is what the CPU backend offers the memory checks.
type cpuBudget interface {
	SetMemBudget(int64)
	WorkingSet(m zenmetrics.Metric, w, h, bpp int) (int64, bool)
}

// pairLimits checks a pair from its headers before anything is decoded.
type pairLimits struct {
	opt     *options
	imOpt   imageio.Options
	backend zenmetrics.Backend
	ref     imageio.Info
	ws      int64 // the CPU working set of the pair (images included), 0 for GPUs
	refOK   bool
	// oldLimit is the runtime memory limit before newPairLimits.
	oldLimit int64
}

func newPairLimits(opt *options, backend zenmetrics.Backend) *pairLimits {
	l := &pairLimits{opt: opt, imOpt: imageio.Options{MaxPixels: opt.maxPixels}, backend: backend}
	// The budget as the runtime's soft limit, so that the heap stays near
	// the live data the budget predicts (sysmem.SoftLimit); close restores
	// the previous limit (tests run the command in-process).
	l.oldLimit = debug.SetMemoryLimit(sysmem.SoftLimit(opt.memBudget))
	return l
}

// close restores the runtime memory limit newPairLimits replaced.
func (l *pairLimits) close() { debug.SetMemoryLimit(l.oldLimit) }

// checkRef reads the reference's header: a file that is not a readable
// image, one below the metric's minimum size, or a pair predicted to need
// more than --mem-budget (the reference and a distorted image of its size
// decoded, or the CPU backend's working set when it scores on the CPU) is
// refused before decoding. GPU backends check their own device memory,
// and the CPU they may fall back to checks its budget in Prepare.
func (l *pairLimits) checkRef() error {
	info, err := imageio.ProbeFile(l.opt.ref, l.imOpt)
	if err != nil {
		return err
	}
	if err := cpu.CheckSize(l.opt.metric, info.Width, info.Height); err != nil {
		return &zenmetrics.InputError{Path: l.opt.ref, Err: err}
	}
	if c, ok := l.backend.(cpuBudget); ok && l.backend.Name() == "cpu" {
		// The CPU backend checks the same budget in Prepare and picks
		// strips (Butteraugli, SSIMULACRA2) from it; its WorkingSet is that
		// plan's.
		c.SetMemBudget(l.opt.memBudget)
		if n, ok := c.WorkingSet(l.opt.metric, info.Width, info.Height, 4); ok {
			l.ws = n
		}
	}
	// Decoding (both images' decoder buffers) and scoring (the decoded
	// pair and the working set) peak one after the other.
	if need := max(2*info.DecodeBytes, l.ws); need > l.opt.memBudget {
		return l.oom(info, need)
	}
	l.ref, l.refOK = info, true
	return nil
}

func (l *pairLimits) oom(info imageio.Info, need int64) error {
	return &zenmetrics.OutOfMemoryError{Backend: "zmscore", Requested: need, Free: l.opt.memBudget,
		Detail: fmt.Sprintf("a %d×%d pair needs about %d MiB to decode and score %v, more than the memory budget of %d MiB "+
			"(raise --mem-budget if the machine has the memory)",
			info.Width, info.Height, need>>20, l.opt.metric, l.opt.memBudget>>20)}
}

// errRefFailed stands in for a DIST's decode when the reference already
// failed: nothing of it is read.
var errRefFailed = errors.New("not decoded: the reference failed")

// decodeDist reads a DIST's header, compares its size with the
// reference's (a 20000² DIST against a 64² reference is refused from its
// header, in microseconds) and predicts the memory before decoding it.
func (l *pairLimits) decodeDist(path string) (*zenmetrics.Image, error) {
	if !l.refOK {
		return nil, errRefFailed
	}
	info, err := imageio.ProbeFile(path, l.imOpt)
	if err != nil {
		return nil, err
	}
	if info.Width != l.ref.Width || info.Height != l.ref.Height {
		return nil, &zenmetrics.InputError{Path: path, Err: &zenmetrics.SizeMismatchError{
			RefWidth: l.ref.Width, RefHeight: l.ref.Height, DistWidth: info.Width, DistHeight: info.Height}}
	}
	if need := max(l.ref.DecodeBytes+info.DecodeBytes, l.ws); need > l.opt.memBudget {
		return nil, &zenmetrics.InputError{Path: path, Err: l.oom(info, need)}
	}
	return imageio.DecodeFileOptions(path, l.imOpt)
}

// anyDistFits reports whether at least one DIST's header is a readable
// image of the reference's size: when none is, the reference need not be
// decoded (a 20000² reference against small DISTs costs a few header
// reads, not a 1.2 GB decode).
func (l *pairLimits) anyDistFits() bool {
	for _, p := range l.opt.dists {
		info, err := imageio.ProbeFile(p, l.imOpt)
		if err == nil && info.Width == l.ref.Width && info.Height == l.ref.Height {
			return true
		}
	}
	return false
}
