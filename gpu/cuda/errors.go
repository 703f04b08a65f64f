package cuda

import (
	"errors"
	"fmt"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// Result is a CUresult, the status every driver API call returns.
type Result int32

// The CUresult values this package names or maps (cuda.h, CUDA 12/13).
const (
	Success               Result = 0
	ErrorInvalidValue     Result = 1
	ErrorOutOfMemory      Result = 2
	ErrorNotInitialized   Result = 3
	ErrorDeinitialized    Result = 4
	ErrorStubLibrary      Result = 34
	ErrorInsufficientDrv  Result = 35
	ErrorDeviceUnavail    Result = 46
	ErrorNoDevice         Result = 100
	ErrorInvalidDevice    Result = 101
	ErrorInvalidImage     Result = 200
	ErrorInvalidContext   Result = 201
	ErrorECCUncorrectable Result = 214
	ErrorNoBinaryForGPU   Result = 209
	ErrorInvalidPTX       Result = 218
	ErrorJITNotFound      Result = 221
	ErrorUnsupportedPTX   Result = 222
	ErrorInvalidSource    Result = 300
	ErrorInvalidHandle    Result = 400
	ErrorNotFound         Result = 500
	ErrorNotReady         Result = 600
	ErrorIllegalAddress   Result = 700
	ErrorLaunchResources  Result = 701
	ErrorLaunchTimeout    Result = 702
	ErrorHardwareStack    Result = 714
	ErrorIllegalInstr     Result = 715
	ErrorMisaligned       Result = 716
	ErrorInvalidAddrSpace Result = 717
	ErrorInvalidPC        Result = 718
	ErrorLaunchFailed     Result = 719
	ErrorNotPermitted     Result = 800
	ErrorNotSupported     Result = 801
	ErrorSystemNotReady   Result = 802
	ErrorDriverMismatch   Result = 803
	ErrorCompatNotSupp    Result = 804
	ErrorUnknown          Result = 999
)

// resultNames are the CUDA_ERROR_* names of the codes above, for messages
// when cuGetErrorName cannot be asked (the library failed to load, or the
// call itself failed).
var resultNames = map[Result]string{
	Success: "CUDA_SUCCESS", ErrorInvalidValue: "CUDA_ERROR_INVALID_VALUE",
	ErrorOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY", ErrorNotInitialized: "CUDA_ERROR_NOT_INITIALIZED",
	ErrorDeinitialized: "CUDA_ERROR_DEINITIALIZED", ErrorStubLibrary: "CUDA_ERROR_STUB_LIBRARY",
	ErrorInsufficientDrv: "CUDA_ERROR_INSUFFICIENT_DRIVER", ErrorDeviceUnavail: "CUDA_ERROR_DEVICE_UNAVAILABLE",
	ErrorNoDevice: "CUDA_ERROR_NO_DEVICE", ErrorInvalidDevice: "CUDA_ERROR_INVALID_DEVICE",
	ErrorInvalidImage: "CUDA_ERROR_INVALID_IMAGE", ErrorInvalidContext: "CUDA_ERROR_INVALID_CONTEXT",
	ErrorECCUncorrectable: "CUDA_ERROR_ECC_UNCORRECTABLE", ErrorNoBinaryForGPU: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	ErrorInvalidPTX: "CUDA_ERROR_INVALID_PTX", ErrorJITNotFound: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	ErrorUnsupportedPTX: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", ErrorInvalidSource: "CUDA_ERROR_INVALID_SOURCE",
	ErrorInvalidHandle: "CUDA_ERROR_INVALID_HANDLE", ErrorNotFound: "CUDA_ERROR_NOT_FOUND",
	ErrorNotReady: "CUDA_ERROR_NOT_READY", ErrorIllegalAddress: "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchResources: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", ErrorLaunchTimeout: "CUDA_ERROR_LAUNCH_TIMEOUT",
	ErrorHardwareStack: "CUDA_ERROR_HARDWARE_STACK_ERROR", ErrorIllegalInstr: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	ErrorMisaligned: "CUDA_ERROR_MISALIGNED_ADDRESS", ErrorInvalidAddrSpace: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	ErrorInvalidPC: "CUDA_ERROR_INVALID_PC", ErrorLaunchFailed: "CUDA_ERROR_LAUNCH_FAILED",
	ErrorNotPermitted: "CUDA_ERROR_NOT_PERMITTED", ErrorNotSupported: "CUDA_ERROR_NOT_SUPPORTED",
	ErrorSystemNotReady: "CUDA_ERROR_SYSTEM_NOT_READY", ErrorDriverMismatch: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	ErrorCompatNotSupp: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", ErrorUnknown: "CUDA_ERROR_UNKNOWN",
}

func (r Result) String() string {
	if s, ok := resultNames[r]; ok {
		return s
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// ErrCUDA is matched by every error a CUDA driver or NVRTC call returned.
var ErrCUDA = errors.New("cuda")

// Error is a failed driver API call: which call and its CUresult, with the
// driver's own description when it could be asked.
type Error struct {
	Func   string
	Code   Result
	Detail string // cuGetErrorString's text, if any
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: %v", e.Func, e.Code)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Is maps CUDA codes onto the library's typed errors, which is what the
// ladder and the orchestrator act on: out of memory moves a task to strips
// or another device; a sticky launch failure (the context is unusable
// afterwards, CUDA documents these as requiring a process restart for the
// context) is a lost device; a missing or unusable driver is unsupported,
// so `auto` carries on without CUDA.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrCUDA:
		return true
	case zenmetrics.ErrOutOfMemory:
		return e.Code == ErrorOutOfMemory
	case zenmetrics.ErrDeviceLost:
		return deviceLost(e.Code)
	case zenmetrics.ErrUnsupported:
		return unsupported(e.Code)
	}
	return false
}

// deviceLost lists the codes after which the context is unusable.
func deviceLost(r Result) bool {
	switch r {
	case ErrorIllegalAddress, ErrorLaunchTimeout, ErrorHardwareStack, ErrorIllegalInstr,
		ErrorMisaligned, ErrorInvalidAddrSpace, ErrorInvalidPC, ErrorLaunchFailed,
		ErrorECCUncorrectable, ErrorDeinitialized, ErrorDeviceUnavail, ErrorUnknown:
		return true
	}
	return false
}

// unsupported lists the codes that mean "no usable CUDA here" rather than
// a fault of this process.
func unsupported(r Result) bool {
	switch r {
	case ErrorNoDevice, ErrorInvalidDevice, ErrorStubLibrary, ErrorInsufficientDrv, ErrorNotSupported,
		ErrorSystemNotReady, ErrorDriverMismatch, ErrorCompatNotSupp, ErrorNoBinaryForGPU,
		ErrorJITNotFound, ErrorUnsupportedPTX, ErrorNotPermitted:
		return true
	}
	return false
}

// NVRTCResult is an nvrtcResult.
type NVRTCResult int32

// nvrtcResult values (nvrtc.h).
const (
	NVRTCSuccess            NVRTCResult = 0
	NVRTCOutOfMemory        NVRTCResult = 1
	NVRTCProgramCreation    NVRTCResult = 2
	NVRTCInvalidInput       NVRTCResult = 3
	NVRTCInvalidProgram     NVRTCResult = 4
	NVRTCInvalidOption      NVRTCResult = 5
	NVRTCCompilation        NVRTCResult = 6
	NVRTCBuiltinOpFailure   NVRTCResult = 7
	NVRTCNoExpressionsAfter NVRTCResult = 8
	NVRTCNoLoweredNames     NVRTCResult = 9
	NVRTCNameExpNotValid    NVRTCResult = 10
	NVRTCInternalError      NVRTCResult = 11
)

// NVRTCError is a failed NVRTC call; Log holds the compiler's log for
// compilation failures.
type NVRTCError struct {
	Func string
	Code NVRTCResult
	Log  string
}

func (e *NVRTCError) Error() string {
	s := fmt.Sprintf("nvrtc: %s: code %d", e.Func, int32(e.Code))
	if e.Log != "" {
		s += ":\n" + e.Log
	}
	return s
}

// Is matches ErrCUDA, and ErrOutOfMemory for NVRTC_ERROR_OUT_OF_MEMORY.
func (e *NVRTCError) Is(target error) bool {
	switch target {
	case ErrCUDA:
		return true
	case zenmetrics.ErrOutOfMemory:
		return e.Code == NVRTCOutOfMemory
	}
	return false
}

// LoadError says that a native library could not be loaded, and every
// place that was tried (Tried joins each attempt's error). It matches
// zenmetrics.ErrUnsupported: a machine without the NVIDIA driver is
// normal, not a failure.
type LoadError struct {
	Library string // "CUDA driver" or "NVRTC"
	Tried   error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("cuda: %s library not loadable: %v", e.Library, e.Tried)
}

// Is matches zenmetrics.ErrUnsupported.
func (e *LoadError) Is(target error) bool { return target == zenmetrics.ErrUnsupported }

// Unwrap gives the attempts.
func (e *LoadError) Unwrap() error { return e.Tried }
