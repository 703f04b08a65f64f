package wgpu

import "unsafe"

// Native entry points. They are nil until Load succeeds; every exported
// wrapper below must only be called after Load returned nil.
var (
	fnCreateInstance             func(desc *InstanceDescriptor) Instance
	fnGetInstanceCapabilities    func(caps *InstanceCapabilities) Status
	fnInstanceRequestAdapter     func(inst Instance, opts *RequestAdapterOptions, cb CallbackInfo) Future
	fnInstanceWaitAny            func(inst Instance, count uintptr, infos *FutureWaitInfo, timeoutNS uint64) WaitStatus
	fnInstanceProcessEvents      func(inst Instance)
	fnInstanceRelease            func(inst Instance)
	fnAdapterGetInfo             func(a Adapter, info *AdapterInfo) Status
	fnAdapterInfoFreeMembers     func(info AdapterInfo)
	fnAdapterHeapsFreeMembers    func(p AdapterPropertiesMemoryHeaps)
	fnAdapterGetLimits           func(a Adapter, l *Limits) Status
	fnAdapterGetFeatures         func(a Adapter, f *SupportedFeatures)
	fnAdapterHasFeature          func(a Adapter, f FeatureName) Bool
	fnSupportedFeaturesFree      func(f SupportedFeatures)
	fnAdapterRequestDevice       func(a Adapter, desc *DeviceDescriptor, cb CallbackInfo) Future
	fnAdapterRelease             func(a Adapter)
	fnDeviceGetQueue             func(d Device) Queue
	fnDeviceGetLimits            func(d Device, l *Limits) Status
	fnDeviceGetFeatures          func(d Device, f *SupportedFeatures)
	fnDeviceHasFeature           func(d Device, f FeatureName) Bool
	fnDeviceCreateBuffer         func(d Device, desc *BufferDescriptor) Buffer
	fnDeviceCreateShaderModule   func(d Device, desc *ShaderModuleDescriptor) ShaderModule
	fnDeviceCreateComputePipe    func(d Device, desc *ComputePipelineDescriptor) ComputePipeline
	fnDeviceCreateComputeAsync   func(d Device, desc *ComputePipelineDescriptor, cb CallbackInfo) Future
	fnDeviceCreateBindGroupLay   func(d Device, desc *BindGroupLayoutDescriptor) BindGroupLayout
	fnDeviceCreatePipelineLay    func(d Device, desc *PipelineLayoutDescriptor) PipelineLayout
	fnDeviceCreateBindGroup      func(d Device, desc *BindGroupDescriptor) BindGroup
	fnDeviceCreateCommandEncoder func(d Device, desc *CommandEncoderDescriptor) CommandEncoder
	fnDeviceCreateQuerySet       func(d Device, desc *QuerySetDescriptor) QuerySet
	fnDevicePushErrorScope       func(d Device, filter ErrorFilter)
	fnDevicePopErrorScope        func(d Device, cb CallbackInfo) Future
	fnDeviceDestroy              func(d Device)
	fnDeviceRelease              func(d Device)
	fnShaderModuleGetCompInfo    func(m ShaderModule, cb CallbackInfo) Future
	fnShaderModuleRelease        func(m ShaderModule)
	fnComputePipelineGetBGL      func(p ComputePipeline, group uint32) BindGroupLayout
	fnComputePipelineRelease     func(p ComputePipeline)
	fnBindGroupLayoutRelease     func(l BindGroupLayout)
	fnPipelineLayoutRelease      func(l PipelineLayout)
	fnBindGroupRelease           func(g BindGroup)
	fnEncoderBeginComputePass    func(e CommandEncoder, desc *ComputePassDescriptor) ComputePassEncoder
	fnEncoderCopyBufferToBuffer  func(e CommandEncoder, src Buffer, srcOff uint64, dst Buffer, dstOff, size uint64)
	fnEncoderClearBuffer         func(e CommandEncoder, b Buffer, off, size uint64)
	fnEncoderResolveQuerySet     func(e CommandEncoder, q QuerySet, first, count uint32, dst Buffer, dstOff uint64)
	fnEncoderFinish              func(e CommandEncoder, desc *CommandBufferDescriptor) CommandBuffer
	fnEncoderRelease             func(e CommandEncoder)
	fnPassSetPipeline            func(p ComputePassEncoder, pipe ComputePipeline)
	fnPassSetBindGroup           func(p ComputePassEncoder, group uint32, bg BindGroup, n uintptr, offsets *uint32)
	fnPassDispatch               func(p ComputePassEncoder, x, y, z uint32)
	fnPassDispatchIndirect       func(p ComputePassEncoder, b Buffer, off uint64)
	fnPassEnd                    func(p ComputePassEncoder)
	fnPassRelease                func(p ComputePassEncoder)
	fnCommandBufferRelease       func(c CommandBuffer)
	fnQueueSubmit                func(q Queue, n uintptr, cmds *CommandBuffer)
	fnQueueWriteBuffer           func(q Queue, b Buffer, off uint64, data unsafe.Pointer, size uintptr)
	fnQueueOnSubmittedWorkDone   func(q Queue, cb CallbackInfo) Future
	fnQueueRelease               func(q Queue)
	fnBufferMapAsync             func(b Buffer, mode MapMode, off, size uintptr, cb CallbackInfo) Future
	fnBufferGetMappedRange       func(b Buffer, off, size uintptr) unsafe.Pointer
	fnBufferGetConstMappedRange  func(b Buffer, off, size uintptr) unsafe.Pointer
	fnBufferUnmap                func(b Buffer)
	fnBufferGetSize              func(b Buffer) uint64
	fnBufferGetMapState          func(b Buffer) BufferMapState
	fnBufferDestroy              func(b Buffer)
	fnBufferRelease              func(b Buffer)
	fnQuerySetDestroy            func(q QuerySet)
	fnQuerySetRelease            func(q QuerySet)
)

