package wgpu

import (
	"runtime"
	"unsafe"
)

// Thin typed wrappers. Descriptors are passed by pointer and must stay
// reachable until the call returns (the wrappers KeepAlive them). Callbacks
// are Go funcs routed through one native trampoline per callback type (see
// callbacks.go); with CallbackModeWaitAnyOnly they run inside
// Instance.WaitAny on the calling thread.

// ---- global

// CreateInstance is wgpuCreateInstance.
func CreateInstance(desc *InstanceDescriptor) Instance {
	i := fnCreateInstance(desc)
	runtime.KeepAlive(desc)
	return i
}

// GetInstanceCapabilities is wgpuGetInstanceCapabilities.
func GetInstanceCapabilities(caps *InstanceCapabilities) Status {
	return fnGetInstanceCapabilities(caps)
}

// ---- Instance

// RequestAdapter is wgpuInstanceRequestAdapter.
func (i Instance) RequestAdapter(opts *RequestAdapterOptions, mode CallbackMode, fn func(RequestAdapterStatus, Adapter, string)) Future {
	f := fnInstanceRequestAdapter(i, opts, callbackInfo(mode, cbRequestAdapter, register(fn, true)))
	runtime.KeepAlive(opts)
	return f
}

// WaitAny is wgpuInstanceWaitAny. timeoutNS 0 polls; a non-zero timeout needs
// an instance created with TimedWaitAnyEnable.
func (i Instance) WaitAny(infos []FutureWaitInfo, timeoutNS uint64) WaitStatus {
	if len(infos) == 0 {
		return WaitStatusSuccess
	}
	return fnInstanceWaitAny(i, uintptr(len(infos)), &infos[0], timeoutNS)
}

// ProcessEvents is wgpuInstanceProcessEvents.
func (i Instance) ProcessEvents() { fnInstanceProcessEvents(i) }

// Release is wgpuInstanceRelease.
func (i Instance) Release() { fnInstanceRelease(i) }

// ---- Adapter

// GetInfo is wgpuAdapterGetInfo; free with info.FreeMembers().
func (a Adapter) GetInfo(info *AdapterInfo) Status { return fnAdapterGetInfo(a, info) }

// FreeMembers is wgpuAdapterInfoFreeMembers.
func (info *AdapterInfo) FreeMembers() { fnAdapterInfoFreeMembers(*info) }

// FreeMembers is wgpuAdapterPropertiesMemoryHeapsFreeMembers.
func (p *AdapterPropertiesMemoryHeaps) FreeMembers() { fnAdapterHeapsFreeMembers(*p) }

// GetLimits is wgpuAdapterGetLimits.
func (a Adapter) GetLimits(l *Limits) Status { return fnAdapterGetLimits(a, l) }

// GetFeatures is wgpuAdapterGetFeatures; free with f.FreeMembers().
func (a Adapter) GetFeatures(f *SupportedFeatures) { fnAdapterGetFeatures(a, f) }

// HasFeature is wgpuAdapterHasFeature.
func (a Adapter) HasFeature(f FeatureName) bool { return fnAdapterHasFeature(a, f) != 0 }

// FreeMembers is wgpuSupportedFeaturesFreeMembers.
func (f *SupportedFeatures) FreeMembers() { fnSupportedFeaturesFree(*f) }

// RequestDevice is wgpuAdapterRequestDevice.
func (a Adapter) RequestDevice(desc *DeviceDescriptor, mode CallbackMode, fn func(RequestDeviceStatus, Device, string)) Future {
	f := fnAdapterRequestDevice(a, desc, callbackInfo(mode, cbRequestDevice, register(fn, true)))
	runtime.KeepAlive(desc)
	return f
}

// Release is wgpuAdapterRelease.
func (a Adapter) Release() { fnAdapterRelease(a) }

// ---- Device

// GetQueue is wgpuDeviceGetQueue.
func (d Device) GetQueue() Queue { return fnDeviceGetQueue(d) }

