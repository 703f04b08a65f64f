// zensim stage 1: raw samples -> positive XYB planes (scale 0), and the
// 2x2 downscale to the next scale. Needs dssim_common.wgsl and
// zensim_common.wgsl prepended.
//
// xyb   one invocation per plane pixel (x < pw, crop row y). Columns past
//       the image width take the value of the column they mirror (zensim
//       pads its planes with the reflection of the last columns). Samples
//       go to linear light through the host's tables; with alpha, the
//       colour is composited over zensim's noise background and clamped to
//       [0, 1]. Then the opsin mix, the cube root (the vector one inside
//       zensim's 8-wide loop, the scalar one for the pixels it leaves to
//       its tail: which pixel is which depends on the format, see
//       cpu/zensim toXYB) and the XYB formulas.
// down  one invocation per pixel of the next scale:
//       ((p00 + p01) + p10 + p11) * 0.25 for each of the three planes.

@group(0) @binding(0) var<uniform> P: ZP;
@group(0) @binding(1) var<storage, read> kc: array<f32>;
@group(0) @binding(2) var<storage, read> raw: array<u32>;
@group(0) @binding(3) var<storage, read_write> o3: array<f32>; // X, Y, B planes

// down: the source scale's three planes, the destination's.
@group(0) @binding(1) var<storage, read> s3: array<f32>;
@group(0) @binding(2) var<storage, read_write> d3: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

// kc layout (gpu/webgpu/zensim consts): 0..8 the opsin matrix, 9 its
// bias, 10 the absorbance bias; 16.. the 8-bit sRGB table (256), then the
// 16-bit one (65536), then the alpha background (4096).
const K_LUT8: u32 = 16u;
const K_LUT16: u32 = 272u;
const K_BG: u32 = 65808u;

fn raw_byte(off: u32) -> u32 {
  return (raw[off >> 2u] >> ((off & 3u) * 8u)) & 0xFFu;
}

// sample returns the raw value of sample c of the pixel at byte off.
fn sample(off: u32, c: u32) -> u32 {
  if (P.bps == 2u) {
    let o = off + 2u * c;
    return (raw_byte(o) << 8u) | raw_byte(o + 1u);
  }
  return raw_byte(off + c);
}

fn linear(v: u32) -> f32 {
  if (P.bps == 2u) {
    return kc[K_LUT16 + v];
  }
  return kc[K_LUT8 + v];
}

// cbrt_vec: the vector loop's cube root (bit seed, two unfused Halley steps).
fn cbrt_vec(x: f32) -> f32 {
  if (x == 0.0) {
    return x;
  }
  var y = bitcast<f32>(bitcast<u32>(x) / 3u + 0x2a508c2du);
  for (var i = 0; i < 2; i++) {
    let y3 = opq(opq(y * y) * y);
    let num = opq(y3 + opq(2.0 * x));
    let den = opq(opq(2.0 * y3) + x);
    y = opq(y * div_rn(num, den));
  }
  return y;
}

// cbrt_tail: the scalar cube root of the pixels after the vector loop.
fn cbrt_tail(x: f32) -> f32 {
  if (x == 0.0) {
    return 0.0;
  }
  let ui = bitcast<u32>(x);
  var t = bitcast<f32>((ui & 0x80000000u) | ((ui & 0x7fffffffu) / 3u + 709958130u));
  for (var i = 0; i < 2; i++) {
    let r = opq(opq(t * t) * t);
    t = opq(t * div_rn(fma_rn(x, 2.0, r), fma_rn(r, 2.0, x)));
  }
  return t;
}

