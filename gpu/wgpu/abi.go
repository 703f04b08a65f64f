package wgpu

// This file is the single owner of every enum value, flag bit and struct
// layout of the native API that this package mirrors.
//
// ABI: Dawn's webgpu.h as generated from google/dawn src/dawn/dawn.json by
// Dawn's generator (generator/dawn_json_generator.py --targets headers) at a
// commit between 83f69a4f15 (2025-06-18) and 2752c7d71a (2025-06-27); checked
// against df73f16205 (2025-06-24). That is the Dawn inside npm
// bun-webgpu-linux-x64@0.1.7 (libwebgpu_wrapper.so, 253 wgpu* symbols) and,
// the same build, inside bun-webgpu-{linux-x64,darwin-arm64,darwin-x64,
// win32-x64}@0.1.5: abi_select.go records the evidence and picks this table
// (ABI "dawn-2025-06") from a loaded library's exports.
//
// It is NOT the final standard webgpu.h: several values differ from it (for
// example FeatureName ShaderF16 is 0x0A here and 0x0B upstream, Subgroups is
// 0x11 here and 0x12 upstream), the instance descriptor still embeds
// WGPUInstanceCapabilities, and QueueWorkDone callbacks carry a message. A
// library built from another Dawn needs its own table and an entry in
// abi_select.go's abis.
//
// Layout rules (checked by layout_test.go against gcc's offsetof/sizeof):
//   - Go field order and sizes follow the C header; all targets are 64-bit
//     (size_t and pointers are 8 bytes).
//   - Padding the C compiler inserts is spelled out as `_ uint32` fields.
//     purego needs this for structs of 16 bytes or less passed by value (its
//     register classifier walks fields and adds no implicit padding); the
//     rest carry it too so Go and C agree field by field.
//   - Object handles (WGPUBuffer, ...) are pointers in C and uintptr-based
//     types here; the library owns them, Go never dereferences them.

import "unsafe"

// Special values.
const (
	Strlen                 = ^uintptr(0) // WGPU_STRLEN: NUL-terminated string
	WholeSize              = ^uint64(0)  // WGPU_WHOLE_SIZE
	WholeMapSize           = ^uintptr(0) // WGPU_WHOLE_MAP_SIZE
	LimitU32Undefined      = ^uint32(0)  // WGPU_LIMIT_U32_UNDEFINED
	LimitU64Undefined      = ^uint64(0)  // WGPU_LIMIT_U64_UNDEFINED
	QuerySetIndexUndefined = ^uint32(0)  // WGPU_QUERY_SET_INDEX_UNDEFINED
	True                   = Bool(1)
	False                  = Bool(0)
	copyBufferAlignment    = 4 // copy sizes and offsets must be multiples of 4
	queryResolveAlignment  = 256
)

// CopyAlignment is the alignment WebGPU requires of buffer copy offsets and
// sizes and of queue writes.
const CopyAlignment = copyBufferAlignment

// QueryResolveAlignment is the alignment of ResolveQuerySet's destination offset.
const QueryResolveAlignment = queryResolveAlignment

// Bool is WGPUBool (uint32_t).
type Bool uint32

// Handles (opaque pointers owned by the native library).
type (
	Instance           uintptr
	Adapter            uintptr
	Device             uintptr
	Queue              uintptr
	Buffer             uintptr
	ShaderModule       uintptr
	ComputePipeline    uintptr
	BindGroupLayout    uintptr
	BindGroup          uintptr
	PipelineLayout     uintptr
	CommandEncoder     uintptr
	CommandBuffer      uintptr
	ComputePassEncoder uintptr
	QuerySet           uintptr
)

// ---------------------------------------------------------------- enums

// SType identifies a chained struct.
type SType uint32

const (
	STypeShaderSourceSPIRV            SType = 0x00000001
	STypeShaderSourceWGSL             SType = 0x00000002
	STypeDawnTogglesDescriptor        SType = 0x0005000A
	STypeAdapterPropertiesMemoryHeaps SType = 0x00050013
	STypeAdapterPropertiesD3D         SType = 0x00050014
	STypeAdapterPropertiesVk          SType = 0x00050015
)

// BackendType is WGPUBackendType.
type BackendType uint32

