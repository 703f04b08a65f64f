/*
 * abi_mirror.h — the C layout of exactly the structs gpu/wgpu mirrors, as
 * this project understands Dawn's webgpu.h of June 2025 (commits
 * 83f69a4f15..2752c7d71a). Written by hand for layout_test.go, which
 * compiles it with gcc and checks every Go offset and size against
 * offsetof/sizeof. It is not Dawn's header: set ZENMETRICS_WEBGPU_HEADER to
 * a generated webgpu.h to check against the real thing as well.
 *
 * Enums are 32-bit, WGPUFlags and WGPUBool as in webgpu.h; handles are
 * opaque pointers.
 */
#include <stddef.h>
#include <stdint.h>

typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef uint32_t WGPUEnum32;
typedef void *WGPUHandle;
typedef void *WGPUCallbackPtr;

typedef struct WGPUStringView { char const *data; size_t length; } WGPUStringView;
typedef struct WGPUChainedStruct { struct WGPUChainedStruct *next; WGPUEnum32 sType; } WGPUChainedStruct;

typedef struct WGPUInstanceCapabilities {
    WGPUChainedStruct *nextInChain; WGPUBool timedWaitAnyEnable; size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;
typedef struct WGPUInstanceDescriptor {
    WGPUChainedStruct *nextInChain; WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptor;
typedef struct WGPUDawnTogglesDescriptor {
    WGPUChainedStruct chain; size_t enabledToggleCount; char const *const *enabledToggles;
    size_t disabledToggleCount; char const *const *disabledToggles;
} WGPUDawnTogglesDescriptor;
typedef struct WGPURequestAdapterOptions {
    WGPUChainedStruct *nextInChain; WGPUEnum32 featureLevel; WGPUEnum32 powerPreference;
    WGPUBool forceFallbackAdapter; WGPUEnum32 backendType; WGPUHandle compatibleSurface;
} WGPURequestAdapterOptions;
typedef struct WGPUFuture { uint64_t id; } WGPUFuture;
typedef struct WGPUFutureWaitInfo { WGPUFuture future; WGPUBool completed; } WGPUFutureWaitInfo;

/* Every callback info with a mode has this one layout. */
#define MODE_CALLBACK_INFO(name) \
    typedef struct name { WGPUChainedStruct *nextInChain; WGPUEnum32 mode; WGPUCallbackPtr callback; \
                          void *userdata1; void *userdata2; } name;
MODE_CALLBACK_INFO(WGPURequestAdapterCallbackInfo)
MODE_CALLBACK_INFO(WGPURequestDeviceCallbackInfo)
MODE_CALLBACK_INFO(WGPUBufferMapCallbackInfo)
MODE_CALLBACK_INFO(WGPUPopErrorScopeCallbackInfo)
MODE_CALLBACK_INFO(WGPUQueueWorkDoneCallbackInfo)
MODE_CALLBACK_INFO(WGPUCompilationInfoCallbackInfo)
MODE_CALLBACK_INFO(WGPUDeviceLostCallbackInfo)
MODE_CALLBACK_INFO(WGPUCreateComputePipelineAsyncCallbackInfo)
typedef struct WGPUUncapturedErrorCallbackInfo {
    WGPUChainedStruct *nextInChain; WGPUCallbackPtr callback; void *userdata1; void *userdata2;
} WGPUUncapturedErrorCallbackInfo;
typedef struct WGPULoggingCallbackInfo {
    WGPUChainedStruct *nextInChain; WGPUCallbackPtr callback; void *userdata1; void *userdata2;
} WGPULoggingCallbackInfo;

typedef struct WGPUAdapterInfo {
    WGPUChainedStruct *nextInChain;
    WGPUStringView vendor; WGPUStringView architecture; WGPUStringView device; WGPUStringView description;
    WGPUEnum32 backendType; WGPUEnum32 adapterType; uint32_t vendorID; uint32_t deviceID;
    uint32_t subgroupMinSize; uint32_t subgroupMaxSize;
} WGPUAdapterInfo;
typedef struct WGPUMemoryHeapInfo { WGPUFlags properties; uint64_t size; } WGPUMemoryHeapInfo;
typedef struct WGPUAdapterPropertiesMemoryHeaps {
    WGPUChainedStruct chain; size_t heapCount; WGPUMemoryHeapInfo const *heapInfo;
} WGPUAdapterPropertiesMemoryHeaps;
typedef struct WGPUAdapterPropertiesVk { WGPUChainedStruct chain; uint32_t driverVersion; } WGPUAdapterPropertiesVk;

typedef struct WGPULimits {
    WGPUChainedStruct *nextInChain;
    uint32_t maxTextureDimension1D, maxTextureDimension2D, maxTextureDimension3D, maxTextureArrayLayers;
    uint32_t maxBindGroups, maxBindGroupsPlusVertexBuffers, maxBindingsPerBindGroup;
    uint32_t maxDynamicUniformBuffersPerPipelineLayout, maxDynamicStorageBuffersPerPipelineLayout;
    uint32_t maxSampledTexturesPerShaderStage, maxSamplersPerShaderStage, maxStorageBuffersPerShaderStage;
    uint32_t maxStorageTexturesPerShaderStage, maxUniformBuffersPerShaderStage;
    uint64_t maxUniformBufferBindingSize, maxStorageBufferBindingSize;
    uint32_t minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment, maxVertexBuffers;
    uint64_t maxBufferSize;
    uint32_t maxVertexAttributes, maxVertexBufferArrayStride, maxInterStageShaderVariables;
    uint32_t maxColorAttachments, maxColorAttachmentBytesPerSample, maxComputeWorkgroupStorageSize;
    uint32_t maxComputeInvocationsPerWorkgroup, maxComputeWorkgroupSizeX, maxComputeWorkgroupSizeY;
    uint32_t maxComputeWorkgroupSizeZ, maxComputeWorkgroupsPerDimension, maxImmediateSize;
} WGPULimits;
typedef struct WGPUSupportedFeatures { size_t featureCount; WGPUEnum32 const *features; } WGPUSupportedFeatures;
typedef struct WGPUSupportedWGSLLanguageFeatures { size_t featureCount; WGPUEnum32 const *features; } WGPUSupportedWGSLLanguageFeatures;

typedef struct WGPUQueueDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUQueueDescriptor;
typedef struct WGPUDeviceDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label;
    size_t requiredFeatureCount; WGPUEnum32 const *requiredFeatures; WGPULimits const *requiredLimits;
    WGPUQueueDescriptor defaultQueue;
    WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
    WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;
typedef struct WGPUBufferDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUFlags usage; uint64_t size; WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;
typedef struct WGPUShaderModuleDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUShaderModuleDescriptor;
typedef struct WGPUShaderSourceWGSL { WGPUChainedStruct chain; WGPUStringView code; } WGPUShaderSourceWGSL;
typedef struct WGPUCompilationMessage {
    WGPUChainedStruct *nextInChain; WGPUStringView message; WGPUEnum32 type;
    uint64_t lineNum, linePos, offset, length;
} WGPUCompilationMessage;
typedef struct WGPUCompilationInfo {
    WGPUChainedStruct *nextInChain; size_t messageCount; WGPUCompilationMessage const *messages;
} WGPUCompilationInfo;
typedef struct WGPUConstantEntry { WGPUChainedStruct *nextInChain; WGPUStringView key; double value; } WGPUConstantEntry;
typedef struct WGPUComputeState {
    WGPUChainedStruct *nextInChain; WGPUHandle module; WGPUStringView entryPoint;
    size_t constantCount; WGPUConstantEntry const *constants;
} WGPUComputeState;
typedef struct WGPUComputePipelineDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUHandle layout; WGPUComputeState compute;
} WGPUComputePipelineDescriptor;
typedef struct WGPUBufferBindingLayout {
    WGPUChainedStruct *nextInChain; WGPUEnum32 type; WGPUBool hasDynamicOffset; uint64_t minBindingSize;
} WGPUBufferBindingLayout;
typedef struct WGPUSamplerBindingLayout { WGPUChainedStruct *nextInChain; WGPUEnum32 type; } WGPUSamplerBindingLayout;
typedef struct WGPUTextureBindingLayout {
    WGPUChainedStruct *nextInChain; WGPUEnum32 sampleType; WGPUEnum32 viewDimension; WGPUBool multisampled;
} WGPUTextureBindingLayout;
typedef struct WGPUStorageTextureBindingLayout {
    WGPUChainedStruct *nextInChain; WGPUEnum32 access; WGPUEnum32 format; WGPUEnum32 viewDimension;
} WGPUStorageTextureBindingLayout;
typedef struct WGPUBindGroupLayoutEntry {
    WGPUChainedStruct *nextInChain; uint32_t binding; WGPUFlags visibility; uint32_t bindingArraySize;
    WGPUBufferBindingLayout buffer; WGPUSamplerBindingLayout sampler; WGPUTextureBindingLayout texture;
    WGPUStorageTextureBindingLayout storageTexture;
} WGPUBindGroupLayoutEntry;
typedef struct WGPUBindGroupLayoutDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; size_t entryCount; WGPUBindGroupLayoutEntry const *entries;
} WGPUBindGroupLayoutDescriptor;
typedef struct WGPUPipelineLayoutDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; size_t bindGroupLayoutCount;
    WGPUHandle const *bindGroupLayouts; uint32_t immediateSize;
} WGPUPipelineLayoutDescriptor;
typedef struct WGPUBindGroupEntry {
    WGPUChainedStruct *nextInChain; uint32_t binding; WGPUHandle buffer; uint64_t offset; uint64_t size;
    WGPUHandle sampler; WGPUHandle textureView;
} WGPUBindGroupEntry;
typedef struct WGPUBindGroupDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUHandle layout; size_t entryCount;
    WGPUBindGroupEntry const *entries;
} WGPUBindGroupDescriptor;
typedef struct WGPUCommandEncoderDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUCommandEncoderDescriptor;
typedef struct WGPUCommandBufferDescriptor { WGPUChainedStruct *nextInChain; WGPUStringView label; } WGPUCommandBufferDescriptor;
typedef struct WGPUPassTimestampWrites {
    WGPUChainedStruct *nextInChain; WGPUHandle querySet; uint32_t beginningOfPassWriteIndex; uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;
typedef struct WGPUComputePassDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUPassTimestampWrites const *timestampWrites;
} WGPUComputePassDescriptor;
typedef struct WGPUQuerySetDescriptor {
    WGPUChainedStruct *nextInChain; WGPUStringView label; WGPUEnum32 type; uint32_t count;
} WGPUQuerySetDescriptor;
