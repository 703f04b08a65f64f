package wgpu

import "sync"

// One native trampoline per C callback type (purego callbacks are never
// freed and limited in number). Each call carries an id in userdata1 that
// routes it to the Go func registered for that one call.
//
// Trampolines return a dummy uintptr: Windows' callback mechanism
// (syscall.NewCallback under purego) requires exactly one uintptr result;
// for these void C callbacks the value is ignored everywhere.
//
// Trampolines may run on any thread (AllowSpontaneous callbacks arrive on
// Dawn's threads), so the registry is mutex-protected and never holds the
// lock while calling user code.

var (
	cbRequestAdapter  uintptr
	cbRequestDevice   uintptr
	cbBufferMap       uintptr
	cbQueueWorkDone   uintptr
	cbPopErrorScope   uintptr
	cbCompilationInfo uintptr
	cbDeviceLost      uintptr
	cbUncapturedError uintptr
	cbCreateCompute   uintptr
)

type cbEntry struct {
	fn      any
	oneShot bool
}

var (
	cbMu   sync.Mutex
	cbNext uintptr
	cbMap  = map[uintptr]cbEntry{}
)

func register(fn any, oneShot bool) uintptr {
	cbMu.Lock()
	defer cbMu.Unlock()
	cbNext++
	cbMap[cbNext] = cbEntry{fn: fn, oneShot: oneShot}
	return cbNext
}

func lookup(id uintptr) any {
	cbMu.Lock()
	defer cbMu.Unlock()
	e, ok := cbMap[id]
	if !ok {
		return nil
	}
	if e.oneShot {
		delete(cbMap, id)
	}
	return e.fn
}

// Unregister forgets a persistent callback (device lost, uncaptured error)
// once its device is gone.
func Unregister(id uintptr) {
	cbMu.Lock()
	delete(cbMap, id)
	cbMu.Unlock()
}

// PendingCallbacks is the number of registered Go callbacks not yet called
// (for leak tests).
func PendingCallbacks() int {
	cbMu.Lock()
	defer cbMu.Unlock()
	return len(cbMap)
}

func callbackInfo(mode CallbackMode, cb uintptr, id uintptr) CallbackInfo {
	return CallbackInfo{Mode: mode, Callback: cb, Userdata1: id}
}

// DeviceLostCallbackInfo builds the device-lost callback for a
// DeviceDescriptor. fn may run on any thread when mode is AllowSpontaneous.
// The returned id can be passed to Unregister if the callback never fires.
func DeviceLostCallbackInfo(mode CallbackMode, fn func(DeviceLostReason, string)) (CallbackInfo, uintptr) {
	id := register(fn, true)
	return callbackInfo(mode, cbDeviceLost, id), id
}

// UncapturedErrorCallbackInfo builds the uncaptured-error callback for a
// DeviceDescriptor. fn may run on any thread. Unregister(id) after the
// device is released.
func NewUncapturedErrorCallbackInfo(fn func(ErrorType, string)) (UncapturedErrorCallbackInfo, uintptr) {
	id := register(fn, false)
	return UncapturedErrorCallbackInfo{Callback: cbUncapturedError, Userdata1: id}, id
}

var initCallbacksOnce sync.Once

func initCallbacks() {
	initCallbacksOnce.Do(func() {
		cbRequestAdapter = newCallback(func(status uint32, adapter uintptr, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(RequestAdapterStatus, Adapter, string)); ok {
				fn(RequestAdapterStatus(status), Adapter(adapter), svString(msg))
			}
			return 0
		})
		cbRequestDevice = newCallback(func(status uint32, device uintptr, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(RequestDeviceStatus, Device, string)); ok {
				fn(RequestDeviceStatus(status), Device(device), svString(msg))
			}
			return 0
		})
		cbBufferMap = newCallback(func(status uint32, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(MapAsyncStatus, string)); ok {
				fn(MapAsyncStatus(status), svString(msg))
			}
			return 0
		})
		cbQueueWorkDone = newCallback(func(status uint32, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(QueueWorkDoneStatus, string)); ok {
				fn(QueueWorkDoneStatus(status), svString(msg))
			}
			return 0
		})
		cbPopErrorScope = newCallback(func(status, typ uint32, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(PopErrorScopeStatus, ErrorType, string)); ok {
				fn(PopErrorScopeStatus(status), ErrorType(typ), svString(msg))
			}
			return 0
		})
		cbCompilationInfo = newCallback(func(status uint32, info *CompilationInfo, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(CompilationInfoRequestStatus, *CompilationInfo)); ok {
				fn(CompilationInfoRequestStatus(status), info)
			}
			return 0
		})
		cbDeviceLost = newCallback(func(device uintptr, reason uint32, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(DeviceLostReason, string)); ok {
				fn(DeviceLostReason(reason), svString(msg))
			}
			return 0
		})
		cbCreateCompute = newCallback(func(status uint32, pipeline uintptr, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(CreatePipelineAsyncStatus, ComputePipeline, string)); ok {
				fn(CreatePipelineAsyncStatus(status), ComputePipeline(pipeline), svString(msg))
			}
			return 0
		})
		cbUncapturedError = newCallback(func(device uintptr, typ uint32, msg cbString, ud1, ud2 uintptr) uintptr {
			if fn, ok := lookup(ud1).(func(ErrorType, string)); ok {
				fn(ErrorType(typ), svString(msg))
			}
			return 0
		})
	})
}