const (
	BackendUndefined BackendType = 0x00000000
	BackendNull      BackendType = 0x00000001
	BackendWebGPU    BackendType = 0x00000002
	BackendD3D11     BackendType = 0x00000003
	BackendD3D12     BackendType = 0x00000004
	BackendMetal     BackendType = 0x00000005
	BackendVulkan    BackendType = 0x00000006
	BackendOpenGL    BackendType = 0x00000007
	BackendOpenGLES  BackendType = 0x00000008
)

var backendNames = map[BackendType]string{
	BackendUndefined: "Undefined", BackendNull: "Null", BackendWebGPU: "WebGPU", BackendD3D11: "D3D11",
	BackendD3D12: "D3D12", BackendMetal: "Metal", BackendVulkan: "Vulkan", BackendOpenGL: "OpenGL",
	BackendOpenGLES: "OpenGLES",
}

func (b BackendType) String() string { return enumName(backendNames, b) }

// AdapterType is WGPUAdapterType.
type AdapterType uint32

const (
	AdapterTypeDiscreteGPU   AdapterType = 0x00000001
	AdapterTypeIntegratedGPU AdapterType = 0x00000002
	AdapterTypeCPU           AdapterType = 0x00000003
	AdapterTypeUnknown       AdapterType = 0x00000004
)

var adapterTypeNames = map[AdapterType]string{
	AdapterTypeDiscreteGPU: "DiscreteGPU", AdapterTypeIntegratedGPU: "IntegratedGPU",
	AdapterTypeCPU: "CPU", AdapterTypeUnknown: "Unknown",
}

func (a AdapterType) String() string { return enumName(adapterTypeNames, a) }

// PowerPreference is WGPUPowerPreference.
type PowerPreference uint32

const (
	PowerPreferenceUndefined       PowerPreference = 0x00000000
	PowerPreferenceLowPower        PowerPreference = 0x00000001
	PowerPreferenceHighPerformance PowerPreference = 0x00000002
)

// FeatureLevel is WGPUFeatureLevel.
type FeatureLevel uint32

const (
	FeatureLevelUndefined     FeatureLevel = 0x00000000
	FeatureLevelCompatibility FeatureLevel = 0x00000001
	FeatureLevelCore          FeatureLevel = 0x00000002
)

// CallbackMode is WGPUCallbackMode.
type CallbackMode uint32

const (
	CallbackModeWaitAnyOnly        CallbackMode = 0x00000001
	CallbackModeAllowProcessEvents CallbackMode = 0x00000002
	CallbackModeAllowSpontaneous   CallbackMode = 0x00000003
)

// Status is WGPUStatus.
type Status uint32

const (
	StatusSuccess Status = 0x00000001
	StatusError   Status = 0x00000002
)

// WaitStatus is WGPUWaitStatus.
type WaitStatus uint32

const (
	WaitStatusSuccess  WaitStatus = 0x00000001
	WaitStatusTimedOut WaitStatus = 0x00000002
	WaitStatusError    WaitStatus = 0x00000003
)

var waitStatusNames = map[WaitStatus]string{WaitStatusSuccess: "Success", WaitStatusTimedOut: "TimedOut", WaitStatusError: "Error"}

func (s WaitStatus) String() string { return enumName(waitStatusNames, s) }

// RequestAdapterStatus is WGPURequestAdapterStatus.
type RequestAdapterStatus uint32

const (
	RequestAdapterStatusSuccess           RequestAdapterStatus = 0x00000001
	RequestAdapterStatusCallbackCancelled RequestAdapterStatus = 0x00000002
	RequestAdapterStatusUnavailable       RequestAdapterStatus = 0x00000003
	RequestAdapterStatusError             RequestAdapterStatus = 0x00000004
)

var requestAdapterStatusNames = map[RequestAdapterStatus]string{1: "Success", 2: "CallbackCancelled", 3: "Unavailable", 4: "Error"}

func (s RequestAdapterStatus) String() string { return enumName(requestAdapterStatusNames, s) }

// RequestDeviceStatus is WGPURequestDeviceStatus.
type RequestDeviceStatus uint32

const (
	RequestDeviceStatusSuccess           RequestDeviceStatus = 0x00000001
	RequestDeviceStatusCallbackCancelled RequestDeviceStatus = 0x00000002
	RequestDeviceStatusError             RequestDeviceStatus = 0x00000003
)

var requestDeviceStatusNames = map[RequestDeviceStatus]string{1: "Success", 2: "CallbackCancelled", 3: "Error"}

func (s RequestDeviceStatus) String() string { return enumName(requestDeviceStatusNames, s) }

