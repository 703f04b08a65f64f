// Package perfcal holds the calibration benchmark of scripts/perf-gate.
//
// The gate compares each benchmark's time as a ratio to this one, measured
// in the same run on the same machine, so a faster or slower (or busier)
// machine moves both and the ratio stays. The workload is a fixed 3-tap
// float32 stencil over a 1 MP plane: the same mix of streaming memory and
// scalar float arithmetic as the gated kernels, in plain Go that nothing
// in the project calls, so no optimisation of the library can change it.
// Never edit the loop: a change invalidates every baseline ratio.
package perfcal
