// DSSIM (kornelski/dssim, dssim-core 3.4.0) stage 1: raw samples -> linear
// light -> the scale pyramid -> dssim-core's L*a*b* planes.
//
// unpack  raw interleaved 8/16-bit sRGB samples (any stride, packed into u32
//         words in memory order) -> linear RGBA, one vec4 per pixel. `lut`
//         is the host's table of dssim-core's to_linear per sample value.
//         Gray is replicated to R = G = B; with alpha the colours are
//         premultiplied by a / max (dssim-core's RGBAPLU), without it alpha
//         is 1 and unused (RGBLU).
// down    the next scale: the mean of each 2x2 block, ((a + b) + c + d) / 4
//         per component (dssim-core's Average4), odd last row/column dropped.
// lab     linear -> (L, a, b, 0). With alpha each pixel is first composited
//         onto dssim-core's fixed background pattern: add 1 - alpha to R, G,
//         B when bit 16, 8, 32 of (x + 11) ^ (y + 11) is set, x and y being
//         this scale's global coordinates. Then dssim-core's RGB -> XYZ
//         matrix (fused multiply-adds as it writes them), its polynomial
//         cube root with two Halley steps, and its L*a*b* scaling with the
//         offsets that keep a and b positive.
//
// Needs dssim_common.wgsl prepended (the host does it).
//
// All constants come from the host (`kc`, see gpu/webgpu/dssim/consts.go),
// each rounded to f32 the way dssim-core's compiled f32 code has them.


@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> kc: array<f32>;
// Every entry point uses bindings 0..n-1 without gaps (automatic layouts);
// variables that share a binding number belong to different entry points.
@group(0) @binding(2) var<storage, read> src_raw: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> dsrc: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> ddst: array<vec4<f32>>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 8u;

// kc layout (consts.go): 0..8 the RGB -> X, Y, Z rows (divided by the
// white point), 9 eps, 10 k, 11 16/116, 12 L scale, 13 a scale, 14 a offset,
// 15 b scale, 16 b offset, 17..19 cube-root seed c0, c1, c2, 20 c1, 21 c2
// (SSIM); 32..288 the 8-bit sample -> linear table, 288..65824 the 16-bit
// one; 65824..66080 a / 255 and 66080..131616 a / 65535 (alpha).

fn raw_byte(off: u32) -> u32 {
  return (src_raw[off >> 2u] >> ((off & 3u) * 8u)) & 0xFFu;
}

fn sample_value(off: u32, c: u32) -> u32 {
  if (P.bps == 2u) {
    let o = off + 2u * c;
    return (raw_byte(o) << 8u) | raw_byte(o + 1u);
  }
  return raw_byte(off + c);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn unpack(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  zero_bits = P.pad0;
  let off = gid.y * P.stride + gid.x * P.channels * P.bps;
  // The 8-bit table is kc[32..288), the 16-bit one follows it.
  var base = 32u;
  if (P.bps == 2u) {
    base = 32u + 256u;
  }
  var r: f32;
  var g: f32;
  var b: f32;
  if (P.channels <= 2u) {
    r = kc[base + sample_value(off, 0u)];
    g = r;
    b = r;
  } else {
    r = kc[base + sample_value(off, 0u)];
    g = kc[base + sample_value(off, 1u)];
    b = kc[base + sample_value(off, 2u)];
  }
  var a = 1.0;
  if (P.alpha != 0u) {
    // dssim-core: a as f32 / max as f32 (the host's tables of the exact
    // quotients), then each colour times it.
    var abase = 65824u;
    if (P.bps == 2u) {
      abase = 65824u + 256u;
    }
    a = kc[abase + sample_value(off, P.channels - 1u)];
    r = r * a;
    g = g * a;
    b = b * a;
  }
  dst[gid.y * P.width + gid.x] = vec4<f32>(r, g, b, a);
}

// P describes the destination (half-size) plane; bindings: P, source, destination.
@compute @workgroup_size(WG_X, WG_Y, 1)
fn down(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  zero_bits = P.pad0;
  let sw = P.stride; // here: the source plane's width in pixels
  let t = 2u * gid.y * sw + 2u * gid.x;
  let s = opq4(opq4(opq4(dsrc[t] + dsrc[t + 1u]) + dsrc[t + sw]) + dsrc[t + sw + 1u]);
  ddst[gid.y * P.width + gid.x] = s * 0.25;
}

fn cbrt_poly(x: f32) -> f32 {
  var y = opq(opq(opq(opq(kc[19] * x) + kc[18]) * x) + kc[17]);
  for (var i = 0; i < 2; i = i + 1) {
    let y3 = opq(opq(y * y) * y);
    let num = opq(y * opq(y3 + opq(2.0 * x)));
    let den = opq(opq(2.0 * y3) + x);
    y = div_rn(num, den);
  }
  return y;
}

fn lab_f(v: f32) -> f32 {
  if (v > kc[9]) {
    return opq(cbrt_poly(v) - kc[11]);
  }
  return opq(kc[10] * v);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn lab(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  zero_bits = P.pad0;
  let i = gid.y * P.width + gid.x;
  let px = src[i];
  var r = px.x;
  var g = px.y;
  var b = px.z;
  if (P.alpha != 0u) {
    let n = (gid.x + 11u) ^ (gid.y + P.y_off + 11u);
    let na = opq(1.0 - px.w);
    if ((n & 16u) != 0u) {
      r = opq(r + na);
    }
    if ((n & 8u) != 0u) {
      g = opq(g + na);
    }
    if ((n & 32u) != 0u) {
      b = opq(b + na);
    }
  }
  let fx = fma_rn(b, kc[2], fma_rn(g, kc[1], opq(r * kc[0])));
  let fy = fma_rn(b, kc[5], fma_rn(g, kc[4], opq(r * kc[3])));
  let fz = fma_rn(b, kc[8], fma_rn(g, kc[7], opq(r * kc[6])));
  let X = lab_f(fx);
  let Y = lab_f(fy);
  let Z = lab_f(fz);
  dst[i] = vec4<f32>(opq(Y * kc[12]), fma_rn(kc[13], opq(X - Y), kc[14]), fma_rn(kc[15], opq(Y - Z), kc[16]), 0.0);
}
