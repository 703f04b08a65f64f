// DSSIM: the per-dispatch parameters shared by dssim_color, dssim_blur and
// dssim_reduce (the host prepends this file to each). Mirrors dssimParams in
// gpu/webgpu/dssim (64 bytes).

struct Params {
  width: u32,    // plane width at this scale
  height: u32,   // rows of the plane in this buffer
  y_off: u32,    // global row (at this scale) of the buffer's row 0
  alpha: u32,    // 1: the RGBA path (premultiplied, background pattern)
  stride: u32,   // raw: bytes per row
  channels: u32, // raw: samples per pixel
  bps: u32,      // raw: bytes per sample (1 or 2)
  row0: u32,     // first owned row (ssim map, reductions)
  row1: u32,     // end of the owned rows
  slot: u32,     // first partial slot of these rows (reductions)
  scale: u32,    // scale index (reductions)
  pad0: u32,
  pad1: u32,
  pad2: u32,
  pad3: u32,
  pad4: u32,
}

// Exact f32 arithmetic. dssim-core's order of float32 operations moves the
// score (sigma² is a difference of nearly equal blurred values), so the
// kernels reproduce it operation for operation, which WGSL does not
// promise: compilers may contract a * b + c into one fused operation and
// some (Mesa's llvmpipe) reassociate sums, fma() need not be fused, and
// division may be off by 2.5 ulp. So:
//  - opq(x) is x passed through an XOR with zero_bits, a private copy of a
//    uniform that is 0 at run time but unknown to the compiler: an
//    operation whose result goes through opq() is evaluated as written and
//    never fused with the next one. Entry points set zero_bits first.
//  - fma_rn(a, b, c) is a * b + c rounded once, from error-free
//    transformations (Veltkamp split, Dekker product, TwoSum); it equals
//    the fused result except in rare double-rounding ties.
//  - div_rn(n, d) is the correctly rounded quotient: WGSL's quotient
//    refined with the exact residual, then the neighbour with the smallest
//    residual.
var<private> zero_bits: u32;

// FMA_NATIVE: the device's fma() is fused (the host probes it with
// dssim_fmaprobe.wgsl); fma_rn then uses it instead of the emulation.
override FMA_NATIVE: bool = false;

fn opq(x: f32) -> f32 {
  return bitcast<f32>(bitcast<u32>(x) ^ zero_bits);
}

fn opq4(x: vec4<f32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(bitcast<vec4<u32>>(x) ^ vec4<u32>(zero_bits));
}

fn fma_rn(a: f32, b: f32, c: f32) -> f32 {
  if (FMA_NATIVE) {
    return opq(fma(a, b, c));
  }
  let ah = bitcast<f32>(bitcast<u32>(a) & 0xFFFFF000u);
  let al = opq(a - ah);
  let bh = bitcast<f32>(bitcast<u32>(b) & 0xFFFFF000u);
  let bl = opq(b - bh);
  let p = opq(a * b);
  var e = opq(opq(ah * bh) - p);
  e = opq(e + opq(ah * bl));
  e = opq(e + opq(al * bh));
  e = opq(e + opq(al * bl));
  let s = opq(p + c);
  let v = opq(s - p);
  let t = opq(opq(p - opq(s - v)) + opq(c - v));
  return opq(s + opq(t + e));
}

fn fma_rn4(a: vec4<f32>, b: f32, c: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(fma_rn(a.x, b, c.x), fma_rn(a.y, b, c.y), fma_rn(a.z, b, c.z), fma_rn(a.w, b, c.w));
}

fn div_rn(n: f32, d: f32) -> f32 {
  var q = opq(n / d);
  q = fma_rn(fma_rn(-q, d, n), opq(1.0 / d), q);
  let qb = bitcast<u32>(q);
  let lo = bitcast<f32>(qb - 1u);
  let hi = bitcast<f32>(qb + 1u);
  var best = q;
  var rb = abs(fma_rn(-q, d, n));
  let rl = abs(fma_rn(-lo, d, n));
  if (rl < rb) {
    best = lo;
    rb = rl;
  }
  let rh = abs(fma_rn(-hi, d, n));
  if (rh < rb) {
    best = hi;
  }
  return best;
}