fn mix(r: f32, g: f32, b: f32, row: u32) -> f32 {
  return max(fma_rn(kc[row], r, fma_rn(kc[row + 1u], g, fma_rn(kc[row + 2u], b, kc[9]))), 0.0);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn xyb(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.pw || gid.y >= P.rows) {
    return;
  }
  zero_bits = P.zero;
  let w = P.w;
  // the image column this plane column shows
  var x = gid.x;
  if (x >= w) {
    let period = 2u * (w - 1u);
    x = x % period;
    if (x >= w) {
      x = period - x;
    }
  }
  let gy = P.y0 + gid.y; // image row
  let off = gid.y * P.stride + x * P.channels * P.bps;
  var r: f32;
  var g: f32;
  var b: f32;
  var vec: bool;
  if (P.channels <= 2u) {
    r = linear(sample(off, 0u));
    g = r;
    b = r;
  } else {
    r = linear(sample(off, 0u));
    g = linear(sample(off, 1u));
    b = linear(sample(off, 2u));
  }
  if (P.bps == 1u && P.alpha == 0u) {
    // zensim's opaque 8-bit path converts 64-row chunks as one run.
    let c0 = gy / 64u * 64u;
    let c1 = min(c0 + 64u, P.gh);
    let run_end = ((c1 - c0) * w) & ~7u;
    vec = (gy - c0) * w + x < run_end;
  } else {
    if (P.alpha == 1u) {
      let a = sample(off, P.channels - 1u);
      var max_a = 255u;
      if (P.bps == 2u) {
        max_a = 65535u;
      }
      if (a != max_a) {
        let bgv = kc[K_BG + ((x ^ (gy * 2654435761u)) & 0xfffu)];
        if (a == 0u) {
          r = bgv;
          g = bgv;
          b = bgv;
        } else {
          var al: f32;
          if (P.bps == 2u) {
            al = opq(f32(a) * (1.0 / 65535.0));
          } else {
            al = opq(f32(a) * (1.0 / 255.0));
          }
          let inv = opq(bgv * opq(1.0 - al));
          r = fma_rn(r, al, inv);
          g = fma_rn(g, al, inv);
          b = fma_rn(b, al, inv);
        }
      }
    }
    r = min(max(r, 0.0), 1.0);
    g = min(max(g, 0.0), 1.0);
    b = min(max(b, 0.0), 1.0);
    vec = x < (w & ~7u);
  }
  let m0 = mix(r, g, b, 0u);
  let m1 = mix(r, g, b, 3u);
  let m2 = mix(r, g, b, 6u);
  var t0: f32;
  var t1: f32;
  var t2: f32;
  if (vec) {
    t0 = cbrt_vec(m0);
    t1 = cbrt_vec(m1);
    t2 = cbrt_vec(m2);
  } else {
    t0 = cbrt_tail(m0);
    t1 = cbrt_tail(m1);
    t2 = cbrt_tail(m2);
  }
  let c0 = opq(t0 + kc[10]);
  let c1 = opq(t1 + kc[10]);
  let xx = opq(0.5 * opq(c0 - c1));
  let yy = opq(0.5 * opq(c0 + c1));
  let i = gid.y * P.pw + gid.x;
  let n = P.pw * P.rows;
  o3[i] = fma_rn(xx, 14.0, 0.42);
  o3[n + i] = opq(yy + 0.01);
  o3[2u * n + i] = opq(opq(t2 - yy) + 0.55);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn down(@builtin(global_invocation_id) gid: vec3<u32>) {
  // P: the destination scale (pw, rows); the source is 2·pw wide and
  // P.aux rows tall.
  if (gid.x >= P.pw || gid.y >= P.rows) {
    return;
  }
  zero_bits = P.zero;
  let sw = 2u * P.pw;
  let sn = sw * P.aux;
  let dn = P.pw * P.rows;
  for (var ch = 0u; ch < 3u; ch++) {
    let a = ch * sn + 2u * gid.y * sw + 2u * gid.x;
    let c = a + sw;
    d3[ch * dn + gid.y * P.pw + gid.x] = opq(opq(opq(opq(s3[a] + s3[a + 1u]) + s3[c]) + s3[c + 1u]) * 0.25);
  }
}
