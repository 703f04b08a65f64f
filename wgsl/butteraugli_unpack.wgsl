// Butteraugli stage 1: raw interleaved sRGB samples -> linear RGB planes.
//
// The raw image is uploaded as stored (8- or 16-bit big-endian samples, any
// row stride), packed into u32 words in memory order. Samples decode to
// linear light through `lut` (the host's table of libjxl's rational sRGB
// approximation, one entry per sample value). Gray is replicated to R = G =
// B. With blend set, the pixel is composited onto the background as
// butteraugli_main does: straight alpha mixed on sRGB-encoded values with
// the exact sRGB curves, then decoded again.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> lut: array<f32>;
@group(0) @binding(2) var<storage, read> raw: array<u32>;
@group(0) @binding(3) var<storage, read_write> lin_r: array<f32>;
@group(0) @binding(4) var<storage, read_write> lin_g: array<f32>;
@group(0) @binding(5) var<storage, read_write> lin_b: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

fn raw_byte(off: u32) -> u32 {
  return (raw[off >> 2u] >> ((off & 3u) * 8u)) & 0xFFu;
}

fn sample_value(off: u32, c: u32) -> u32 {
  if (P.bps == 2u) {
    let o = off + 2u * c;
    return (raw_byte(o) << 8u) | raw_byte(o + 1u);
  }
  return raw_byte(off + c);
}

fn linear_to_srgb_exact(v: f32) -> f32 {
  if (v <= 0.0) {
    return 0.0;
  }
  if (v >= 1.0) {
    return 1.0;
  }
  if (v <= 0.0031308) {
    return v * 12.92;
  }
  return pow(v, 1.0 / 2.4) * 1.055 - 0.055;
}

fn srgb_to_linear_exact(v: f32) -> f32 {
  if (v <= 0.0) {
    return 0.0;
  }
  if (v <= 0.04045) {
    return v / 12.92;
  }
  if (v >= 1.0) {
    return 1.0;
  }
  return pow((v + 0.055) / 1.055, 2.4);
}

fn blend_one(s: f32, a: f32) -> f32 {
  if (a <= 0.0) {
    return P.bg;
  }
  if (a >= 1.0) {
    return s;
  }
  let fg = a * linear_to_srgb_exact(s);
  let b = (1.0 - a) * linear_to_srgb_exact(P.bg);
  return srgb_to_linear_exact(fg + b);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn unpack(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let off = gid.y * P.stride + gid.x * P.channels * P.bps;
  var r: f32;
  var g: f32;
  var b: f32;
  if (P.channels <= 2u) {
    r = lut[sample_value(off, 0u)];
    g = r;
    b = r;
  } else {
    r = lut[sample_value(off, 0u)];
    g = lut[sample_value(off, 1u)];
    b = lut[sample_value(off, 2u)];
  }
  if (P.blend != 0u) {
    let maxv = select(255.0, 65535.0, P.bps == 2u);
    let a = f32(sample_value(off, P.channels - 1u)) * (1.0 / maxv);
    r = blend_one(r, a);
    g = blend_one(g, a);
    b = blend_one(b, a);
  }
  let i = gid.y * P.width + gid.x;
  lin_r[i] = r;
  lin_g[i] = g;
  lin_b[i] = b;
}
