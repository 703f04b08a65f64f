// IW-SSIM pyramid, down along y: tmp (wl×h) -> lo (wl×hl), even rows.
// Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> tmp: array<f32>;
@group(0) @binding(3) var<storage, read_write> lo: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn down_y(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.wl || gid.y >= P.hl) {
    return;
  }
  let r = 2 * i32(gid.y);
  var s = 0.0;
  for (var t = 0; t < 5; t++) {
    s += K[K_PYR + u32(t)] * tmp[u32(reflect_idx(r + t - 2, i32(P.h))) * P.wl + gid.x];
  }
  lo[gid.y * P.wl + gid.x] = s;
}
