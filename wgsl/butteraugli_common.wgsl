// Butteraugli on WebGPU: declarations shared by every Butteraugli module.
// The host prepends a block of `const` values (exact f32 bit patterns of
// the constants the CPU reference derives in mixed precision, see
// gpu/webgpu/butteraugli.go) and then this file.

// Per-dispatch parameters (64 bytes). Fields a kernel does not use are 0.
struct Params {
  width: u32,       // plane width of this level
  height: u32,      // plane height of this level
  stride: u32,      // unpack: bytes per raw row
  channels: u32,    // unpack: samples per pixel
  bps: u32,         // unpack: bytes per sample (1 or 2)
  blend: u32,       // unpack: composite onto bg (image has alpha)
  bg: f32,          // unpack: background, linear (0 or 1)
  mode: u32,        // combine: bit 0 add the half-resolution map, bit 1 max with dm
  src_width: u32,   // subsample: source size; reduce: items per thread
  src_height: u32,  // reduce: number of source items
  pnorm: f32,       // reduce: the extra p (0: none)
  intensity: f32,  // opsin: nits of linear 1.0
  row0: u32,        // opsin, row blurs: first output row of the dispatch (win_end)
  row_end: u32,     // opsin, row blurs: end of the output rows, 0 for the height
  pad3: u32,
  pad4: u32,
}

// win_end is the end of the output rows a row-local kernel (opsin, a row
// blur) writes: its workgroup y covers rows from p.row0 on, and a banded
// score runs such a kernel in row windows [row0, row_end) as the bands
// arrive (gpu/webgpu/butteraugli/band.go). A level's own block has both
// 0: the whole plane, the plain dispatch. Only which rows a dispatch
// covers changes, never an output's arithmetic.
fn win_end(p: Params) -> u32 {
  return select(p.height, p.row_end, p.row_end != 0u);
}

// One truncated Gaussian: full[i] are the 2*off+1 raw taps, half[i] the
// first off+1 taps divided by their total (outermost first).
struct Kernel {
  off: u32,
  k0: u32,
  k1: u32,
  k2: u32,
  full: array<vec4<f32>, 9>,
  half: array<vec4<f32>, 5>,
}

// removeRange: shrink towards zero by w.
fn remove_range(w: f32, x: f32) -> f32 {
  if (x > w) {
    return x - w;
  }
  if (x < -w) {
    return x + w;
  }
  return 0.0;
}

// amplifyRange: double inside [-w, w], shift by w outside.
fn amplify_range(w: f32, x: f32) -> f32 {
  if (x > w) {
    return x + w;
  }
  if (x < -w) {
    return x - w;
  }
  return x + x;
}

// maximumClamp: compress values beyond +-m.
fn maximum_clamp(m: f32, v: f32) -> f32 {
  if (v >= m) {
    return (v - m) * MAXCLAMP_MUL + m;
  }
  if (v < -m) {
    return (v + m) * MAXCLAMP_MUL - m;
  }
  return v;
}
