// IW-SSIM pyramid, up along y and the band: x (w×h) -= the zero-stuffed,
// reflect-padded, 5-tap filtered rows of tmp (w×hl). Needs
// iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> tmp: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn up_y(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.h) {
    return;
  }
  let m2 = 2 * i32(P.hl);
  var s = 0.0;
  for (var t = 0; t < 5; t++) {
    let q = reflect_idx(i32(gid.y) + t - 2, m2);
    if ((q & 1) == 0) {
      s += K[K_PYR + u32(t)] * tmp[u32(q >> 1u) * P.w + gid.x];
    }
  }
  let i = gid.y * P.w + gid.x;
  x[i] = x[i] - s;
}
