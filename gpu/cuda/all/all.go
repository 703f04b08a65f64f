// Package all registers every CUDA metric implementation with package
// cuda: import it (blank) wherever a cuda.Backend is made.
package all

import (
	// Butteraugli.
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/butteraugli"
	// ColorVideoVDP.
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/cvvdp"
	// DSSIM.
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/dssim"
	// IW-SSIM.
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/iwssim"
	// SSIMULACRA2.
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/ssim2"
	// zensim.
	_ "github.com/zenmetrics-go/zenmetrics/gpu/cuda/zensim"
)
