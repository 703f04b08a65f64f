package wgpu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// layouts maps every Go mirror struct to the C struct(s) it must match.
var layouts = []struct {
	c   []string
	val any
}{
	{[]string{"WGPUStringView"}, StringView{}},
	{[]string{"WGPUChainedStruct"}, ChainedStruct{}},
	{[]string{"WGPUInstanceCapabilities"}, InstanceCapabilities{}},
	{[]string{"WGPUInstanceDescriptor"}, InstanceDescriptor{}},
	{[]string{"WGPUDawnTogglesDescriptor"}, DawnTogglesDescriptor{}},
	{[]string{"WGPURequestAdapterOptions"}, RequestAdapterOptions{}},
	{[]string{"WGPUFuture"}, Future{}},
	{[]string{"WGPUFutureWaitInfo"}, FutureWaitInfo{}},
	{[]string{"WGPURequestAdapterCallbackInfo", "WGPURequestDeviceCallbackInfo", "WGPUBufferMapCallbackInfo",
		"WGPUPopErrorScopeCallbackInfo", "WGPUQueueWorkDoneCallbackInfo", "WGPUCompilationInfoCallbackInfo",
		"WGPUDeviceLostCallbackInfo", "WGPUCreateComputePipelineAsyncCallbackInfo"}, CallbackInfo{}},
	{[]string{"WGPUUncapturedErrorCallbackInfo", "WGPULoggingCallbackInfo"}, UncapturedErrorCallbackInfo{}},
	{[]string{"WGPUAdapterInfo"}, AdapterInfo{}},
	{[]string{"WGPUMemoryHeapInfo"}, MemoryHeapInfo{}},
	{[]string{"WGPUAdapterPropertiesMemoryHeaps"}, AdapterPropertiesMemoryHeaps{}},
	{[]string{"WGPUAdapterPropertiesVk"}, AdapterPropertiesVk{}},
	{[]string{"WGPULimits"}, Limits{}},
	{[]string{"WGPUSupportedFeatures", "WGPUSupportedWGSLLanguageFeatures"}, SupportedFeatures{}},
	{[]string{"WGPUQueueDescriptor"}, QueueDescriptor{}},
	{[]string{"WGPUDeviceDescriptor"}, DeviceDescriptor{}},
	{[]string{"WGPUBufferDescriptor"}, BufferDescriptor{}},
	{[]string{"WGPUShaderModuleDescriptor"}, ShaderModuleDescriptor{}},
	{[]string{"WGPUShaderSourceWGSL"}, ShaderSourceWGSL{}},
	{[]string{"WGPUCompilationMessage"}, CompilationMessage{}},
	{[]string{"WGPUCompilationInfo"}, CompilationInfo{}},
	{[]string{"WGPUConstantEntry"}, ConstantEntry{}},
	{[]string{"WGPUComputeState"}, ComputeState{}},
	{[]string{"WGPUComputePipelineDescriptor"}, ComputePipelineDescriptor{}},
	{[]string{"WGPUBufferBindingLayout"}, BufferBindingLayout{}},
	{[]string{"WGPUSamplerBindingLayout"}, SamplerBindingLayout{}},
	{[]string{"WGPUTextureBindingLayout"}, TextureBindingLayout{}},
	{[]string{"WGPUStorageTextureBindingLayout"}, StorageTextureBindingLayout{}},
	{[]string{"WGPUBindGroupLayoutEntry"}, BindGroupLayoutEntry{}},
	{[]string{"WGPUBindGroupLayoutDescriptor"}, BindGroupLayoutDescriptor{}},
	{[]string{"WGPUPipelineLayoutDescriptor"}, PipelineLayoutDescriptor{}},
	{[]string{"WGPUBindGroupEntry"}, BindGroupEntry{}},
	{[]string{"WGPUBindGroupDescriptor"}, BindGroupDescriptor{}},
	{[]string{"WGPUCommandEncoderDescriptor"}, CommandEncoderDescriptor{}},
	{[]string{"WGPUCommandBufferDescriptor"}, CommandBufferDescriptor{}},
	{[]string{"WGPUPassTimestampWrites"}, PassTimestampWrites{}},
	{[]string{"WGPUComputePassDescriptor"}, ComputePassDescriptor{}},
	{[]string{"WGPUQuerySetDescriptor"}, QuerySetDescriptor{}},
}

