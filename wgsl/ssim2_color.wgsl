// SSIMULACRA2 colour helpers (library: no entry points). The host prepends
// this file to ssim2_unpack.wgsl and ssim2_downsample.wgsl.
//
// Everything follows the arithmetic of libjxl v0.12.0 tools/ssimulacra2.cc,
// step by step and in f32, so the planes agree with libjxl to a few ulp:
//   sample / (2^bits - 1)                        (f32 multiply by 1/255 or 1/65535)
//   alpha blend in sRGB-encoded values           a*v + (1-a)*bg
//   sRGB -> linear                               libjxl's rational approximation
//   linear -> XYB                                opsin matrix, bias, cube root
//                                                (libjxl's bit-trick + Newton cube root)
//   MakePositiveXYB                              B := B - Y + 0.55, X := 14 X + 0.42, Y += 0.01

// Parameters shared by every SSIMULACRA2 kernel; one 256-byte block per
// dispatch configuration, so bind groups are made once and never rewritten
// (except the unpack block, which depends on the distorted image's format).
struct Params {
  width: u32,          // plane width at this scale
  height: u32,         // plane height at this scale
  src_width: u32,      // downsample: width of the previous scale
  src_height: u32,     // downsample: height of the previous scale
  stride: u32,         // unpack: bytes between rows of the raw image
  channels: u32,       // unpack: samples per pixel (1..4)
  bytes_per_sample: u32, // unpack: 1 or 2 (16-bit samples are big-endian)
  blend: u32,          // unpack: 1 if the last channel is alpha to blend on bg
  scale: f32,          // unpack: 1/255 or 1/65535 as libjxl's f32
  bg: f32,             // unpack: background value (sRGB-encoded) for alpha
  win_lo: u32,         // vmaps: first row (at this scale) whose terms are summed
  win_hi: u32,         // vmaps: one past the last such row (<= height); strips
                       // sum their interior rows only, full images [0, height)
  partial_base: u32,   // maps: first partial-sum slot for this scale/channel
  partial_count: u32,  // maps: workgroups in this dispatch (slots per quantity)
  pad0: u32,
  carry: u32,          // vmaps: offset in partials of this dispatch's recursion
                       // state carried from strip to strip (0: none, whole image)
  band_rows: u32,      // vmaps/vstate: rows per row band (0: one band)
  band_base: u32,      // vmaps/vstate: offset in partials of the band-start states
  pad1: u32,
  tile_y: u32,         // pyramid: the first row of 32x32 tiles this dispatch builds
                       // (a row band of the upload, gpu/webgpu/ssim2/bandwork.go;
                       // 0 for a whole image)
  base: u32,           // blurs/maps: first float of this job's (scale, channel)
                       // plane in every pyramid buffer bound (reference and
                       // distorted XYB, the five horizontal blurs, kept blurs:
                       // one layout); unpack/downsample: of the X plane
  base1: u32,          // unpack/downsample: first float of the Y plane
  base2: u32,          // unpack/downsample: first float of the B plane
  pad3: u32,
}

// The most (scale, channel) jobs one blur/maps dispatch takes: 6 scales × 3
// channels. The blur and maps kernels bind an array of SSIM2_JOBS Params
// (one per job, workgroup_id.z picks it), so the scales and channels that
// used to be 18 dispatches one after another (each behind a full barrier)
// run side by side in one.
const SSIM2_JOBS = 18u;

// Fused multiply-add, as libjxl's SIMD code (highway MulAdd) computes it:
// a * b + c rounded once. WGSL's fma() need not be fused (SPIR-V's Fma has
// the precision of a multiply followed by an add; Mesa's lavapipe does
// exactly that), so the host probes the device once and sets FMA_NATIVE
// only where fma() is fused. Elsewhere the fused result is emulated with
// error-free transformations: a * b = p + e exactly (Dekker's product,
// Veltkamp split at 2^12 + 1), then (p + c) by TwoSum, and the low parts
// added last. That is the correctly rounded a * b + c except in rare
// double-rounding ties (1 ulp). It matters: libjxl's blur is a recursion in
// f32 whose rounding SSIMULACRA2 reads through sigma - mu^2, so it must be
// reproduced operation for operation.
override FMA_NATIVE: bool = false;

// Some compilers (Mesa's llvmpipe) reassociate f32 arithmetic, which turns
// error-free transformations into nothing and changes libjxl's rounding
// order. Intermediates whose order matters therefore go through opq(): an
// XOR with fma_zero, a private copy of a uniform that is 0 at run time but
// unknown to the compiler, so each operation is evaluated as written (and
// a product inside opq() is never fused with a following add). Kernels set
// fma_zero first thing.
var<private> fma_zero: u32;

fn opq(x: f32) -> f32 {
  return bitcast<f32>(bitcast<u32>(x) ^ fma_zero);
}

fn opq4(x: vec4<f32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(bitcast<vec4<u32>>(x) ^ vec4<u32>(fma_zero));
}

fn fma_emulated(a: f32, b: f32, c: f32) -> f32 {
  // Split a and b into 12 high bits (mask the mantissa) and the exact rest:
  // all partial products are then exact in f32.
  let ah = bitcast<f32>(bitcast<u32>(a) & 0xFFFFF000u);
  let al = opq(a - ah);
  let bh = bitcast<f32>(bitcast<u32>(b) & 0xFFFFF000u);
  let bl = opq(b - bh);
  let p = opq(a * b);
  // e = a * b - p exactly (Dekker).
  var e = opq(opq(ah * bh) - p);
  e = opq(e + opq(ah * bl));
  e = opq(e + opq(al * bh));
  e = opq(e + opq(al * bl));
  // s + t = p + c exactly (TwoSum).
  let s = opq(p + c);
  let bb = opq(s - p);
  let t = opq(opq(p - opq(s - bb)) + opq(c - bb));
  return s + opq(t + e);
}

