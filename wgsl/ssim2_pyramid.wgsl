// SSIMULACRA2 stages 1 and 2 in one dispatch: raw samples -> linear RGB ->
// XYB at scale 0, and every 2x2 box downsample (scales 1..5) with its XYB.
// Needs ssim2_color.wgsl prepended. The values are those of
// ssim2_unpack.wgsl and ssim2_downsample.wgsl, bit for bit: the same
// functions on the same inputs, the same sums in the same order.
//
// Why: at 1 MP the GPU part of a score is dominated by dispatch latency,
// and unpack + 5 downsamples were six dispatches, each behind a full
// barrier. A workgroup takes a 32x32 tile of scale 0; scale s of that tile
// is its (32 >> s)^2 corner of scale s, and the pixels of scale s that the
// tile holds need only pixels of scale s-1 inside the tile (pixel x of
// scale s averages x' = 2x and min(2x + 1, W' - 1), both inside the tile:
// 2x <= W' - 1 because x < W = (W' + 1) / 2). So each tile builds its own
// pyramid in workgroup memory: scale 1 in registers from the scale-0
// pixels each thread unpacks, scales 2..5 from workgroup memory, a barrier
// between scales. No linear-RGB planes are written (only the downsample
// read them).
//
// Workgroup (x, y) builds tile (x, y + P.tile_y): a row band of the image
// (large images upload in bands whose cuts are multiples of 32 rows,
// gpu/webgpu/ssim2/bandwork.go) is built by a dispatch over that band's
// tile rows alone. A tile's values do not depend on which dispatch
// builds it.

@group(0) @binding(0) var<uniform> P: Params; // the unpack block of this pass (raw layout, bg)
@group(0) @binding(1) var<storage, read> raw: array<u32>;
// Per scale: width, height, base, base1, base2; L[0].pad1 is the number of
// scales. The XYB outputs (bindings from 3 on) and put_lvl come from a
// prefix the host writes (ssim2PyrOut in gpu/webgpu/ssim2).
@group(0) @binding(2) var<uniform> L: array<Params, 6>;

// Scale-1 pixels of the tile in [0, 256), scale 2 in [256, 320), then
// alternating: scale s reads what scale s-1 wrote one barrier earlier.
var<workgroup> wr: array<f32, 320>;
var<workgroup> wg: array<f32, 320>;
var<workgroup> wb: array<f32, 320>;

fn pyr_byte(off: u32) -> u32 {
  return (raw[off >> 2u] >> ((off & 3u) * 8u)) & 0xFFu;
}

fn pyr_sample(off: u32, c: u32) -> f32 {
  if (P.bytes_per_sample == 2u) {
    let o = off + 2u * c;
    return f32((pyr_byte(o) << 8u) | pyr_byte(o + 1u)) * P.scale;
  }
  return f32(pyr_byte(off + c)) * P.scale;
}

// Linear RGB of scale-0 pixel (x, y), as unpack computes it.
fn pyr_linear(x: u32, y: u32) -> vec3<f32> {
  let off = y * P.stride + x * P.channels * P.bytes_per_sample;
  var r: f32;
  var g: f32;
  var b: f32;
  if (P.channels <= 2u) {
    r = pyr_sample(off, 0u);
    g = r;
    b = r;
  } else {
    r = pyr_sample(off, 0u);
    g = pyr_sample(off, 1u);
    b = pyr_sample(off, 2u);
  }
  if (P.blend != 0u) {
    let a = pyr_sample(off, P.channels - 1u);
    let ib = opq((1.0 - a) * P.bg);
    r = opq(a * r) + ib;
    g = opq(a * g) + ib;
    b = opq(a * b) + ib;
  }
  return vec3<f32>(srgb_to_linear(r), srgb_to_linear(g), srgb_to_linear(b));
}

fn opq3(v: vec3<f32>) -> vec3<f32> {
  return vec3<f32>(opq(v.x), opq(v.y), opq(v.z));
}

