// Package all registers every metric's WebGPU host code with package
// webgpu (gpu/webgpu/registry.go says why metrics register rather than
// being imported by the Backend). Import it, blank, wherever a
// webgpu.Backend is constructed:
//
//	import _ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/all"
//
// A new metric's package is added here, one line.
package all

import (
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/butteraugli"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/cvvdp"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/dssim"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/iwssim"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/ssim2"
	_ "github.com/zenmetrics-go/zenmetrics/gpu/webgpu/zensim"
)
