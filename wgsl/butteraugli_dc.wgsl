// Butteraugli DC (low-frequency) terms: the squared LF differences of X, Y
// and B, weighted and masked by the reference's DC weight.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> l0x: array<f32>;
@group(0) @binding(2) var<storage, read> l0y: array<f32>;
@group(0) @binding(3) var<storage, read> l0b: array<f32>;
@group(0) @binding(4) var<storage, read> l1x: array<f32>;
@group(0) @binding(5) var<storage, read> l1y: array<f32>;
@group(0) @binding(6) var<storage, read> l1b: array<f32>;
@group(0) @binding(7) var<storage, read> mdc: array<f32>;
@group(0) @binding(8) var<storage, read_write> dc: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn dc_terms(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let i = gid.y * P.width + gid.x;
  var d = l0x[i] - l1x[i];
  let d0 = d * d * L2LF_X;
  d = l0y[i] - l1y[i];
  let d1 = d * d * L2LF_Y;
  d = l0b[i] - l1b[i];
  let d2 = d * d * L2LF_B;
  let md = mdc[i];
  dc[i] = d0 * md + d1 * md + d2 * md;
}