// MapAsyncStatus is WGPUMapAsyncStatus.
type MapAsyncStatus uint32

const (
	MapAsyncStatusSuccess           MapAsyncStatus = 0x00000001
	MapAsyncStatusCallbackCancelled MapAsyncStatus = 0x00000002
	MapAsyncStatusError             MapAsyncStatus = 0x00000003
	MapAsyncStatusAborted           MapAsyncStatus = 0x00000004
)

var mapAsyncStatusNames = map[MapAsyncStatus]string{1: "Success", 2: "CallbackCancelled", 3: "Error", 4: "Aborted"}

func (s MapAsyncStatus) String() string { return enumName(mapAsyncStatusNames, s) }

// PopErrorScopeStatus is WGPUPopErrorScopeStatus.
type PopErrorScopeStatus uint32

const (
	PopErrorScopeStatusSuccess           PopErrorScopeStatus = 0x00000001
	PopErrorScopeStatusCallbackCancelled PopErrorScopeStatus = 0x00000002
	PopErrorScopeStatusError             PopErrorScopeStatus = 0x00000003
)

var popErrorScopeStatusNames = map[PopErrorScopeStatus]string{1: "Success", 2: "CallbackCancelled", 3: "Error"}

func (s PopErrorScopeStatus) String() string { return enumName(popErrorScopeStatusNames, s) }

// QueueWorkDoneStatus is WGPUQueueWorkDoneStatus.
type QueueWorkDoneStatus uint32

const (
	QueueWorkDoneStatusSuccess           QueueWorkDoneStatus = 0x00000001
	QueueWorkDoneStatusCallbackCancelled QueueWorkDoneStatus = 0x00000002
	QueueWorkDoneStatusError             QueueWorkDoneStatus = 0x00000003
)

var queueWorkDoneStatusNames = map[QueueWorkDoneStatus]string{1: "Success", 2: "CallbackCancelled", 3: "Error"}

func (s QueueWorkDoneStatus) String() string { return enumName(queueWorkDoneStatusNames, s) }

// CompilationInfoRequestStatus is WGPUCompilationInfoRequestStatus.
type CompilationInfoRequestStatus uint32

const (
	CompilationInfoRequestStatusSuccess           CompilationInfoRequestStatus = 0x00000001
	CompilationInfoRequestStatusCallbackCancelled CompilationInfoRequestStatus = 0x00000002
)

// CompilationMessageType is WGPUCompilationMessageType.
type CompilationMessageType uint32

const (
	CompilationMessageTypeError   CompilationMessageType = 0x00000001
	CompilationMessageTypeWarning CompilationMessageType = 0x00000002
	CompilationMessageTypeInfo    CompilationMessageType = 0x00000003
)

var compilationMessageTypeNames = map[CompilationMessageType]string{1: "error", 2: "warning", 3: "info"}

func (t CompilationMessageType) String() string { return enumName(compilationMessageTypeNames, t) }

// CreatePipelineAsyncStatus is WGPUCreatePipelineAsyncStatus.
type CreatePipelineAsyncStatus uint32

const (
	CreatePipelineAsyncStatusSuccess           CreatePipelineAsyncStatus = 0x00000001
	CreatePipelineAsyncStatusCallbackCancelled CreatePipelineAsyncStatus = 0x00000002
	CreatePipelineAsyncStatusValidationError   CreatePipelineAsyncStatus = 0x00000003
	CreatePipelineAsyncStatusInternalError     CreatePipelineAsyncStatus = 0x00000004
)

// ErrorType is WGPUErrorType.
type ErrorType uint32

const (
	ErrorTypeNoError     ErrorType = 0x00000001
	ErrorTypeValidation  ErrorType = 0x00000002
	ErrorTypeOutOfMemory ErrorType = 0x00000003
	ErrorTypeInternal    ErrorType = 0x00000004
	ErrorTypeUnknown     ErrorType = 0x00000005
)

var errorTypeNames = map[ErrorType]string{1: "NoError", 2: "Validation", 3: "OutOfMemory", 4: "Internal", 5: "Unknown"}

func (t ErrorType) String() string { return enumName(errorTypeNames, t) }

// ErrorFilter is WGPUErrorFilter.
type ErrorFilter uint32

const (
	ErrorFilterValidation  ErrorFilter = 0x00000001
	ErrorFilterOutOfMemory ErrorFilter = 0x00000002
	ErrorFilterInternal    ErrorFilter = 0x00000003
)

