// IW-SSIM pyramid, up along x: lo (wl×hl) zero-stuffed to 2·wl columns,
// reflect-padded, correlated with the 5-tap kernel, cropped to w ->
// tmp (w×hl). The stuffed zeros are skipped (they add exact zeros).
// Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> lo: array<f32>;
@group(0) @binding(3) var<storage, read_write> tmp: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn up_x(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.hl) {
    return;
  }
  let n2 = 2 * i32(P.wl);
  let row = gid.y * P.wl;
  var s = 0.0;
  for (var t = 0; t < 5; t++) {
    let q = reflect_idx(i32(gid.x) + t - 2, n2);
    if ((q & 1) == 0) {
      s += K[K_PYR + u32(t)] * lo[row + u32(q >> 1u)];
    }
  }
  tmp[gid.y * P.w + gid.x] = s;
}