// GetLimits is wgpuDeviceGetLimits.
func (d Device) GetLimits(l *Limits) Status { return fnDeviceGetLimits(d, l) }

// GetFeatures is wgpuDeviceGetFeatures; free with f.FreeMembers().
func (d Device) GetFeatures(f *SupportedFeatures) { fnDeviceGetFeatures(d, f) }

// HasFeature is wgpuDeviceHasFeature.
func (d Device) HasFeature(f FeatureName) bool { return fnDeviceHasFeature(d, f) != 0 }

// CreateBuffer is wgpuDeviceCreateBuffer.
func (d Device) CreateBuffer(desc *BufferDescriptor) Buffer {
	b := fnDeviceCreateBuffer(d, desc)
	runtime.KeepAlive(desc)
	return b
}

// CreateShaderModuleWGSL creates a shader module from WGSL source
// (wgpuDeviceCreateShaderModule with a chained WGPUShaderSourceWGSL).
func (d Device) CreateShaderModuleWGSL(label, code string) ShaderModule {
	src := &ShaderSourceWGSL{Chain: ChainedStruct{SType: STypeShaderSourceWGSL}, Code: MakeStringView(code)}
	desc := &ShaderModuleDescriptor{NextInChain: &src.Chain, Label: MakeStringView(label)}
	m := fnDeviceCreateShaderModule(d, desc)
	runtime.KeepAlive(desc)
	runtime.KeepAlive(src)
	return m
}

// CreateComputePipeline is wgpuDeviceCreateComputePipeline.
func (d Device) CreateComputePipeline(desc *ComputePipelineDescriptor) ComputePipeline {
	p := fnDeviceCreateComputePipe(d, desc)
	runtime.KeepAlive(desc)
	return p
}

// CreateComputePipelineAsync is wgpuDeviceCreateComputePipelineAsync: Dawn
// compiles the pipeline on its worker threads, so several started before
// the first wait compile side by side (the driver's compile of a large
// kernel takes hundreds of ms on NVIDIA). desc and what it points to must
// stay alive until the future completes; fn gets the pipeline (0 unless
// status is Success) and the error message.
func (d Device) CreateComputePipelineAsync(desc *ComputePipelineDescriptor, mode CallbackMode, fn func(CreatePipelineAsyncStatus, ComputePipeline, string)) Future {
	f := fnDeviceCreateComputeAsync(d, desc, callbackInfo(mode, cbCreateCompute, register(fn, true)))
	runtime.KeepAlive(desc)
	return f
}

// CreateBindGroupLayout is wgpuDeviceCreateBindGroupLayout.
func (d Device) CreateBindGroupLayout(desc *BindGroupLayoutDescriptor) BindGroupLayout {
	l := fnDeviceCreateBindGroupLay(d, desc)
	runtime.KeepAlive(desc)
	return l
}

// CreatePipelineLayout is wgpuDeviceCreatePipelineLayout.
func (d Device) CreatePipelineLayout(desc *PipelineLayoutDescriptor) PipelineLayout {
	l := fnDeviceCreatePipelineLay(d, desc)
	runtime.KeepAlive(desc)
	return l
}

// CreateBindGroup is wgpuDeviceCreateBindGroup.
func (d Device) CreateBindGroup(desc *BindGroupDescriptor) BindGroup {
	g := fnDeviceCreateBindGroup(d, desc)
	runtime.KeepAlive(desc)
	return g
}

// CreateCommandEncoder is wgpuDeviceCreateCommandEncoder (desc may be nil).
func (d Device) CreateCommandEncoder(desc *CommandEncoderDescriptor) CommandEncoder {
	e := fnDeviceCreateCommandEncoder(d, desc)
	runtime.KeepAlive(desc)
	return e
}

// CreateQuerySet is wgpuDeviceCreateQuerySet.
func (d Device) CreateQuerySet(desc *QuerySetDescriptor) QuerySet {
	q := fnDeviceCreateQuerySet(d, desc)
	runtime.KeepAlive(desc)
	return q
}