// DeviceLostReason is WGPUDeviceLostReason.
type DeviceLostReason uint32

const (
	DeviceLostReasonUnknown           DeviceLostReason = 0x00000001
	DeviceLostReasonDestroyed         DeviceLostReason = 0x00000002
	DeviceLostReasonCallbackCancelled DeviceLostReason = 0x00000003
	DeviceLostReasonFailedCreation    DeviceLostReason = 0x00000004
)

var deviceLostReasonNames = map[DeviceLostReason]string{1: "Unknown", 2: "Destroyed", 3: "CallbackCancelled", 4: "FailedCreation"}

func (r DeviceLostReason) String() string { return enumName(deviceLostReasonNames, r) }

// BufferBindingType is WGPUBufferBindingType.
type BufferBindingType uint32

const (
	BufferBindingTypeBindingNotUsed  BufferBindingType = 0x00000000
	BufferBindingTypeUndefined       BufferBindingType = 0x00000001
	BufferBindingTypeUniform         BufferBindingType = 0x00000002
	BufferBindingTypeStorage         BufferBindingType = 0x00000003
	BufferBindingTypeReadOnlyStorage BufferBindingType = 0x00000004
)

// BufferMapState is WGPUBufferMapState.
type BufferMapState uint32

const (
	BufferMapStateUnmapped BufferMapState = 0x00000001
	BufferMapStatePending  BufferMapState = 0x00000002
	BufferMapStateMapped   BufferMapState = 0x00000003
)

// QueryType is WGPUQueryType.
type QueryType uint32

const (
	QueryTypeOcclusion QueryType = 0x00000001
	QueryTypeTimestamp QueryType = 0x00000002
)

// FeatureName is WGPUFeatureName (values of THIS Dawn, not the final header).
type FeatureName uint32

const (
	FeatureDepthClipControl              FeatureName = 0x00000001
	FeatureDepth32FloatStencil8          FeatureName = 0x00000002
	FeatureTimestampQuery                FeatureName = 0x00000003
	FeatureTextureCompressionBC          FeatureName = 0x00000004
	FeatureIndirectFirstInstance         FeatureName = 0x00000009
	FeatureShaderF16                     FeatureName = 0x0000000A
	FeatureFloat32Filterable             FeatureName = 0x0000000D
	FeatureSubgroups                     FeatureName = 0x00000011
	FeatureCoreFeaturesAndLimits         FeatureName = 0x00000012
	FeatureDawnNative                    FeatureName = 0x00050002
	FeatureTimestampQueryInsidePasses    FeatureName = 0x00050003 // ChromiumExperimentalTimestampQueryInsidePasses
	FeatureImplicitDeviceSynchronization FeatureName = 0x00050004
	FeatureAdapterPropertiesMemoryHeaps  FeatureName = 0x00050015
	FeatureAdapterPropertiesD3D          FeatureName = 0x00050016
	FeatureAdapterPropertiesVk           FeatureName = 0x00050017
	FeatureSubgroupMatrix                FeatureName = 0x00050037 // ChromiumExperimentalSubgroupMatrix
)

