// zensim (imazen/zensim 0.2.7): the per-dispatch parameters and helpers
// shared by zensim_xyb, zensim_blur and zensim_reduce. The host prepends
// dssim_common.wgsl (opq, fma_rn, div_rn: exact f32 order, see there) and
// then this file. Mirrors zp in gpu/webgpu/zensim (64 bytes).
//
// The kernels reproduce cpu/zensim's per-pixel float32 values operation
// for operation (its package doc is the algorithm): every rounded
// intermediate goes through opq() so that no compiler fuses or
// reassociates it, fused multiply-adds are fma_rn and quotients div_rn.

struct ZP {
  w: u32,        // image width in pixels (xyb)
  pw: u32,       // plane width at this scale (padded)
  rows: u32,     // plane rows in the buffers (the crop's rows at this scale)
  y0: u32,       // image row (at this scale) of buffer row 0
  gh: u32,       // image rows at this scale
  stride: u32,   // raw: bytes per row
  channels: u32, // raw: samples per pixel
  bps: u32,      // raw: bytes per sample (1 or 2)
  alpha: u32,    // raw: 1 when the last sample is alpha
  k0: u32,       // vstats: first zensim strip of the dispatch
  slot: u32,     // vstats: first partial slot of this scale and channel
  gx: u32,       // vstats: workgroups per strip (column groups)
  mode: u32,     // channel c's mode in byte c: 0 none, 1 MSE, 2 edge, 3 full (cpu/zensim)
  cmp: u32,      // hblur: 1 flags any difference between src and dst
  aux: u32,      // down: the source's rows; vstats: slots per channel
  zero: u32,     // 0 at run time (opq's zero_bits)
}

// Every buffer of one scale holds the three channels' planes one after
// the other (plane c at c · pw · rows), so that one dispatch covers all
// three: the horizontal blur, one invocation per row, has three times the
// rows to spread over the device.

fn chan_mode(modes: u32, c: u32) -> u32 {
  return (modes >> (8u * c)) & 0xFFu;
}

const RADIUS: u32 = 5u;
const DIAM: u32 = 11u;
const INV_DIAM: f32 = 1.0 / 11.0;
const STRIP: u32 = 16u;
const NQ: u32 = 20u; // partial quantities: 17 sums, 3 maxima

// Window indices of a line of n samples, reflected about its ends without
// repeating them and clamped to n - 1 (cpu/zensim hAddIdx, remIdx,
// initIdx, vAddIdx; the horizontal and vertical "add" agree for n >= 6).
fn add_idx(x: u32, n: u32) -> u32 {
  var a = i32(x + RADIUS + 1u);
  let ni = i32(n);
  if (a >= ni) {
    a = abs(2 * (ni - 1) - a);
  }
  return u32(min(a, ni - 1));
}

fn rem_idx(x: u32, n: u32) -> u32 {
  let a = abs(i32(x) - i32(RADIUS));
  return u32(min(a, i32(n) - 1));
}

fn init_idx(i: u32, n: u32) -> u32 {
  if (i <= RADIUS) {
    return min(RADIUS - i, n - 1u);
  }
  return min(i - RADIUS, n - 1u);
}
