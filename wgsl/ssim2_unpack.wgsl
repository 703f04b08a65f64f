// SSIMULACRA2 stage 1: raw interleaved sRGB samples -> linear RGB planes and
// positive-XYB planes (scale 0). Needs ssim2_color.wgsl prepended.
//
// The raw image is uploaded as it is stored (8- or 16-bit samples, any row
// stride), packed into u32 words in memory order: byte k of the image is bits
// 8*(k%4) .. 8*(k%4)+7 of word k/4. 16-bit samples are big-endian (PNG order).
// Gray is expanded to R = G = B, as libjxl does for gray images.

// The XYB outputs (bindings from 5 on) and put_xyb come from a prefix the
// host writes (ssim2XYBOut in gpu/webgpu/ssim2): three planes in three
// buffers, or in one buffer (the pyramid of all channels): WebGPU refuses
// one buffer bound writable three times. Plane c of this scale starts at
// P.base, P.base1, P.base2.
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> raw: array<u32>;
@group(0) @binding(2) var<storage, read_write> lin_r: array<f32>;
@group(0) @binding(3) var<storage, read_write> lin_g: array<f32>;
@group(0) @binding(4) var<storage, read_write> lin_b: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

fn raw_byte(off: u32) -> u32 {
  return (raw[off >> 2u] >> ((off & 3u) * 8u)) & 0xFFu;
}

// Sample c of the pixel starting at byte off, scaled to [0, 1] as libjxl
// does (f32(sample) * f32(1 / max)).
fn sample(off: u32, c: u32) -> f32 {
  if (P.bytes_per_sample == 2u) {
    let o = off + 2u * c;
    return f32((raw_byte(o) << 8u) | raw_byte(o + 1u)) * P.scale;
  }
  return f32(raw_byte(off + c)) * P.scale;
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn unpack(@builtin(global_invocation_id) gid: vec3<u32>) {
  fma_zero = P.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let off = gid.y * P.stride + gid.x * P.channels * P.bytes_per_sample;
  var r: f32;
  var g: f32;
  var b: f32;
  if (P.channels <= 2u) {
    r = sample(off, 0u);
    g = r;
    b = r;
  } else {
    r = sample(off, 0u);
    g = sample(off, 1u);
    b = sample(off, 2u);
  }
  if (P.blend != 0u) {
    // libjxl's AlphaBlend, on the sRGB-encoded values.
    let a = sample(off, P.channels - 1u);
    // Two rounded products and a sum, never contracted into an FMA.
    let ib = opq((1.0 - a) * P.bg);
    r = opq(a * r) + ib;
    g = opq(a * g) + ib;
    b = opq(a * b) + ib;
  }
  r = srgb_to_linear(r);
  g = srgb_to_linear(g);
  b = srgb_to_linear(b);
  let i = gid.y * P.width + gid.x;
  lin_r[i] = r;
  lin_g[i] = g;
  lin_b[i] = b;
  let v = linear_to_xyb(r, g, b);
  put_xyb(i, v);
}