var featureNames = map[FeatureName]string{
	0x00000001: "DepthClipControl", 0x00000002: "Depth32FloatStencil8", 0x00000003: "TimestampQuery",
	0x00000004: "TextureCompressionBC", 0x00000005: "TextureCompressionBCSliced3D",
	0x00000006: "TextureCompressionETC2", 0x00000007: "TextureCompressionASTC",
	0x00000008: "TextureCompressionASTCSliced3D", 0x00000009: "IndirectFirstInstance",
	0x0000000A: "ShaderF16", 0x0000000B: "RG11B10UfloatRenderable", 0x0000000C: "BGRA8UnormStorage",
	0x0000000D: "Float32Filterable", 0x0000000E: "Float32Blendable", 0x0000000F: "ClipDistances",
	0x00000010: "DualSourceBlending", 0x00000011: "Subgroups", 0x00000012: "CoreFeaturesAndLimits",
	0x00050000: "DawnInternalUsages", 0x00050001: "DawnMultiPlanarFormats", 0x00050002: "DawnNative",
	0x00050003: "ChromiumExperimentalTimestampQueryInsidePasses", 0x00050004: "ImplicitDeviceSynchronization",
	0x00050006: "TransientAttachments", 0x00050007: "MSAARenderToSingleSampled",
	0x00050008: "D3D11MultithreadProtected", 0x00050009: "ANGLETextureSharing",
	0x0005000A: "PixelLocalStorageCoherent", 0x0005000B: "PixelLocalStorageNonCoherent",
	0x0005000C: "Unorm16TextureFormats", 0x0005000D: "Snorm16TextureFormats",
	0x0005000E: "MultiPlanarFormatExtendedUsages", 0x0005000F: "MultiPlanarFormatP010",
	0x00050010: "HostMappedPointer", 0x00050011: "MultiPlanarRenderTargets",
	0x00050012: "MultiPlanarFormatNv12a", 0x00050013: "FramebufferFetch",
	0x00050014: "BufferMapExtendedUsages", 0x00050015: "AdapterPropertiesMemoryHeaps",
	0x00050016: "AdapterPropertiesD3D", 0x00050017: "AdapterPropertiesVk", 0x00050018: "R8UnormStorage",
	0x00050019: "DawnFormatCapabilities", 0x0005001A: "DawnDrmFormatCapabilities",
	0x0005001B: "Norm16TextureFormats", 0x0005001C: "MultiPlanarFormatNv16",
	0x0005001D: "MultiPlanarFormatNv24", 0x0005001E: "MultiPlanarFormatP210",
	0x0005001F: "MultiPlanarFormatP410", 0x00050020: "SharedTextureMemoryVkDedicatedAllocation",
	0x00050021: "SharedTextureMemoryAHardwareBuffer", 0x00050022: "SharedTextureMemoryDmaBuf",
	0x00050023: "SharedTextureMemoryOpaqueFD", 0x00050024: "SharedTextureMemoryZirconHandle",
	0x00050025: "SharedTextureMemoryDXGISharedHandle", 0x00050026: "SharedTextureMemoryD3D11Texture2D",
	0x00050027: "SharedTextureMemoryIOSurface", 0x00050028: "SharedTextureMemoryEGLImage",
	0x00050029: "SharedFenceVkSemaphoreOpaqueFD", 0x0005002A: "SharedFenceSyncFD",
	0x0005002B: "SharedFenceVkSemaphoreZirconHandle", 0x0005002C: "SharedFenceDXGISharedHandle",
	0x0005002D: "SharedFenceMTLSharedEvent", 0x0005002E: "SharedBufferMemoryD3D12Resource",
	0x0005002F: "StaticSamplers", 0x00050030: "YCbCrVulkanSamplers",
	0x00050031: "ShaderModuleCompilationOptions", 0x00050032: "DawnLoadResolveTexture",
	0x00050033: "DawnPartialLoadResolveTexture", 0x00050034: "MultiDrawIndirect",
	0x00050035: "DawnTexelCopyBufferRowAlignment", 0x00050036: "FlexibleTextureViews",
	0x00050037: "ChromiumExperimentalSubgroupMatrix", 0x00050038: "SharedFenceEGLSync",
	0x00050039: "DawnDeviceAllocatorControl", 0x0005003A: "TextureFormatsTier1",
}

func (f FeatureName) String() string { return enumName(featureNames, f) }

// Flags (WGPUFlags = uint64_t).
type (
	BufferUsage  uint64
	MapMode      uint64
	ShaderStage  uint64
	HeapProperty uint64
)

const (
	BufferUsageNone         BufferUsage = 0x0000
	BufferUsageMapRead      BufferUsage = 0x0001
	BufferUsageMapWrite     BufferUsage = 0x0002
	BufferUsageCopySrc      BufferUsage = 0x0004
	BufferUsageCopyDst      BufferUsage = 0x0008
	BufferUsageIndex        BufferUsage = 0x0010
	BufferUsageVertex       BufferUsage = 0x0020
	BufferUsageUniform      BufferUsage = 0x0040
	BufferUsageStorage      BufferUsage = 0x0080
	BufferUsageIndirect     BufferUsage = 0x0100
	BufferUsageQueryResolve BufferUsage = 0x0200

	MapModeNone  MapMode = 0
	MapModeRead  MapMode = 1
	MapModeWrite MapMode = 2

	ShaderStageNone     ShaderStage = 0
	ShaderStageVertex   ShaderStage = 1
	ShaderStageFragment ShaderStage = 2
	ShaderStageCompute  ShaderStage = 4

	HeapPropertyDeviceLocal  HeapProperty = 0x01
	HeapPropertyHostVisible  HeapProperty = 0x02
	HeapPropertyHostCoherent HeapProperty = 0x04
	HeapPropertyHostUncached HeapProperty = 0x08
	HeapPropertyHostCached   HeapProperty = 0x10
)