// PushErrorScope is wgpuDevicePushErrorScope. Scopes are per OS thread.
func (d Device) PushErrorScope(f ErrorFilter) { fnDevicePushErrorScope(d, f) }

// PopErrorScope is wgpuDevicePopErrorScope.
func (d Device) PopErrorScope(mode CallbackMode, fn func(PopErrorScopeStatus, ErrorType, string)) Future {
	return fnDevicePopErrorScope(d, callbackInfo(mode, cbPopErrorScope, register(fn, true)))
}

// Destroy is wgpuDeviceDestroy.
func (d Device) Destroy() { fnDeviceDestroy(d) }

// Release is wgpuDeviceRelease.
func (d Device) Release() { fnDeviceRelease(d) }

// ---- ShaderModule

// GetCompilationInfo is wgpuShaderModuleGetCompilationInfo. info is only
// valid during fn.
func (m ShaderModule) GetCompilationInfo(mode CallbackMode, fn func(CompilationInfoRequestStatus, *CompilationInfo)) Future {
	return fnShaderModuleGetCompInfo(m, callbackInfo(mode, cbCompilationInfo, register(fn, true)))
}

// Release is wgpuShaderModuleRelease.
func (m ShaderModule) Release() { fnShaderModuleRelease(m) }

// ---- pipelines, layouts, bind groups

// GetBindGroupLayout is wgpuComputePipelineGetBindGroupLayout.
func (p ComputePipeline) GetBindGroupLayout(group uint32) BindGroupLayout {
	return fnComputePipelineGetBGL(p, group)
}

// Release is wgpuComputePipelineRelease.
func (p ComputePipeline) Release() { fnComputePipelineRelease(p) }

// Release is wgpuBindGroupLayoutRelease.
func (l BindGroupLayout) Release() { fnBindGroupLayoutRelease(l) }

// Release is wgpuPipelineLayoutRelease.
func (l PipelineLayout) Release() { fnPipelineLayoutRelease(l) }

// Release is wgpuBindGroupRelease.
func (g BindGroup) Release() { fnBindGroupRelease(g) }

// ---- CommandEncoder

// BeginComputePass is wgpuCommandEncoderBeginComputePass (desc may be nil).
func (e CommandEncoder) BeginComputePass(desc *ComputePassDescriptor) ComputePassEncoder {
	p := fnEncoderBeginComputePass(e, desc)
	runtime.KeepAlive(desc)
	return p
}

// CopyBufferToBuffer is wgpuCommandEncoderCopyBufferToBuffer.
func (e CommandEncoder) CopyBufferToBuffer(src Buffer, srcOff uint64, dst Buffer, dstOff, size uint64) {
	fnEncoderCopyBufferToBuffer(e, src, srcOff, dst, dstOff, size)
}

// ClearBuffer is wgpuCommandEncoderClearBuffer.
func (e CommandEncoder) ClearBuffer(b Buffer, off, size uint64) {
	fnEncoderClearBuffer(e, b, off, size)
}

// ResolveQuerySet is wgpuCommandEncoderResolveQuerySet.
func (e CommandEncoder) ResolveQuerySet(q QuerySet, first, count uint32, dst Buffer, dstOff uint64) {
	fnEncoderResolveQuerySet(e, q, first, count, dst, dstOff)
}

// Finish is wgpuCommandEncoderFinish (desc may be nil).
func (e CommandEncoder) Finish(desc *CommandBufferDescriptor) CommandBuffer {
	c := fnEncoderFinish(e, desc)
	runtime.KeepAlive(desc)
	return c
}

// Release is wgpuCommandEncoderRelease.
func (e CommandEncoder) Release() { fnEncoderRelease(e) }

// Release is wgpuCommandBufferRelease.
func (c CommandBuffer) Release() { fnCommandBufferRelease(c) }

// ---- ComputePassEncoder

// SetPipeline is wgpuComputePassEncoderSetPipeline.
func (p ComputePassEncoder) SetPipeline(pipe ComputePipeline) { fnPassSetPipeline(p, pipe) }

