package wgsl

import "github.com/zenmetrics-go/zenmetrics/wgsl/internal/gen"

// SSIM2ChunkRows is R, the rows ssim2_vmaps.wgsl steps per chunk; row-band
// heights must be multiples of it (ssim2_vstate.wgsl stores band-start
// states at chunk ends).
const SSIM2ChunkRows = gen.VMapsRows