fn fmaf(a: f32, b: f32, c: f32) -> f32 {
  if (FMA_NATIVE) {
    return fma(a, b, c);
  }
  return fma_emulated(a, b, c);
}

fn fmaf3(a: vec3<f32>, b: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
  if (FMA_NATIVE) {
    return fma(a, b, c);
  }
  return vec3<f32>(fma_emulated(a.x, b.x, c.x), fma_emulated(a.y, b.y, c.y), fma_emulated(a.z, b.z, c.z));
}

fn fmaf4(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>) -> vec4<f32> {
  if (FMA_NATIVE) {
    return fma(a, b, c);
  }
  return vec4<f32>(fma_emulated(a.x, b.x, c.x), fma_emulated(a.y, b.y, c.y),
                   fma_emulated(a.z, b.z, c.z), fma_emulated(a.w, b.w, c.w));
}

// Correctly rounded n / d for n, d > 0, as IEEE division (libjxl's Div):
// WGSL's division may be off by 2.5 ulp. Start from it, refine once with the
// exact residual n - q * d, then keep the neighbour with the smallest exact
// residual (all share the factor d, so that is the closest quotient).
fn div_rn(n: f32, d: f32) -> f32 {
  var q = n / d;
  q = fmaf(fmaf(-q, d, n), 1.0 / d, q);
  let qb = bitcast<u32>(q);
  let lo = bitcast<f32>(qb - 1u);
  let hi = bitcast<f32>(qb + 1u);
  var best = q;
  var rb = abs(fmaf(-q, d, n));
  let rl = abs(fmaf(-lo, d, n));
  if (rl < rb) {
    best = lo;
    rb = rl;
  }
  let rh = abs(fmaf(-hi, d, n));
  if (rh < rb) {
    best = hi;
  }
  return best;
}

// Opsin absorbance matrix and bias, as libjxl computes them in f32
// (kM01 = 1 - kM02 - kM00 etc. evaluated in float). Intensity target 255
// makes libjxl's premultiplier exactly 1.
const M00 = 0.300000012;
const M01 = 0.621999979;
const M02 = 0.0780000016;
const M10 = 0.230000004;
const M11 = 0.691999972;
const M12 = 0.0780000016;
const M20 = 0.243422687;
const M21 = 0.204767451;
const M22 = 0.551809847;
const OPSIN_BIAS = 0.00379307335;
const NEG_CBRT_BIAS = -0.155954197; // -cbrtf(OPSIN_BIAS)

// sRGB transfer curve, encoded -> linear, as libjxl's TF_SRGB::DisplayFromEncoded:
// a degree-4/4 rational polynomial above 0.04045, x/12.92 below. Inputs are
// never negative here (samples and blends of samples with bg in (0, 1)).
fn srgb_to_linear(x: f32) -> f32 {
  var p = 0.821015277;
  p = fmaf(p, x, 0.796156496);
  p = fmaf(p, x, 0.162482032);
  p = fmaf(p, x, 0.0104363759);
  p = fmaf(p, x, 0.000220024833);
  var q = 0.00652120901;
  q = fmaf(q, x, -0.0551249850);
  q = fmaf(q, x, 0.498752835);
  q = fmaf(q, x, 1.07697649);
  q = fmaf(q, x, 0.263184697);
  if (x > 0.04045) {
    return div_rn(p, q);
  }
  return x * 0.0773993805;
}

// cbrt(x) + add for x >= 0, as libjxl's CubeRootAndAdd: an exponent bit trick
// for the first guess of x^(-1/3), three Newton steps, one refinement, then
// x * r^2. Using the same steps (instead of pow) keeps us within an ulp or two.
fn cube_root_add(x: f32, add: f32) -> f32 {
  let bits = bitcast<i32>(x);
  var guess = 0x54800000i - (bits >> 23u) * 0x002AAAAAi;
  if (bits == 0i) {
    guess = 0i;
  }
  var r = bitcast<f32>(guess);
  let x3 = x * 0.333333343;
  for (var i = 0; i < 3; i = i + 1) {
    let r2 = r * r;
    r = fmaf(-x3, r2 * r2, 1.33333337 * r);
  }
  var r2 = r * r;
  r = fmaf(0.333333343, fmaf(-x, r2 * r2, r), r);
  r2 = r * r;
  return fmaf(r2, x, add);
}

// Linear sRGB -> SSIMULACRA2's positive XYB (X, Y, B-Y rescaled to ~0..1).
fn linear_to_xyb(r: f32, g: f32, b: f32) -> vec3<f32> {
  let m0 = max(fmaf(M00, r, fmaf(M01, g, fmaf(M02, b, OPSIN_BIAS))), 0.0);
  let m1 = max(fmaf(M10, r, fmaf(M11, g, fmaf(M12, b, OPSIN_BIAS))), 0.0);
  let m2 = max(fmaf(M20, r, fmaf(M21, g, fmaf(M22, b, OPSIN_BIAS))), 0.0);
  let c0 = cube_root_add(m0, NEG_CBRT_BIAS);
  let c1 = cube_root_add(m1, NEG_CBRT_BIAS);
  let c2 = cube_root_add(m2, NEG_CBRT_BIAS);
  let x = 0.5 * opq(c0 - c1);
  let y = 0.5 * opq(c0 + c1);
  // opq: no reassociation, no fused x * 14 + 0.42 (libjxl rounds twice).
  return vec3<f32>(opq(x * 14.0) + 0.42, y + 0.01, opq(c2 - y) + 0.55);
}
