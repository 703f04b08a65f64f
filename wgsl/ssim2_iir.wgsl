// SSIMULACRA2 blur: libjxl's recursive Gaussian (tools/gauss_blur.cc,
// Charalampidis 2016: sigma 1.5, N = 5, three second-order cosine filters
// k = 1, 3, 5 whose outputs are summed), reproduced operation by operation
// in f32 with the same fused multiply-adds. Library: no entry points; the
// host prepends ssim2_color.wgsl (Params) and this file to
// ssim2_hblur.wgsl and ssim2_vmaps.wgsl.
//
// Why not a FIR: in exact arithmetic this recursion is a 9-tap FIR, but
// libjxl's f32 recursion carries its own rounding (an undamped tail of the
// f32 coefficients, ~1e-6 of drift along a line), and SSIMULACRA2 reads the
// blurs through sigma - mu^2, a difference of nearly equal numbers compared
// with C2 = 0.0009. That rounding noise, clamped by max(d, 0), adds a small
// positive error libjxl's scores include: a FIR scored high-quality pairs up
// to 1.2 points above libjxl on the corpus. Reproducing the recursion keeps
// the GPU within ~1e-4 of libjxl (see the parity tests).

// The constants of libjxl's CreateRecursiveGaussian(1.5), computed on the
// host in float64 exactly as libjxl does and rounded to f32.
struct Coef {
  n2: vec4<f32>,                  // k = 1, 3, 5 in x, y, z
  d1: vec4<f32>,
  mul_in: array<vec4<f32>, 3>,    // per k, lanes 0..3 of the 4-output step
  mul_prev: array<vec4<f32>, 3>,
  mul_prev2: array<vec4<f32>, 3>,
}

const IIR_N = 5i; // libjxl's radius N