// Names lists the set bits of a heap property mask by name.
func (h HeapProperty) Names() []string {
	var out []string
	for _, p := range []struct {
		bit  HeapProperty
		name string
	}{{HeapPropertyDeviceLocal, "DeviceLocal"}, {HeapPropertyHostVisible, "HostVisible"},
		{HeapPropertyHostCoherent, "HostCoherent"}, {HeapPropertyHostUncached, "HostUncached"},
		{HeapPropertyHostCached, "HostCached"}} {
		if h&p.bit != 0 {
			out = append(out, p.name)
		}
	}
	return out
}

// ---------------------------------------------------------------- structs

// StringView is WGPUStringView (16 bytes: passed in two registers).
type StringView struct {
	Data   unsafe.Pointer // char const *, nullable
	Length uintptr        // size_t; Strlen means NUL-terminated
}

// ChainedStruct is WGPUChainedStruct (also used for output chains here).
type ChainedStruct struct {
	Next  *ChainedStruct
	SType SType
	_     uint32
}

// InstanceCapabilities is WGPUInstanceCapabilities (this Dawn's name for
// what the final header calls WGPUInstanceLimits / requiredFeatures).
type InstanceCapabilities struct {
	NextInChain          *ChainedStruct
	TimedWaitAnyEnable   Bool
	_                    uint32
	TimedWaitAnyMaxCount uintptr
}

// InstanceDescriptor is WGPUInstanceDescriptor.
type InstanceDescriptor struct {
	NextInChain  *ChainedStruct
	Capabilities InstanceCapabilities
}

// DawnTogglesDescriptor is WGPUDawnTogglesDescriptor (chained on instance or
// device descriptors).
type DawnTogglesDescriptor struct {
	Chain               ChainedStruct
	EnabledToggleCount  uintptr
	EnabledToggles      **byte
	DisabledToggleCount uintptr
	DisabledToggles     **byte
}

// RequestAdapterOptions is WGPURequestAdapterOptions.
type RequestAdapterOptions struct {
	NextInChain          *ChainedStruct
	FeatureLevel         FeatureLevel
	PowerPreference      PowerPreference
	ForceFallbackAdapter Bool
	BackendType          BackendType
	CompatibleSurface    uintptr // WGPUSurface, nullable
}

// Future is WGPUFuture (8 bytes, returned by value).
type Future struct {
	ID uint64
}

// FutureWaitInfo is WGPUFutureWaitInfo.
type FutureWaitInfo struct {
	Future    Future
	Completed Bool
	_         uint32
}

// CallbackInfo is the common layout of every WGPU*CallbackInfo that has a
// mode field: RequestAdapter, RequestDevice, BufferMap, PopErrorScope,
// QueueWorkDone, CompilationInfo, DeviceLost, CreateComputePipelineAsync.
type CallbackInfo struct {
	NextInChain *ChainedStruct
	Mode        CallbackMode
	_           uint32
	Callback    uintptr
	Userdata1   uintptr
	Userdata2   uintptr
}

// UncapturedErrorCallbackInfo is WGPUUncapturedErrorCallbackInfo (no mode;
// same layout as WGPULoggingCallbackInfo).
type UncapturedErrorCallbackInfo struct {
	NextInChain *ChainedStruct
	Callback    uintptr
	Userdata1   uintptr
	Userdata2   uintptr
}

// AdapterInfo is WGPUAdapterInfo (96 bytes, passed by value to FreeMembers).
type AdapterInfo struct {
	NextInChain     *ChainedStruct
	Vendor          StringView
	Architecture    StringView
	Device          StringView
	Description     StringView
	BackendType     BackendType
	AdapterType     AdapterType
	VendorID        uint32
	DeviceID        uint32
	SubgroupMinSize uint32
	SubgroupMaxSize uint32
}

// MemoryHeapInfo is WGPUMemoryHeapInfo.
type MemoryHeapInfo struct {
	Properties HeapProperty
	Size       uint64
}

