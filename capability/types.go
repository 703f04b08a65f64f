// Package capability measures what this machine can really do (CPU features,
// every GPU adapter, features verified by running tiny kernels) and keeps a
// per-machine benchmark profile on disk that the orchestrator's chooser reads.
//
// It measures and remembers; it decides nothing. The orchestrator decides.
package capability

// CPUInfo describes the host processor, from cpuid and the OS.
type CPUInfo struct {
	Brand        string   `toml:"brand" json:"brand"`
	LogicalCores int      `toml:"logical_cores" json:"logical_cores"`
	Features     []string `toml:"features" json:"features"`
	RAMMiB       int64    `toml:"ram_mib" json:"ram_mib"`
}

// FeatureStatus is the verified state of one GPU feature: whether it works
// and how that was established ("ran kernel", "emulated-cas", ...).
type FeatureStatus struct {
	Supported bool   `toml:"supported" json:"supported"`
	How       string `toml:"how" json:"how"` // e.g. "native", "emulated-cas: 65536 adds exact", "compile error: ..."
	Value     string `toml:"value,omitempty" json:"value,omitempty"`
}

// MemoryHeap is one memory heap as the adapter reports it.
type MemoryHeap struct {
	SizeMiB    int64    `toml:"size_mib" json:"size_mib"`
	Properties []string `toml:"properties" json:"properties"`
}

// GPUInfo describes one GPU adapter as probed.
type GPUInfo struct {
	Name         string `toml:"name" json:"name"`
	Vendor       string `toml:"vendor" json:"vendor"`
	Architecture string `toml:"architecture,omitempty" json:"architecture,omitempty"`
	Runtime      string `toml:"runtime" json:"runtime"`           // "dawn/vulkan"
	Backend      string `toml:"backend" json:"backend"`           // "Vulkan"
	AdapterType  string `toml:"adapter_type" json:"adapter_type"` // "DiscreteGPU", "CPU"
	Driver       string `toml:"driver" json:"driver"`
	VendorID     uint32 `toml:"vendor_id" json:"vendor_id"`
	DeviceID     uint32 `toml:"device_id" json:"device_id"`
	// VRAMMiB is the device-local memory: live total from NVML where
	// available, else the largest device-local heap.
	VRAMMiB int64 `toml:"vram_mib" json:"vram_mib"`
	// InitMs is instance + adapter + device creation time, measured.
	InitMs float64 `toml:"init_ms" json:"init_ms"`
	// Features holds verified shader features: "f32_atomics", "f16",
	// "subgroups", "timestamp_query".
	Features map[string]string `toml:"features" json:"features"`
	// Verified holds how each feature was verified.
	Verified map[string]FeatureStatus `toml:"-" json:"verified,omitempty"`
	Limits   map[string]uint64        `toml:"-" json:"limits,omitempty"`
	Heaps    []MemoryHeap             `toml:"-" json:"heaps,omitempty"`
	// AdapterFeatures lists the WebGPU features the adapter advertises.
	AdapterFeatures []string `toml:"-" json:"adapter_features,omitempty"`
}

// Report is the result of a probe.
type Report struct {
	CPU  CPUInfo   `json:"cpu"`
	GPUs []GPUInfo `json:"gpus"`
	// Runtime names the WebGPU library file used and its ABI (nil when
	// none was loaded).
	Runtime *RuntimeInfo `json:"runtime,omitempty"`
	// Problems lists what could not be probed and why (no runtime found,
	// Null adapter refused, ...): informative, never fatal.
	Problems []string `json:"problems,omitempty"`
}
