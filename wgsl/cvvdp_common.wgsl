// ColorVideoVDP (pycvvdp 0.5.4 on images), shared declarations of the
// wgsl/cvvdp_*.wgsl kernels. The algorithm, constants and order of
// operations are those of the CPU reference cpu/cvvdp (its package doc and
// pyramid.go, score.go); the constants arrive in K, rounded to float32
// there, and the host pools the per-row sums these kernels write.

// Params describe one pyramid level (96 bytes; gpu/webgpu/cvvdp's params).
struct Params {
  w: u32,        // this level's width
  h: u32,        // and height
  wn: u32,       // the next (coarser) level's width: reduce's output, expand's input
  hn: u32,       // and height
  band: u32,     // this band's index (its CSF rows in K)
  mul: f32,      // the band's contrast factor (1 or 2)
  blur: u32,     // 1: the masker is blurred (both sides above pu_padsize)
  row_off: u32,  // where this band's first row sums go (3 per row)
  stride: u32,   // unpack: bytes per image row
  channels: u32, // unpack: samples per pixel
  bps: u32,      // unpack: bytes per sample
  lut_off: u32,  // unpack: the table's offset in LUT (0: 8-bit, 256: 16-bit)
  gray: u32,     // unpack: 1 for a grey image (the luminance in all channels)
  hlg: u32,      // unpack: 1 for an HLG display (OOTF per pixel)
  win0: u32,     // band kernels: the band row the window's first row is
  win_h: u32,    // band kernels: the window's rows (planes win_h·w apart)
  own0: u32,     // rows: the first band row whose sums this pass writes
  nown: u32,     // rows: how many (one workgroup each)
  g0: u32,       // band kernels: the level row g's buffer starts at
  g_h: u32,      // its rows (planes g_h·w apart); unpack: the rows it writes
  r_src0: u32,   // reduce_v: the level row its source buffer starts at
  r_src_h: u32,  // and that buffer's rows (planes r_src_h·w apart)
  r_out0: u32,   // reduce: the first next-level row this pass makes
  r_out_h: u32,  // and how many (the intermediate's planes r_out_h·w apart)
}

// A band's per-pixel work (expand, ref_band, dist_band, blur_h, rows)
// runs on a window of the band's rows: [win0, win0 + win_h), the whole
// band for a whole image, a strip and its halo otherwise. The Gaussian
// levels g are read at band rows (they are whole); the window planes (ex,
// mm, hb, rp, s) hold the window's rows only. A whole level has g0 = 0
// and g_h = h; in strip pairs level 0 is itself a window of rows
// [g0, g0 + g_h), unpacked from that crop of the image, and the reduce to
// level 1 runs on chunks of rows (r_src0.., r_out0..).

// K: constants (cpu/cvvdp.KernelConstants, Plan.Photometry, Plan.CSF).
const K_EPS: u32 = 0u;
const K_MASKP: u32 = 1u;
const K_EPSP: u32 = 2u;
const K_MASKQ: u32 = 3u;    // 3
const K_EPSQ: u32 = 6u;     // 3
const K_XCM: u32 = 9u;      // 9: [j][c] at 9 + 3j + c
const K_GAIN: u32 = 18u;    // 3
const K_MASKC: u32 = 21u;
const K_DMAX: u32 = 22u;
const K_SENS: u32 = 23u;
const K_CMAX: u32 = 24u;
const K_LMIN: u32 = 25u;
const K_LOGL0: u32 = 26u;
const K_LOGL1: u32 = 27u;
const K_RED: u32 = 28u;     // 3: reduce taps ¼−a/2, ¼, a
const K_EXP: u32 = 31u;     // 3: expand taps, twice those
const K_PU: u32 = 34u;      // 13: phase-uncertainty Gaussian
const K_DKL: u32 = 47u;     // 9: RGB -> DKL, row-major
const K_HLG_G1: u32 = 56u;  // HLG: γ − 1
const K_HLG_LUMA: u32 = 57u; // 3
const K_HLG_SPAN: u32 = 60u;
const K_HLG_BLACK: u32 = 61u;
const K_HLG_REFL: u32 = 62u;
const K_HLG_EXPO: u32 = 63u;
// 64, 65: unused (the distortion map's ε^4 and ε^¼ are computed in
// heat_pixel with the device's own pow: see there).
const K_JODA: u32 = 66u;    // met2jod: jod_a
const K_JODEXP: u32 = 67u;  // jod_exp
const K_JODLIN: u32 = 68u;  // the linear segment's slope
const K_METQT: u32 = 69u;   // where it ends
const K_HEATW: u32 = 70u;   // 3: channel weights of the bands below the base band
const K_HEATWB: u32 = 73u;  // 3: of the base band
const K_CSF: u32 = 80u;     // 32 per band and channel: log10 S rows

const LOG10_2: f32 = 0.30102999566398120;
const LOG2_10: f32 = 3.3219280948873623;

fn log10f(x: f32) -> f32 {
  return log2(x) * LOG10_2;
}

fn exp10f(v: f32) -> f32 {
  return exp2(v * LOG2_10);
}

// reflect_idx maps i into [0, n) as torch's 'reflect' padding does.
fn reflect_idx(i: i32, n: i32) -> i32 {
  if (i < 0) {
    return -i;
  }
  if (i >= n) {
    return 2 * (n - 1) - i;
  }
  return i;
}

// heat_pixel is the distortion map's value of one band pixel with the
// masked differences d (cpu/cvvdp heatPixel): a 4-norm over the weighted
// channels (safe_pow, no normalisation), divided by the band's factor.
fn heat_pixel(d: vec3<f32>, wo: u32, mul: f32) -> f32 {
  let e = K[K_EPS];
  // ε^4 and ε^¼ with the same pow as the terms they cancel, as the CPU
  // does: identical pixels (d = 0) then give exactly 0. Host-computed
  // values did not on the H200, whose pow differs from the host's by an
  // ulp: the map of identical images came out as −1.49e-8.
  let e4 = pow(e, 4.0);
  var s = 0.0;
  for (var c = 0u; c < 3u; c++) {
    s += pow(d[c] * K[wo + c] + e, 4.0) - e4;
  }
  return (pow(s + e, 0.25) - pow(e, 0.25)) / mul;
}
