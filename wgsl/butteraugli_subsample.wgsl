// Butteraugli: 2x2 box subsampling of the three linear planes for the
// half-resolution pass. Each output is the source samples times 0.25 added
// in row order (an odd last column or row doubled afterwards, as it has
// only half the samples), the order the CPU reference adds them in.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> in_r: array<f32>;
@group(0) @binding(2) var<storage, read> in_g: array<f32>;
@group(0) @binding(3) var<storage, read> in_b: array<f32>;
@group(0) @binding(4) var<storage, read_write> out_r: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_g: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_b: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn subsample(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let sw = P.src_width;
  let sh = P.src_height;
  var acc = vec3<f32>(0.0);
  for (var dy = 0u; dy < 2u; dy++) {
    let sy = 2u * gid.y + dy;
    if (sy >= sh) {
      continue;
    }
    for (var dx = 0u; dx < 2u; dx++) {
      let sx = 2u * gid.x + dx;
      if (sx >= sw) {
        continue;
      }
      let j = sy * sw + sx;
      acc = acc + 0.25 * vec3<f32>(in_r[j], in_g[j], in_b[j]);
    }
  }
  if ((sw & 1u) != 0u && gid.x == P.width - 1u) {
    acc = acc * 2.0;
  }
  if ((sh & 1u) != 0u && gid.y == P.height - 1u) {
    acc = acc * 2.0;
  }
  let i = gid.y * P.width + gid.x;
  out_r[i] = acc.x;
  out_g[i] = acc.y;
  out_b[i] = acc.z;
}
