// ColorVideoVDP: raw 8/16-bit interleaved samples -> the three DKL planes
// of pyramid level 0, or of g_h rows of it (a crop; strip pairs)
// (cpu/cvvdp toDKL): each sample through the display's
// table (linear light in cd/m², or HLG's inverse OETF, then the OOTF per
// pixel), then RGB -> DKL; grey puts the luminance in all three channels
// (pycvvdp's one-channel path). Alpha is ignored. Needs cvvdp_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> LUT: array<f32>;
@group(0) @binding(3) var<storage, read> raw: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

fn byte_at(o: u32) -> u32 {
  return (raw[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu;
}

// sample is the table's value for the code value at byte o (16-bit
// samples are big-endian, as zenmetrics.Image stores them).
fn sample(o: u32) -> f32 {
  var v = byte_at(o);
  if (P.bps == 2u) {
    v = (v << 8u) | byte_at(o + 1u);
  }
  return LUT[P.lut_off + v];
}

// hlg_ootf is cpu/cvvdp's hlgPixel for one channel value c of a pixel
// whose OOTF factor is k.
fn hlg_ootf(c: f32, k: f32) -> f32 {
  let v = c * k;
  let expo = K[K_HLG_EXPO];
  if (expo != 1.0) {
    return K[K_HLG_SPAN] * clamp(v * expo, 0.0, 1.0) + K[K_HLG_BLACK] + K[K_HLG_REFL];
  }
  return K[K_HLG_SPAN] * v + K[K_HLG_BLACK] + K[K_HLG_REFL];
}

fn hlg_k(r: f32, g: f32, b: f32) -> f32 {
  let ys = K[K_HLG_LUMA] * r + K[K_HLG_LUMA + 1u] * g + K[K_HLG_LUMA + 2u] * b;
  return pow(ys, K[K_HLG_G1]);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn unpack(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.g_h) {
    return;
  }
  let o = gid.y * P.stride + gid.x * P.channels * P.bps;
  let n = P.w * P.g_h;
  let i = gid.y * P.w + gid.x;
  if (P.gray == 1u) {
    var v = sample(o);
    if (P.hlg == 1u) {
      v = hlg_ootf(v, hlg_k(v, v, v));
    }
    dst[i] = v;
    dst[n + i] = v;
    dst[2u * n + i] = v;
    return;
  }
  var r = sample(o);
  var g = sample(o + P.bps);
  var b = sample(o + 2u * P.bps);
  if (P.hlg == 1u) {
    let k = hlg_k(r, g, b);
    r = hlg_ootf(r, k);
    g = hlg_ootf(g, k);
    b = hlg_ootf(b, k);
  }
  dst[i] = r * K[K_DKL] + g * K[K_DKL + 1u] + b * K[K_DKL + 2u];
  dst[n + i] = r * K[K_DKL + 3u] + g * K[K_DKL + 4u] + b * K[K_DKL + 5u];
  dst[2u * n + i] = r * K[K_DKL + 6u] + g * K[K_DKL + 7u] + b * K[K_DKL + 8u];
}
