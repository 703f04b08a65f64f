// IW-SSIM (piq 0.8.0's information_weighted_ssim), shared declarations of
// the wgsl/iwssim_*.wgsl kernels. The algorithm, constants and order are
// those of the float64 CPU reference cpu/iwssim (its package doc); these
// kernels compute the distorted image's side in float32, the reference's
// side comes prepared from that package.

struct Params {
  w: u32,        // band width (unpack: image width)
  h: u32,        // band height
  wl: u32,       // next level's width (pyramid kernels)
  hl: u32,       // next level's height
  rw: u32,       // region width  (w - 10)
  rh: u32,       // region height (h - 10)
  stride: u32,   // unpack: bytes per row
  channels: u32, // unpack: samples per pixel
  bps: u32,      // unpack: bytes per sample
  nlam: u32,     // pix: number of eigenvalues (10, 9 or 0 at the last scale)
  lam_off: u32,  // pix: offset of this scale's λ_k/σ² in K
  row_off: u32,  // rows: where the first owned row's sums go
  maxv: f32,     // unpack: 255 or 65535
  shift: f32,    // hpass, pix: subtracted from both images before the statistics
  own0: u32,     // rows: the first region row this strip owns
  nown: u32,     // rows: how many (their sums go to row_off, row_off+1, ...)
}

// K: constants (written by the host in float64 and rounded once).
const K_PYR: u32 = 0u;     // 5: binomial × √2
const K_GAUSS: u32 = 5u;   // 11: 1-D Gaussian
const K_BOX: u32 = 16u;    // 1/9
const K_C1: u32 = 17u;
const K_C2: u32 = 18u;
const K_NSQ: u32 = 19u;    // sigma_nsq
const K_INVNSQ2: u32 = 20u; // 1 / sigma_nsq²
const K_EPS: u32 = 21u;    // float64 epsilon, piq's mask threshold
const K_LAM: u32 = 32u;    // 16 per scale: λ_k / sigma_nsq²

// reflect_idx maps index i of a signal of length n padded in torch's
// 'reflect' mode (−1 → 1, n → n−2) back into [0, n).
fn reflect_idx(i: i32, n: i32) -> i32 {
  if (i < 0) {
    return -i;
  }
  if (i >= n) {
    return 2 * (n - 1) - i;
  }
  return i;
}