// cField is the C name of a Go field: the first letter lower-cased, except
// where the header spells it otherwise.
func cField(goStruct, field string) string {
	if goStruct+"."+field == "Future.ID" {
		return "id"
	}
	return strings.ToLower(field[:1]) + field[1:]
}

// goLayout returns "CName sizeof N" and "CName.field offset size" lines.
func goLayout() []string {
	var out []string
	for _, l := range layouts {
		t := reflect.TypeOf(l.val)
		for _, c := range l.c {
			out = append(out, fmt.Sprintf("%s sizeof %d", c, t.Size()))
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if f.Name == "_" {
					continue
				}
				out = append(out, fmt.Sprintf("%s.%s %d %d", c, cField(t.Name(), f.Name), f.Offset, f.Type.Size()))
			}
		}
	}
	return out
}

// cProgram prints the same lines from C (and, with enums, the values).
func cProgram(include string, withEnums bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#include <stdio.h>\n#include <stddef.h>\n#include \"%s\"\nint main(void) {\n", include)
	for _, line := range goLayout() {
		f := strings.Fields(line)
		if f[1] == "sizeof" {
			fmt.Fprintf(&b, "  printf(\"%s sizeof %%zu\\n\", sizeof(%s));\n", f[0], f[0])
			continue
		}
		s, field, _ := strings.Cut(f[0], ".")
		fmt.Fprintf(&b, "  printf(\"%s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s*)0)->%s));\n", f[0], s, field, s, field)
	}
	if withEnums {
		for _, e := range enumValues {
			fmt.Fprintf(&b, "  printf(\"%s = %%llu\\n\", (unsigned long long)(%s));\n", e.c, e.c)
		}
	}
	b.WriteString("  return 0;\n}\n")
	return b.String()
}

func runC(t *testing.T, gcc, header string, withEnums bool) []string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(src, []byte(cProgram(filepath.Base(header), withEnums)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layout")
	out, err := exec.Command(gcc, "-std=c11", "-Wall", "-I", filepath.Dir(header), "-o", bin, src).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc on %s: %v\n%s", header, err, out)
	}
	out, err = exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("running layout program: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func compareLayout(t *testing.T, header string, c []string) {
	t.Helper()
	g := goLayout()
	if len(c) < len(g) {
		t.Fatalf("%s: C printed %d lines, Go %d", header, len(c), len(g))
	}
	structs, fields, bad := 0, 0, 0
	for i := range g {
		if g[i] != c[i] {
			t.Errorf("%s: Go %q, C %q", header, g[i], c[i])
			bad++
			continue
		}
		if strings.Contains(g[i], " sizeof ") {
			structs++
		} else {
			fields++
		}
	}
	if bad == 0 {
		t.Logf("%s: %d structs, %d fields: Go offsets and sizes match C", header, structs, fields)
	}
}

// mirrorHeaders names the C mirror header checked for each ABI in abis.
var mirrorHeaders = map[string]string{"dawn-2025-06": "testdata/abi_mirror.h"}

// TestLayout checks every Go mirror struct against gcc's offsetof/sizeof:
// always against testdata/abi_mirror.h (the project's own C declarations),
// and also against Dawn's generated webgpu.h when ZENMETRICS_WEBGPU_HEADER
// names one (then enum and flag values are compared too).
func TestLayout(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: layout check skipped")
	}
	// One C mirror per supported ABI (abi_select.go). Today there is one
	// ABI: bun-webgpu 0.1.5 and 0.1.7 ship the same Dawn build, so one
	// table and one mirror serve both; a new ABI without a mirror here
	// fails this test.
	for _, a := range abis {
		name, ok := mirrorHeaders[a.Name]
		if !ok {
			t.Errorf("ABI %s has no C mirror header in mirrorHeaders: its layouts are unchecked", a.Name)
			continue
		}
		mirror, _ := filepath.Abs(name)
		t.Logf("ABI %s (%s): %s", a.Name, strings.Join(a.Packages, ", "), name)
		compareLayout(t, mirror, runC(t, gcc, mirror, false))
	}

	h := os.Getenv("ZENMETRICS_WEBGPU_HEADER")
	if h == "" {
		t.Log("ZENMETRICS_WEBGPU_HEADER not set: not checked against Dawn's webgpu.h")
		return
	}
	c := runC(t, gcc, h, true)
	nl := len(goLayout())
	compareLayout(t, h, c[:nl])
	bad := 0
	for i, e := range enumValues {
		want := fmt.Sprintf("%s = %d", e.c, e.v)
		got := ""
		if nl+i < len(c) {
			got = c[nl+i]
		}
		if got != want {
			t.Errorf("enum: Go %q, header %q", want, got)
			bad++
		}
	}
	if bad == 0 {
		t.Logf("%s: %d enum/flag values match", h, len(enumValues))
	}
}

