// IW-SSIM: raw 8/16-bit interleaved samples -> the luminance plane piq
// works on: v / max · 255, and for colour 0.299 R + 0.587 G + 0.114 B
// (rgb2yiq's Y) of those; alpha is ignored. Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> raw: array<u32>;
@group(0) @binding(2) var<storage, read_write> lum: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

fn byte_at(o: u32) -> u32 {
  return (raw[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu;
}

fn sample(o: u32) -> f32 {
  var v = byte_at(o);
  if (P.bps == 2u) {
    v = (v << 8u) | byte_at(o + 1u);
  }
  return f32(v) / P.maxv * 255.0;
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn unpack(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.h) {
    return;
  }
  let o = gid.y * P.stride + gid.x * P.channels * P.bps;
  var y: f32;
  if (P.channels <= 2u) {
    y = sample(o);
  } else {
    y = sample(o) * 0.299 + sample(o + P.bps) * 0.587 + sample(o + 2u * P.bps) * 0.114;
  }
  lum[gid.y * P.w + gid.x] = y;
}