// AdapterPropertiesMemoryHeaps is WGPUAdapterPropertiesMemoryHeaps, chained
// on AdapterInfo when the adapter has FeatureAdapterPropertiesMemoryHeaps.
type AdapterPropertiesMemoryHeaps struct {
	Chain     ChainedStruct
	HeapCount uintptr
	HeapInfo  *MemoryHeapInfo // library-owned; free with FreeMembers
}

// AdapterPropertiesVk is WGPUAdapterPropertiesVk.
type AdapterPropertiesVk struct {
	Chain         ChainedStruct
	DriverVersion uint32
	_             uint32
}

// Limits is WGPULimits of this Dawn (maxImmediateSize is its last field).
type Limits struct {
	NextInChain                               *ChainedStruct
	MaxTextureDimension1D                     uint32
	MaxTextureDimension2D                     uint32
	MaxTextureDimension3D                     uint32
	MaxTextureArrayLayers                     uint32
	MaxBindGroups                             uint32
	MaxBindGroupsPlusVertexBuffers            uint32
	MaxBindingsPerBindGroup                   uint32
	MaxDynamicUniformBuffersPerPipelineLayout uint32
	MaxDynamicStorageBuffersPerPipelineLayout uint32
	MaxSampledTexturesPerShaderStage          uint32
	MaxSamplersPerShaderStage                 uint32
	MaxStorageBuffersPerShaderStage           uint32
	MaxStorageTexturesPerShaderStage          uint32
	MaxUniformBuffersPerShaderStage           uint32
	MaxUniformBufferBindingSize               uint64
	MaxStorageBufferBindingSize               uint64
	MinUniformBufferOffsetAlignment           uint32
	MinStorageBufferOffsetAlignment           uint32
	MaxVertexBuffers                          uint32
	_                                         uint32
	MaxBufferSize                             uint64
	MaxVertexAttributes                       uint32
	MaxVertexBufferArrayStride                uint32
	MaxInterStageShaderVariables              uint32
	MaxColorAttachments                       uint32
	MaxColorAttachmentBytesPerSample          uint32
	MaxComputeWorkgroupStorageSize            uint32
	MaxComputeInvocationsPerWorkgroup         uint32
	MaxComputeWorkgroupSizeX                  uint32
	MaxComputeWorkgroupSizeY                  uint32
	MaxComputeWorkgroupSizeZ                  uint32
	MaxComputeWorkgroupsPerDimension          uint32
	MaxImmediateSize                          uint32
}

// SupportedFeatures is WGPUSupportedFeatures (16 bytes, by value to
// FreeMembers); same layout as WGPUSupportedWGSLLanguageFeatures.
type SupportedFeatures struct {
	FeatureCount uintptr
	Features     *FeatureName // library-owned
}

// QueueDescriptor is WGPUQueueDescriptor.
type QueueDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
}

// DeviceDescriptor is WGPUDeviceDescriptor.
type DeviceDescriptor struct {
	NextInChain                 *ChainedStruct
	Label                       StringView
	RequiredFeatureCount        uintptr
	RequiredFeatures            *FeatureName
	RequiredLimits              *Limits
	DefaultQueue                QueueDescriptor
	DeviceLostCallbackInfo      CallbackInfo
	UncapturedErrorCallbackInfo UncapturedErrorCallbackInfo
}

// BufferDescriptor is WGPUBufferDescriptor.
type BufferDescriptor struct {
	NextInChain      *ChainedStruct
	Label            StringView
	Usage            BufferUsage
	Size             uint64
	MappedAtCreation Bool
	_                uint32
}

// ShaderModuleDescriptor is WGPUShaderModuleDescriptor.
type ShaderModuleDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
}

// ShaderSourceWGSL is WGPUShaderSourceWGSL (chained on ShaderModuleDescriptor).
type ShaderSourceWGSL struct {
	Chain ChainedStruct
	Code  StringView
}

// CompilationMessage is WGPUCompilationMessage.
type CompilationMessage struct {
	NextInChain *ChainedStruct
	Message     StringView
	Type        CompilationMessageType
	_           uint32
	LineNum     uint64
	LinePos     uint64
	Offset      uint64
	Length      uint64
}

// CompilationInfo is WGPUCompilationInfo.
type CompilationInfo struct {
	NextInChain  *ChainedStruct
	MessageCount uintptr
	Messages     *CompilationMessage
}

