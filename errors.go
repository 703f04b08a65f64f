package zenmetrics

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the library returns wraps at most a few of
// these so callers can branch with errors.Is without parsing messages; the
// orchestrator's fallback ladder needs nothing more than ErrOutOfMemory.
var (
	// ErrBadInput: the input cannot be used (corrupt or truncated file,
	// unknown format, image too small for the metric, too many pixels).
	ErrBadInput = errors.New("zenmetrics: bad input")
	// ErrSizeMismatch: reference and distorted images differ in size.
	ErrSizeMismatch = errors.New("zenmetrics: image sizes differ")
	// ErrUnsupported: the metric, option, pixel format or backend is not
	// available here (not implemented, or the runtime is missing).
	ErrUnsupported = errors.New("zenmetrics: unsupported")
	// ErrOutOfMemory: a backend could not get the memory it needed. The
	// concrete error is usually an *OutOfMemoryError with the numbers.
	ErrOutOfMemory = errors.New("zenmetrics: out of memory")
	// ErrDeviceLost: the GPU device was lost (driver reset, removal); the
	// backend must be re-created.
	ErrDeviceLost = errors.New("zenmetrics: device lost")
	// ErrReleased: a Reference was used after Release.
	ErrReleased = errors.New("zenmetrics: reference released")
)

// SizeMismatchError reports the two sizes that differ. It matches
// ErrSizeMismatch with errors.Is.
type SizeMismatchError struct {
	RefWidth, RefHeight   int
	DistWidth, DistHeight int
}

func (e *SizeMismatchError) Error() string {
	return fmt.Sprintf("zenmetrics: image sizes differ: reference is %dx%d, distorted is %dx%d",
		e.RefWidth, e.RefHeight, e.DistWidth, e.DistHeight)
}

// Is makes errors.Is(err, ErrSizeMismatch) true.
func (e *SizeMismatchError) Is(target error) bool { return target == ErrSizeMismatch }

// CheckSameSize returns a *SizeMismatchError when ref and dist differ in size.
func CheckSameSize(ref, dist *Image) error {
	if ref.Width != dist.Width || ref.Height != dist.Height {
		return &SizeMismatchError{ref.Width, ref.Height, dist.Width, dist.Height}
	}
	return nil
}

// TooSmallError says an image is below the smallest size a metric accepts.
// It matches ErrBadInput.
type TooSmallError struct {
	Metric        Metric
	Width, Height int
	MinWidth      int
	MinHeight     int
}

func (e *TooSmallError) Error() string {
	return fmt.Sprintf("zenmetrics: %dx%d image is too small for %s (needs at least %dx%d)",
		e.Width, e.Height, e.Metric, e.MinWidth, e.MinHeight)
}

// Is makes errors.Is(err, ErrBadInput) true.
func (e *TooSmallError) Is(target error) bool { return target == ErrBadInput }

// OutOfMemoryError carries what was asked and what was free when an
// allocation failed, for logs and for the capability profile. Free is -1
// when unknown. It matches ErrOutOfMemory.
type OutOfMemoryError struct {
	Backend   string // e.g. "webgpu:NVIDIA H200"
	Requested int64  // bytes
	Free      int64  // bytes, -1 if unknown
	Detail    string // the runtime's own message, if any
}

func (e *OutOfMemoryError) Error() string {
	s := fmt.Sprintf("zenmetrics: out of memory on %s: requested %d bytes", e.Backend, e.Requested)
	if e.Free >= 0 {
		s += fmt.Sprintf(", %d free", e.Free)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is makes errors.Is(err, ErrOutOfMemory) true.
func (e *OutOfMemoryError) Is(target error) bool { return target == ErrOutOfMemory }

// InputError names the file (or task input) an error came from. It wraps
// the underlying error, so errors.Is still sees ErrBadInput and friends.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// PanicError is what a recovered panic inside a metric becomes, so that one
// bad task fails alone instead of taking the process down.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("zenmetrics: internal panic: %v", e.Value) }
