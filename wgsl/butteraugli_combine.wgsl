// Butteraugli distance map of one level: the square root of the masked DC
// and AC terms. At full resolution (mode bit 0) the half-resolution map is
// blended in; with two alpha backgrounds (mode bit 1) the map keeps the
// larger value of the two passes.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> ac0: array<f32>;
@group(0) @binding(2) var<storage, read> ac1: array<f32>;
@group(0) @binding(3) var<storage, read> ac2: array<f32>;
@group(0) @binding(4) var<storage, read> dc: array<f32>;
@group(0) @binding(5) var<storage, read> mac: array<f32>;
@group(0) @binding(6) var<storage, read> sub: array<f32>;
@group(0) @binding(7) var<storage, read_write> dm: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn combine(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let i = gid.y * P.width + gid.x;
  let m = mac[i];
  let v = dc[i] + (ac0[i] * m + ac1[i] * m + ac2[i] * m);
  var d = sqrt(v);
  if ((P.mode & 1u) != 0u) {
    // d * 0.85 rounded once: 0.85 split into two f32 parts.
    let mixed = fma(d, SUPMIX_HI, d * SUPMIX_LO);
    d = mixed + 0.5 * sub[(gid.y >> 1u) * P.src_width + (gid.x >> 1u)];
  }
  if ((P.mode & 2u) != 0u) {
    d = max(dm[i], d);
  }
  dm[i] = d;
}