// ConstantEntry is WGPUConstantEntry: one pipeline-overridable constant
// (a WGSL `override`), by name or numeric id.
type ConstantEntry struct {
	NextInChain *ChainedStruct
	Key         StringView
	Value       float64
}

// ComputeState is WGPUComputeState.
type ComputeState struct {
	NextInChain   *ChainedStruct
	Module        ShaderModule
	EntryPoint    StringView
	ConstantCount uintptr
	Constants     *ConstantEntry
}

// ComputePipelineDescriptor is WGPUComputePipelineDescriptor.
type ComputePipelineDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
	Layout      PipelineLayout // 0: automatic layout
	Compute     ComputeState
}

// BufferBindingLayout is WGPUBufferBindingLayout.
type BufferBindingLayout struct {
	NextInChain      *ChainedStruct
	Type             BufferBindingType
	HasDynamicOffset Bool
	MinBindingSize   uint64
}

// SamplerBindingLayout is WGPUSamplerBindingLayout (Type 0 = BindingNotUsed).
type SamplerBindingLayout struct {
	NextInChain *ChainedStruct
	Type        uint32
	_           uint32
}

// TextureBindingLayout is WGPUTextureBindingLayout (SampleType 0 = BindingNotUsed).
type TextureBindingLayout struct {
	NextInChain   *ChainedStruct
	SampleType    uint32
	ViewDimension uint32
	Multisampled  Bool
	_             uint32
}

// StorageTextureBindingLayout is WGPUStorageTextureBindingLayout (Access 0 = BindingNotUsed).
type StorageTextureBindingLayout struct {
	NextInChain   *ChainedStruct
	Access        uint32
	Format        uint32
	ViewDimension uint32
	_             uint32
}

// BindGroupLayoutEntry is WGPUBindGroupLayoutEntry.
type BindGroupLayoutEntry struct {
	NextInChain      *ChainedStruct
	Binding          uint32
	_                uint32
	Visibility       ShaderStage
	BindingArraySize uint32
	_                uint32
	Buffer           BufferBindingLayout
	Sampler          SamplerBindingLayout
	Texture          TextureBindingLayout
	StorageTexture   StorageTextureBindingLayout
}

// BindGroupLayoutDescriptor is WGPUBindGroupLayoutDescriptor.
type BindGroupLayoutDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
	EntryCount  uintptr
	Entries     *BindGroupLayoutEntry
}

// PipelineLayoutDescriptor is WGPUPipelineLayoutDescriptor.
type PipelineLayoutDescriptor struct {
	NextInChain          *ChainedStruct
	Label                StringView
	BindGroupLayoutCount uintptr
	BindGroupLayouts     *BindGroupLayout
	ImmediateSize        uint32
	_                    uint32
}

// BindGroupEntry is WGPUBindGroupEntry.
type BindGroupEntry struct {
	NextInChain *ChainedStruct
	Binding     uint32
	_           uint32
	Buffer      Buffer
	Offset      uint64
	Size        uint64
	Sampler     uintptr
	TextureView uintptr
}

// BindGroupDescriptor is WGPUBindGroupDescriptor.
type BindGroupDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
	Layout      BindGroupLayout
	EntryCount  uintptr
	Entries     *BindGroupEntry
}

// CommandEncoderDescriptor is WGPUCommandEncoderDescriptor.
type CommandEncoderDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
}

// CommandBufferDescriptor is WGPUCommandBufferDescriptor.
type CommandBufferDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
}

// PassTimestampWrites is WGPUPassTimestampWrites.
type PassTimestampWrites struct {
	NextInChain               *ChainedStruct
	QuerySet                  QuerySet
	BeginningOfPassWriteIndex uint32
	EndOfPassWriteIndex       uint32
}

// ComputePassDescriptor is WGPUComputePassDescriptor.
type ComputePassDescriptor struct {
	NextInChain     *ChainedStruct
	Label           StringView
	TimestampWrites *PassTimestampWrites
}

// QuerySetDescriptor is WGPUQuerySetDescriptor.
type QuerySetDescriptor struct {
	NextInChain *ChainedStruct
	Label       StringView
	Type        QueryType
	Count       uint32
}

// ---------------------------------------------------------------- helpers

func enumName[K ~uint32](m map[K]string, k K) string {
	if s, ok := m[k]; ok {
		return s
	}
	return "0x" + hex32(uint32(k))
}

func hex32(v uint32) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b [8]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = digits[v&0xf]
		v >>= 4
	}
	return string(b[i:])
}
