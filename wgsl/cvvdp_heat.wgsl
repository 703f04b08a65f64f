// ColorVideoVDP: the distortion map's reconstruction (cpu/cvvdp heatmap,
// lpyr_dec_2's reconstruct): from the base band up, each level is the
// coarser one enlarged (cvvdp_pyramid.wgsl's expand, one plane) plus the
// level's own band values; heat_add adds them in place, heat_final also
// maps the finest level to pycvvdp's raw heatmap, 1 − met2jod(v)/10.
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

fn met2jod(q: f32) -> f32 {
  if (q <= K[K_METQT]) {
    return 10.0 - K[K_JODLIN] * q;
  }
  return 10.0 - K[K_JODA] * pow(q, K[K_JODEXP]);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn heat_final(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.h) {
    return;
  }
  let i = gid.y * P.w + gid.x;
  // (10 − JOD)/10 rather than 1 − JOD/10: a driver may divide by
  // multiplying with the reciprocal and fuse that into the subtraction
  // (1 − fma(JOD, 0.1f) is −1.49e-8 at JOD 10); subtracting first keeps
  // identical pixels (q = 0, JOD exactly 10) at exactly 0, and moves the
  // others by at most an ulp of 1 from the CPU's order.
  acc[i] = (10.0 - met2jod(acc[i] + band[i])) / 10.0;
}
