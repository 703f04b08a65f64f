// ColorVideoVDP: the distortion map's reconstruction (cpu/cvvdp heatmap,
// lpyr_dec_2's reconstruct): from the base band up, each level is the
// coarser one enlarged (cvvdp_pyramid.wgsl's expand, one plane) plus the
// level's own band values; heat_add adds them in place, heat_final also
// maps the finest level to pycvvdp's raw heatmap, 1 − met2jod(v)/10
// (as jod_loss(v)/10: see heat_final).
// Needs cvvdp_common.wgsl. P is the level's Params.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> band: array<f32>;
@group(0) @binding(2) var<storage, read_write> acc: array<f32>;
@group(0) @binding(3) var<storage, read> K: array<f32>;  // heat_final only

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn heat_add(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.h) {
    return;
  }
  let i = gid.y * P.w + gid.x;
  acc[i] = acc[i] + band[i];
}

// jod_loss is 10 − met2jod(q), the JOD lost at met q, computed without
// the 10 − (10 − x) round trip.
fn jod_loss(q: f32) -> f32 {
  if (q <= K[K_METQT]) {
    return K[K_JODLIN] * q;
  }
  return K[K_JODA] * pow(q, K[K_JODEXP]);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn heat_final(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.h) {
    return;
  }
  let i = gid.y * P.w + gid.x;
  // pycvvdp's 1 − met2jod(q)/10 as jod_loss(q)/10. Written as the CPU
  // writes it, the H200's compiler (which may reassociate and contract
  // float arithmetic) turned it into fma(−JOD, 0.1f, 1), −1.49e-8 at JOD
  // 10, and so did (10 − JOD)/10: identical pixels (q = 0) mapped to
  // −1.49e-8 instead of 0. The loss has no such cancellation (0 for q = 0,
  // whatever the compiler does) and differs from the CPU's value by the
  // rounding of 10 − loss, at most ulp(10)/10 ≈ 1e-7.
  acc[i] = jod_loss(acc[i] + band[i]) / 10.0;
}
