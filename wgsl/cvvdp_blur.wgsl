// ColorVideoVDP: the mutual masker mm of a band blurred along x with the
// 13-tap phase-uncertainty Gaussian (reflected edges; cpu/cvvdp hblurRow)
// into hb, per channel (z), on the window's rows; cvvdp_rows.wgsl blurs along y. Needs
// cvvdp_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

// blur_h: src = mm, dst = hb.
@compute @workgroup_size(WG_X, WG_Y, 1)
fn blur_h(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.win_h) {
    return;
  }
  let w = i32(P.w);
  let ro = gid.z * P.w * P.win_h + gid.y * P.w;
  let x = i32(gid.x);
  var v: array<f32, 13>;
  for (var k = 0; k < 13; k++) {
    v[k] = src[ro + u32(reflect_idx(x + k - 6, w))];
  }
  dst[ro + gid.x] = K[K_PU + 6u] * v[6] + K[K_PU + 5u] * (v[5] + v[7]) + K[K_PU + 4u] * (v[4] + v[8]) +
    K[K_PU + 3u] * (v[3] + v[9]) + K[K_PU + 2u] * (v[2] + v[10]) + K[K_PU + 1u] * (v[1] + v[11]) +
    K[K_PU] * (v[0] + v[12]);
}