// symbols lists every native function this package needs, with the Go
// variable it is bound to. Load resolves all of them before binding any.
var symbols = []struct {
	name string
	fptr any
}{
	{"wgpuCreateInstance", &fnCreateInstance},
	{"wgpuGetInstanceCapabilities", &fnGetInstanceCapabilities},
	{"wgpuInstanceRequestAdapter", &fnInstanceRequestAdapter},
	{"wgpuInstanceWaitAny", &fnInstanceWaitAny},
	{"wgpuInstanceProcessEvents", &fnInstanceProcessEvents},
	{"wgpuInstanceRelease", &fnInstanceRelease},
	{"wgpuAdapterGetInfo", &fnAdapterGetInfo},
	{"wgpuAdapterInfoFreeMembers", &fnAdapterInfoFreeMembers},
	{"wgpuAdapterPropertiesMemoryHeapsFreeMembers", &fnAdapterHeapsFreeMembers},
	{"wgpuAdapterGetLimits", &fnAdapterGetLimits},
	{"wgpuAdapterGetFeatures", &fnAdapterGetFeatures},
	{"wgpuAdapterHasFeature", &fnAdapterHasFeature},
	{"wgpuSupportedFeaturesFreeMembers", &fnSupportedFeaturesFree},
	{"wgpuAdapterRequestDevice", &fnAdapterRequestDevice},
	{"wgpuAdapterRelease", &fnAdapterRelease},
	{"wgpuDeviceGetQueue", &fnDeviceGetQueue},
	{"wgpuDeviceGetLimits", &fnDeviceGetLimits},
	{"wgpuDeviceGetFeatures", &fnDeviceGetFeatures},
	{"wgpuDeviceHasFeature", &fnDeviceHasFeature},
	{"wgpuDeviceCreateBuffer", &fnDeviceCreateBuffer},
	{"wgpuDeviceCreateShaderModule", &fnDeviceCreateShaderModule},
	{"wgpuDeviceCreateComputePipeline", &fnDeviceCreateComputePipe},
	{"wgpuDeviceCreateComputePipelineAsync", &fnDeviceCreateComputeAsync},
	{"wgpuDeviceCreateBindGroupLayout", &fnDeviceCreateBindGroupLay},
	{"wgpuDeviceCreatePipelineLayout", &fnDeviceCreatePipelineLay},
	{"wgpuDeviceCreateBindGroup", &fnDeviceCreateBindGroup},
	{"wgpuDeviceCreateCommandEncoder", &fnDeviceCreateCommandEncoder},
	{"wgpuDeviceCreateQuerySet", &fnDeviceCreateQuerySet},
	{"wgpuDevicePushErrorScope", &fnDevicePushErrorScope},
	{"wgpuDevicePopErrorScope", &fnDevicePopErrorScope},
	{"wgpuDeviceDestroy", &fnDeviceDestroy},
	{"wgpuDeviceRelease", &fnDeviceRelease},
	{"wgpuShaderModuleGetCompilationInfo", &fnShaderModuleGetCompInfo},
	{"wgpuShaderModuleRelease", &fnShaderModuleRelease},
	{"wgpuComputePipelineGetBindGroupLayout", &fnComputePipelineGetBGL},
	{"wgpuComputePipelineRelease", &fnComputePipelineRelease},
	{"wgpuBindGroupLayoutRelease", &fnBindGroupLayoutRelease},
	{"wgpuPipelineLayoutRelease", &fnPipelineLayoutRelease},
	{"wgpuBindGroupRelease", &fnBindGroupRelease},
	{"wgpuCommandEncoderBeginComputePass", &fnEncoderBeginComputePass},
	{"wgpuCommandEncoderCopyBufferToBuffer", &fnEncoderCopyBufferToBuffer},
	{"wgpuCommandEncoderClearBuffer", &fnEncoderClearBuffer},
	{"wgpuCommandEncoderResolveQuerySet", &fnEncoderResolveQuerySet},
	{"wgpuCommandEncoderFinish", &fnEncoderFinish},
	{"wgpuCommandEncoderRelease", &fnEncoderRelease},
	{"wgpuComputePassEncoderSetPipeline", &fnPassSetPipeline},
	{"wgpuComputePassEncoderSetBindGroup", &fnPassSetBindGroup},
	{"wgpuComputePassEncoderDispatchWorkgroups", &fnPassDispatch},
	{"wgpuComputePassEncoderDispatchWorkgroupsIndirect", &fnPassDispatchIndirect},
	{"wgpuComputePassEncoderEnd", &fnPassEnd},
	{"wgpuComputePassEncoderRelease", &fnPassRelease},
	{"wgpuCommandBufferRelease", &fnCommandBufferRelease},
	{"wgpuQueueSubmit", &fnQueueSubmit},
	{"wgpuQueueWriteBuffer", &fnQueueWriteBuffer},
	{"wgpuQueueOnSubmittedWorkDone", &fnQueueOnSubmittedWorkDone},
	{"wgpuQueueRelease", &fnQueueRelease},
	{"wgpuBufferMapAsync", &fnBufferMapAsync},
	{"wgpuBufferGetMappedRange", &fnBufferGetMappedRange},
	{"wgpuBufferGetConstMappedRange", &fnBufferGetConstMappedRange},
	{"wgpuBufferUnmap", &fnBufferUnmap},
	{"wgpuBufferGetSize", &fnBufferGetSize},
	{"wgpuBufferGetMapState", &fnBufferGetMapState},
	{"wgpuBufferDestroy", &fnBufferDestroy},
	{"wgpuBufferRelease", &fnBufferRelease},
	{"wgpuQuerySetDestroy", &fnQuerySetDestroy},
	{"wgpuQuerySetRelease", &fnQuerySetRelease},
}

// SymbolNames returns the names of every native function the binding uses.
func SymbolNames() []string {
	out := make([]string, len(symbols))
	for i, s := range symbols {
		out[i] = s.name
	}
	return out
}
