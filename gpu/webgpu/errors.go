package webgpu

import (
	"errors"
	"fmt"
	"strings"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/wgpu"
)

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("webgpu: device closed")

// ValidationError is a WebGPU validation error: Dawn's own message, and for
// shader modules the compiler's messages (line:column: text).
type ValidationError struct {
	Op          string   // what was being done, e.g. `compile "saxpy"`
	Message     string   // Dawn's message
	Compilation []string // shader compilation messages, if any
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("webgpu: validation error")
	if e.Op != "" {
		b.WriteString(" in " + e.Op)
	}
	if e.Message != "" {
		b.WriteString(": " + strings.TrimSpace(e.Message))
	}
	for _, m := range e.Compilation {
		if !strings.Contains(e.Message, m) {
			b.WriteString("\n  " + m)
		}
	}
	return b.String()
}

// InternalError is a WebGPU internal (or unknown-type) error.
type InternalError struct {
	Op      string
	Type    string
	Message string
}

func (e *InternalError) Error() string {
	s := "webgpu: " + strings.ToLower(e.Type) + " error"
	if e.Op != "" {
		s += " in " + e.Op
	}
	return s + ": " + strings.TrimSpace(e.Message)
}

// DeviceLostError says the device was lost. It matches
// zenmetrics.ErrDeviceLost with errors.Is.
type DeviceLostError struct {
	Device  string
	Reason  string // Dawn's reason: Unknown, Destroyed, CallbackCancelled, FailedCreation
	Message string // Dawn's message
}

func (e *DeviceLostError) Error() string {
	return fmt.Sprintf("webgpu: device %q lost (%s): %s", e.Device, e.Reason, strings.TrimSpace(e.Message))
}

// Is makes errors.Is(err, zenmetrics.ErrDeviceLost) true.
func (e *DeviceLostError) Is(target error) bool { return target == zenmetrics.ErrDeviceLost }

// NoAdapterError says no usable adapter was found. It matches
// zenmetrics.ErrUnsupported.
type NoAdapterError struct {
	Refused []string // adapters seen and refused, with the reason
	Detail  string
}

func (e *NoAdapterError) Error() string {
	s := "webgpu: no usable GPU adapter"
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if len(e.Refused) > 0 {
		s += "; refused: " + strings.Join(e.Refused, "; ")
	}
	return s
}

// Is makes errors.Is(err, zenmetrics.ErrUnsupported) true.
func (e *NoAdapterError) Is(target error) bool { return target == zenmetrics.ErrUnsupported }

// scopeError turns a popped error scope into a typed error (nil for NoError).
func (d *Device) scopeError(op string, typ wgpu.ErrorType, msg string, requested int64) error {
	switch typ {
	case wgpu.ErrorTypeNoError:
		return nil
	case wgpu.ErrorTypeValidation:
		return &ValidationError{Op: op, Message: msg}
	case wgpu.ErrorTypeOutOfMemory:
		return &zenmetrics.OutOfMemoryError{Backend: d.Name(), Requested: requested, Free: -1, Detail: strings.TrimSpace(msg)}
	default:
		return &InternalError{Op: op, Type: typ.String(), Message: msg}
	}
}