// TestStructsAreComplete makes sure every struct in abi.go is in the
// layout table (a new mirror must be checked too).
func TestStructsAreComplete(t *testing.T) {
	have := map[string]bool{}
	for _, l := range layouts {
		have[reflect.TypeOf(l.val).Name()] = true
	}
	src, err := os.ReadFile("abi.go")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, line := range strings.Split(string(src), "\n") {
		var name string
		if _, err := fmt.Sscanf(line, "type %s struct {", &name); err == nil && !have[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("structs without a layout check: %v", missing)
	}
	if len(have) < 40 {
		t.Fatalf("only %d structs in the table", len(have))
	}
}

// enumValues pairs C constant names of webgpu.h with the Go values.
var enumValues = []struct {
	c string
	v uint64
}{
	{"WGPUSType_ShaderSourceSPIRV", uint64(STypeShaderSourceSPIRV)},
	{"WGPUSType_ShaderSourceWGSL", uint64(STypeShaderSourceWGSL)},
	{"WGPUSType_DawnTogglesDescriptor", uint64(STypeDawnTogglesDescriptor)},
	{"WGPUSType_AdapterPropertiesMemoryHeaps", uint64(STypeAdapterPropertiesMemoryHeaps)},
	{"WGPUSType_AdapterPropertiesD3D", uint64(STypeAdapterPropertiesD3D)},
	{"WGPUSType_AdapterPropertiesVk", uint64(STypeAdapterPropertiesVk)},
	{"WGPUBackendType_Undefined", uint64(BackendUndefined)},
	{"WGPUBackendType_Null", uint64(BackendNull)},
	{"WGPUBackendType_WebGPU", uint64(BackendWebGPU)},
	{"WGPUBackendType_D3D11", uint64(BackendD3D11)},
	{"WGPUBackendType_D3D12", uint64(BackendD3D12)},
	{"WGPUBackendType_Metal", uint64(BackendMetal)},
	{"WGPUBackendType_Vulkan", uint64(BackendVulkan)},
	{"WGPUBackendType_OpenGL", uint64(BackendOpenGL)},
	{"WGPUBackendType_OpenGLES", uint64(BackendOpenGLES)},
	{"WGPUAdapterType_DiscreteGPU", uint64(AdapterTypeDiscreteGPU)},
	{"WGPUAdapterType_IntegratedGPU", uint64(AdapterTypeIntegratedGPU)},
	{"WGPUAdapterType_CPU", uint64(AdapterTypeCPU)},
	{"WGPUAdapterType_Unknown", uint64(AdapterTypeUnknown)},
	{"WGPUPowerPreference_Undefined", uint64(PowerPreferenceUndefined)},
	{"WGPUPowerPreference_LowPower", uint64(PowerPreferenceLowPower)},
	{"WGPUPowerPreference_HighPerformance", uint64(PowerPreferenceHighPerformance)},
	{"WGPUFeatureLevel_Undefined", uint64(FeatureLevelUndefined)},
	{"WGPUFeatureLevel_Compatibility", uint64(FeatureLevelCompatibility)},
	{"WGPUFeatureLevel_Core", uint64(FeatureLevelCore)},
	{"WGPUCallbackMode_WaitAnyOnly", uint64(CallbackModeWaitAnyOnly)},
	{"WGPUCallbackMode_AllowProcessEvents", uint64(CallbackModeAllowProcessEvents)},
	{"WGPUCallbackMode_AllowSpontaneous", uint64(CallbackModeAllowSpontaneous)},
	{"WGPUStatus_Success", uint64(StatusSuccess)},
	{"WGPUStatus_Error", uint64(StatusError)},
	{"WGPUWaitStatus_Success", uint64(WaitStatusSuccess)},
	{"WGPUWaitStatus_TimedOut", uint64(WaitStatusTimedOut)},
	{"WGPUWaitStatus_Error", uint64(WaitStatusError)},
	{"WGPURequestAdapterStatus_Success", uint64(RequestAdapterStatusSuccess)},
	{"WGPURequestAdapterStatus_CallbackCancelled", uint64(RequestAdapterStatusCallbackCancelled)},
	{"WGPURequestAdapterStatus_Unavailable", uint64(RequestAdapterStatusUnavailable)},
	{"WGPURequestAdapterStatus_Error", uint64(RequestAdapterStatusError)},
	{"WGPURequestDeviceStatus_Success", uint64(RequestDeviceStatusSuccess)},
	{"WGPURequestDeviceStatus_CallbackCancelled", uint64(RequestDeviceStatusCallbackCancelled)},
	{"WGPURequestDeviceStatus_Error", uint64(RequestDeviceStatusError)},
	{"WGPUMapAsyncStatus_Success", uint64(MapAsyncStatusSuccess)},
	{"WGPUMapAsyncStatus_CallbackCancelled", uint64(MapAsyncStatusCallbackCancelled)},
	{"WGPUMapAsyncStatus_Error", uint64(MapAsyncStatusError)},
	{"WGPUMapAsyncStatus_Aborted", uint64(MapAsyncStatusAborted)},
	{"WGPUPopErrorScopeStatus_Success", uint64(PopErrorScopeStatusSuccess)},
	{"WGPUPopErrorScopeStatus_CallbackCancelled", uint64(PopErrorScopeStatusCallbackCancelled)},
	{"WGPUPopErrorScopeStatus_Error", uint64(PopErrorScopeStatusError)},
	{"WGPUQueueWorkDoneStatus_Success", uint64(QueueWorkDoneStatusSuccess)},
	{"WGPUQueueWorkDoneStatus_CallbackCancelled", uint64(QueueWorkDoneStatusCallbackCancelled)},
	{"WGPUQueueWorkDoneStatus_Error", uint64(QueueWorkDoneStatusError)},
	{"WGPUCompilationInfoRequestStatus_Success", uint64(CompilationInfoRequestStatusSuccess)},
	{"WGPUCompilationInfoRequestStatus_CallbackCancelled", uint64(CompilationInfoRequestStatusCallbackCancelled)},
	{"WGPUCompilationMessageType_Error", uint64(CompilationMessageTypeError)},
	{"WGPUCompilationMessageType_Warning", uint64(CompilationMessageTypeWarning)},
	{"WGPUCompilationMessageType_Info", uint64(CompilationMessageTypeInfo)},
	{"WGPUCreatePipelineAsyncStatus_Success", uint64(CreatePipelineAsyncStatusSuccess)},
	{"WGPUCreatePipelineAsyncStatus_CallbackCancelled", uint64(CreatePipelineAsyncStatusCallbackCancelled)},
	{"WGPUCreatePipelineAsyncStatus_ValidationError", uint64(CreatePipelineAsyncStatusValidationError)},
	{"WGPUCreatePipelineAsyncStatus_InternalError", uint64(CreatePipelineAsyncStatusInternalError)},
	{"WGPUErrorType_NoError", uint64(ErrorTypeNoError)},
	{"WGPUErrorType_Validation", uint64(ErrorTypeValidation)},
	{"WGPUErrorType_OutOfMemory", uint64(ErrorTypeOutOfMemory)},
	{"WGPUErrorType_Internal", uint64(ErrorTypeInternal)},
	{"WGPUErrorType_Unknown", uint64(ErrorTypeUnknown)},
	{"WGPUErrorFilter_Validation", uint64(ErrorFilterValidation)},
	{"WGPUErrorFilter_OutOfMemory", uint64(ErrorFilterOutOfMemory)},
	{"WGPUErrorFilter_Internal", uint64(ErrorFilterInternal)},
	{"WGPUDeviceLostReason_Unknown", uint64(DeviceLostReasonUnknown)},
	{"WGPUDeviceLostReason_Destroyed", uint64(DeviceLostReasonDestroyed)},
	{"WGPUDeviceLostReason_CallbackCancelled", uint64(DeviceLostReasonCallbackCancelled)},
	{"WGPUDeviceLostReason_FailedCreation", uint64(DeviceLostReasonFailedCreation)},
	{"WGPUBufferBindingType_BindingNotUsed", uint64(BufferBindingTypeBindingNotUsed)},
	{"WGPUBufferBindingType_Undefined", uint64(BufferBindingTypeUndefined)},
	{"WGPUBufferBindingType_Uniform", uint64(BufferBindingTypeUniform)},
	{"WGPUBufferBindingType_Storage", uint64(BufferBindingTypeStorage)},
	{"WGPUBufferBindingType_ReadOnlyStorage", uint64(BufferBindingTypeReadOnlyStorage)},
	{"WGPUBufferMapState_Unmapped", uint64(BufferMapStateUnmapped)},
	{"WGPUBufferMapState_Pending", uint64(BufferMapStatePending)},
	{"WGPUBufferMapState_Mapped", uint64(BufferMapStateMapped)},
	{"WGPUQueryType_Occlusion", uint64(QueryTypeOcclusion)},
	{"WGPUQueryType_Timestamp", uint64(QueryTypeTimestamp)},
	{"WGPUFeatureName_DepthClipControl", uint64(FeatureDepthClipControl)},
	{"WGPUFeatureName_Depth32FloatStencil8", uint64(FeatureDepth32FloatStencil8)},
	{"WGPUFeatureName_TimestampQuery", uint64(FeatureTimestampQuery)},
	{"WGPUFeatureName_TextureCompressionBC", uint64(FeatureTextureCompressionBC)},
	{"WGPUFeatureName_IndirectFirstInstance", uint64(FeatureIndirectFirstInstance)},
	{"WGPUFeatureName_ShaderF16", uint64(FeatureShaderF16)},
	{"WGPUFeatureName_Float32Filterable", uint64(FeatureFloat32Filterable)},
	{"WGPUFeatureName_Subgroups", uint64(FeatureSubgroups)},
	{"WGPUFeatureName_CoreFeaturesAndLimits", uint64(FeatureCoreFeaturesAndLimits)},
	{"WGPUFeatureName_DawnNative", uint64(FeatureDawnNative)},
	{"WGPUFeatureName_ChromiumExperimentalTimestampQueryInsidePasses", uint64(FeatureTimestampQueryInsidePasses)},
	{"WGPUFeatureName_ImplicitDeviceSynchronization", uint64(FeatureImplicitDeviceSynchronization)},
	{"WGPUFeatureName_AdapterPropertiesMemoryHeaps", uint64(FeatureAdapterPropertiesMemoryHeaps)},
	{"WGPUFeatureName_AdapterPropertiesD3D", uint64(FeatureAdapterPropertiesD3D)},
	{"WGPUFeatureName_AdapterPropertiesVk", uint64(FeatureAdapterPropertiesVk)},
	{"WGPUFeatureName_ChromiumExperimentalSubgroupMatrix", uint64(FeatureSubgroupMatrix)},
	{"WGPUBufferUsage_None", uint64(BufferUsageNone)},
	{"WGPUBufferUsage_MapRead", uint64(BufferUsageMapRead)},
	{"WGPUBufferUsage_MapWrite", uint64(BufferUsageMapWrite)},
	{"WGPUBufferUsage_CopySrc", uint64(BufferUsageCopySrc)},
	{"WGPUBufferUsage_CopyDst", uint64(BufferUsageCopyDst)},
	{"WGPUBufferUsage_Index", uint64(BufferUsageIndex)},
	{"WGPUBufferUsage_Vertex", uint64(BufferUsageVertex)},
	{"WGPUBufferUsage_Uniform", uint64(BufferUsageUniform)},
	{"WGPUBufferUsage_Storage", uint64(BufferUsageStorage)},
	{"WGPUBufferUsage_Indirect", uint64(BufferUsageIndirect)},
	{"WGPUBufferUsage_QueryResolve", uint64(BufferUsageQueryResolve)},
	{"WGPUMapMode_None", uint64(MapModeNone)},
	{"WGPUMapMode_Read", uint64(MapModeRead)},
	{"WGPUMapMode_Write", uint64(MapModeWrite)},
	{"WGPUShaderStage_None", uint64(ShaderStageNone)},
	{"WGPUShaderStage_Vertex", uint64(ShaderStageVertex)},
	{"WGPUShaderStage_Fragment", uint64(ShaderStageFragment)},
	{"WGPUShaderStage_Compute", uint64(ShaderStageCompute)},
	{"WGPUHeapProperty_DeviceLocal", uint64(HeapPropertyDeviceLocal)},
	{"WGPUHeapProperty_HostVisible", uint64(HeapPropertyHostVisible)},
	{"WGPUHeapProperty_HostCoherent", uint64(HeapPropertyHostCoherent)},
	{"WGPUHeapProperty_HostUncached", uint64(HeapPropertyHostUncached)},
	{"WGPUHeapProperty_HostCached", uint64(HeapPropertyHostCached)},
}