// SetBindGroup is wgpuComputePassEncoderSetBindGroup.
func (p ComputePassEncoder) SetBindGroup(group uint32, bg BindGroup, dynamicOffsets []uint32) {
	var ptr *uint32
	if len(dynamicOffsets) > 0 {
		ptr = &dynamicOffsets[0]
	}
	fnPassSetBindGroup(p, group, bg, uintptr(len(dynamicOffsets)), ptr)
	runtime.KeepAlive(dynamicOffsets)
}

// DispatchWorkgroups is wgpuComputePassEncoderDispatchWorkgroups.
func (p ComputePassEncoder) DispatchWorkgroups(x, y, z uint32) { fnPassDispatch(p, x, y, z) }

// DispatchWorkgroupsIndirect is wgpuComputePassEncoderDispatchWorkgroupsIndirect.
func (p ComputePassEncoder) DispatchWorkgroupsIndirect(b Buffer, off uint64) {
	fnPassDispatchIndirect(p, b, off)
}

// End is wgpuComputePassEncoderEnd.
func (p ComputePassEncoder) End() { fnPassEnd(p) }

// Release is wgpuComputePassEncoderRelease.
func (p ComputePassEncoder) Release() { fnPassRelease(p) }

// ---- Queue

// Submit is wgpuQueueSubmit.
func (q Queue) Submit(cmds []CommandBuffer) {
	if len(cmds) == 0 {
		return
	}
	fnQueueSubmit(q, uintptr(len(cmds)), &cmds[0])
	runtime.KeepAlive(cmds)
}

// WriteBuffer is wgpuQueueWriteBuffer; the data is copied before it returns.
func (q Queue) WriteBuffer(b Buffer, off uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	fnQueueWriteBuffer(q, b, off, unsafe.Pointer(&data[0]), uintptr(len(data)))
	runtime.KeepAlive(data)
}

// OnSubmittedWorkDone is wgpuQueueOnSubmittedWorkDone.
func (q Queue) OnSubmittedWorkDone(mode CallbackMode, fn func(QueueWorkDoneStatus, string)) Future {
	return fnQueueOnSubmittedWorkDone(q, callbackInfo(mode, cbQueueWorkDone, register(fn, true)))
}

// Release is wgpuQueueRelease.
func (q Queue) Release() { fnQueueRelease(q) }

// ---- Buffer

// MapAsync is wgpuBufferMapAsync.
func (b Buffer) MapAsync(m MapMode, off, size uintptr, mode CallbackMode, fn func(MapAsyncStatus, string)) Future {
	return fnBufferMapAsync(b, m, off, size, callbackInfo(mode, cbBufferMap, register(fn, true)))
}

// GetMappedRange is wgpuBufferGetMappedRange (NULL when not mapped for writing).
func (b Buffer) GetMappedRange(off, size uintptr) unsafe.Pointer {
	return fnBufferGetMappedRange(b, off, size)
}

// GetConstMappedRange is wgpuBufferGetConstMappedRange.
func (b Buffer) GetConstMappedRange(off, size uintptr) unsafe.Pointer {
	return fnBufferGetConstMappedRange(b, off, size)
}

// Unmap is wgpuBufferUnmap.
func (b Buffer) Unmap() { fnBufferUnmap(b) }

// GetSize is wgpuBufferGetSize.
func (b Buffer) GetSize() uint64 { return fnBufferGetSize(b) }

// GetMapState is wgpuBufferGetMapState.
func (b Buffer) GetMapState() BufferMapState { return fnBufferGetMapState(b) }

// Destroy is wgpuBufferDestroy (frees the memory now; the handle stays valid).
func (b Buffer) Destroy() { fnBufferDestroy(b) }

// Release is wgpuBufferRelease.
func (b Buffer) Release() { fnBufferRelease(b) }

// ---- QuerySet

// Destroy is wgpuQuerySetDestroy.
func (q QuerySet) Destroy() { fnQuerySetDestroy(q) }

// Release is wgpuQuerySetRelease.
func (q QuerySet) Release() { fnQuerySetRelease(q) }
