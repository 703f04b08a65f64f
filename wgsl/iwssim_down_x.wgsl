// IW-SSIM pyramid, down along x: reflect-pad by 2, correlate with the
// 5-tap binomial ×√2, keep even columns (src w×h -> tmp wl×h).
// Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> tmp: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn down_x(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.wl || gid.y >= P.h) {
    return;
  }
  let row = gid.y * P.w;
  let c = 2 * i32(gid.x);
  var s = 0.0;
  for (var t = 0; t < 5; t++) {
    s += K[K_PYR + u32(t)] * src[row + u32(reflect_idx(c + t - 2, i32(P.w)))];
  }
  tmp[gid.y * P.wl + gid.x] = s;
}