// downsample's sum, row by row, then * 0.25. The operands pass through
// opq: in downsample they are loads, here some are computed in registers,
// and a product feeding the first add must not fuse with it.
fn pyr_down(a: vec3<f32>, b: vec3<f32>, c: vec3<f32>, d: vec3<f32>) -> vec3<f32> {
  return opq3(opq3(opq3(opq3(a) + opq3(b)) + opq3(c)) + opq3(d)) * 0.25;
}

fn pyr_put0(x: u32, y: u32, v: vec3<f32>) {
  put_lvl(0u, y * P.width + x, linear_to_xyb(v.x, v.y, v.z));
}

fn pyr_load(i: u32) -> vec3<f32> {
  return vec3<f32>(wr[i], wg[i], wb[i]);
}

fn pyr_store(i: u32, v: vec3<f32>) {
  wr[i] = v.x;
  wg[i] = v.y;
  wb[i] = v.z;
}

@compute @workgroup_size(16, 16, 1)
fn pyramid(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  fma_zero = P.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  let nlev = L[0].pad1;
  let w0 = P.width;
  let h0 = P.height;
  let ty = wid.y + P.tile_y; // this tile's row of tiles in the image
  // Scale 0: this thread's 2x2 block (edge pixels repeated as downsample
  // reads them), and from it scale-1 pixel (ox, oy).
  let x0 = wid.x * 32u + 2u * lid.x;
  let y0 = ty * 32u + 2u * lid.y;
  if (x0 < w0 && y0 < h0) {
    let x1 = min(x0 + 1u, w0 - 1u);
    let y1 = min(y0 + 1u, h0 - 1u);
    let c00 = pyr_linear(x0, y0);
    let c01 = pyr_linear(x1, y0);
    let c10 = pyr_linear(x0, y1);
    let c11 = pyr_linear(x1, y1);
    pyr_put0(x0, y0, c00);
    if (x1 > x0) {
      pyr_put0(x1, y0, c01);
    }
    if (y1 > y0) {
      pyr_put0(x0, y1, c10);
      if (x1 > x0) {
        pyr_put0(x1, y1, c11);
      }
    }
    if (nlev > 1u) {
      let v = pyr_down(c00, c01, c10, c11);
      pyr_store(lid.y * 16u + lid.x, v);
      let ox = wid.x * 16u + lid.x;
      let oy = ty * 16u + lid.y;
      put_lvl(1u, oy * L[1].width + ox, linear_to_xyb(v.x, v.y, v.z));
    }
  }
  // Scales 2..5 from the one before, in workgroup memory.
  var n = 16u;   // tile side at the scale before
  var src = 0u;  // where the scale before is
  var dst = 256u;
  for (var s = 2u; s < 6u; s = s + 1u) {
    workgroupBarrier();
    let m = n / 2u;
    if (s < nlev && lid.x < m && lid.y < m) {
      let ox = wid.x * m + lid.x;
      let oy = ty * m + lid.y;
      if (ox < L[s].width && oy < L[s].height) {
        let sw = L[s - 1u].width;
        let sh = L[s - 1u].height;
        let lx0 = 2u * lid.x;
        let ly0 = 2u * lid.y;
        let lx1 = min(2u * ox + 1u, sw - 1u) - wid.x * n;
        let ly1 = min(2u * oy + 1u, sh - 1u) - ty * n;
        let v = pyr_down(pyr_load(src + ly0 * n + lx0), pyr_load(src + ly0 * n + lx1),
                         pyr_load(src + ly1 * n + lx0), pyr_load(src + ly1 * n + lx1));
        pyr_store(dst + lid.y * m + lid.x, v);
        put_lvl(s, oy * L[s].width + ox, linear_to_xyb(v.x, v.y, v.z));
      }
    }
    n = m;
    let t = src;
    src = dst;
    dst = t;
  }
}
