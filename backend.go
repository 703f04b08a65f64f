package zenmetrics

import (
	"context"
	"fmt"
	"runtime/debug"
)

// Score is the result of comparing one distorted image with its reference.
type Score struct {
	Metric Metric
	// Value is the metric's headline number, as the reference tool prints
	// it: SSIMULACRA2 score, Butteraugli max distance, DSSIM value, ...
	Value float64
	// Extras holds further numbers some metrics report, keyed by a short
	// name ("pnorm3" for Butteraugli's 3-norm, "pnorm" for another p).
	Extras map[string]float64
	// DistMap is the per-pixel distance map, only when Options.DistMap was
	// set and the metric has one.
	DistMap *FloatPlane
}

// FloatPlane is a single-channel float image (e.g. a distance map).
type FloatPlane struct {
	Width, Height int
	Pix           []float32 // row-major, Width × Height
}

// Mode is how a backend lays an image out in memory.
type Mode uint8

const (
	// ModeFull processes the whole image at once.
	ModeFull Mode = iota
	// ModeStrip processes horizontal bands with a halo, for images whose
	// full working set does not fit.
	ModeStrip
	// ModeStripPair also splits the reference/distorted pair (CVVDP).
	ModeStripPair
)

func (m Mode) String() string {
	switch m {
	case ModeFull:
		return "full"
	case ModeStrip:
		return "strip"
	case ModeStripPair:
		return "strip_pair"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// Options tune a metric. The zero value means the reference tool's defaults.
type Options struct {
	// IntensityTarget is the display peak luminance in nits (Butteraugli);
	// 0 means the reference default of 80.
	IntensityTarget float64
	// PNorm is an extra p-norm to report for Butteraugli, besides the
	// 3-norm that is always reported; 0 means none.
	PNorm float64
	// DistMap asks for the per-pixel distance map in Score.DistMap.
	DistMap bool
	// Display names the display model of ColorVideoVDP (pycvvdp's
	// display_models.json names); "" means its default, standard_4k.
	Display string
	// Mode asks for a memory layout (strips); backends may ignore it for
	// metrics where it makes no difference.
	Mode Mode
	// StripHeight forces a strip height in rows for ModeStrip (0: the
	// backend chooses from its memory model). Mostly for tests.
	StripHeight int
}

// Backend is one compute path (CPU reference, fast CPU, a WebGPU adapter, a
// CUDA device). Every backend implements the same four steps so the
// orchestrator can treat them alike and cached references come for free:
// Estimate, Prepare a reference, Score distorted images against it, Release.
type Backend interface {
	// Name identifies the backend in results and logs, e.g. "cpu",
	// "webgpu:NVIDIA H200".
	Name() string
	// Estimate returns the bytes of backend memory (VRAM for a GPU, heap for
	// a CPU) a prepared reference plus one scoring of a w×h image would use
	// in the given mode, and whether the backend can do it at all.
	Estimate(m Metric, w, h int, mode Mode) (bytes int64, ok bool)
	// Prepare does the reference-only half of the metric once and returns
	// a handle that scores any number of distorted images against it.
	Prepare(ctx context.Context, m Metric, ref *Image, opt Options) (Reference, error)
	// Close frees everything the backend holds. References prepared by it
	// must not be used afterwards.
	Close() error
}

// Reference is a prepared reference image on some backend.
type Reference interface {
	// Score compares dist with the reference. It is safe to call from
	// several goroutines unless the backend documents otherwise.
	Score(ctx context.Context, dist *Image) (Score, error)
	// Release frees the prepared state. Score after Release returns
	// ErrReleased. Release is idempotent.
	Release()
}

// ScoreOnce prepares ref, scores dist against it and releases it.
func ScoreOnce(ctx context.Context, b Backend, m Metric, ref, dist *Image, opt Options) (Score, error) {
	if err := CheckSameSize(ref, dist); err != nil {
		return Score{}, err
	}
	r, err := b.Prepare(ctx, m, ref, opt)
	if err != nil {
		return Score{}, err
	}
	defer r.Release()
	return r.Score(ctx, dist)
}

// Recover turns a panic into a *PanicError stored in *err. Use it as
// `defer zenmetrics.Recover(&err)` at every public entry point that runs
// metric code, so that no panic escapes the library.
func Recover(err *error) {
	if v := recover(); v != nil {
		*err = &PanicError{Value: v, Stack: debug.Stack()}
	}
}
