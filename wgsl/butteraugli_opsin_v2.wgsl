// Butteraugli opsin dynamics by columns: the opsin kernel of
// butteraugli_opsin.wgsl (compiled ahead of this file, whose bindings,
// mirror and gamma_hdr this entry point shares) on blocks of 32 x 16
// outputs, threads of 32 x 8, each two rows of its column. Every output is
// the same operations in the same order as there (the pointwise part is
// copied expression for expression: the same bits, which the tests check).
// Why (CUDA's opsin_v2): a 32-thread wave is one tile row, not two rows
// of the 20-wide tile, so its workgroup loads hit no bank twice; the halo
// is 1.41 samples per output instead of 1.56; and the vertical pass reads
// 6 rows for 2 outputs instead of 10.

const OVX = 32u;           // block width
const OVY = 8u;            // block height in threads
const OVH = 16u;           // output rows per block (2 per thread)
const OVTW = 36u;          // tile width with the mirrored halo
const OVTH = 20u;          // tile height
var<workgroup> src2: array<vec3<f32>, 720>;  // OVTH x OVTW
var<workgroup> hor2: array<vec3<f32>, 640>;  // OVTH rows x OVX columns

@compute @workgroup_size(OVX, OVY, 1)
fn opsin_v2(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
            @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = i32(P.width);
  let h = i32(P.height);
  let x0 = i32(wid.x * OVX) - 2;
  let y0 = i32(wid.y * OVH) - 2;
  for (var i = li; i < OVTW * OVTH; i += OVX * OVY) {
    let sx = mirror(x0 + i32(i % OVTW), w);
    let sy = mirror(y0 + i32(i / OVTW), h);
    let j = u32(sy * w + sx);
    src2[i] = vec3<f32>(lin_r[j], lin_g[j], lin_b[j]);
  }
  workgroupBarrier();
  let w0 = K.half[0][2];
  let w1 = K.half[0][1];
  let w2 = K.half[0][0];
  for (var i = li; i < OVTH * OVX; i += OVX * OVY) {
    let r = i / OVX;
    let c = i % OVX;
    let b = r * OVTW + c;
    hor2[i] = src2[b + 2u] * w0 + (src2[b + 1u] + src2[b + 3u]) * w1 + (src2[b] + src2[b + 4u]) * w2;
  }
  workgroupBarrier();
  let ox = wid.x * OVX + lid.x;
  let oy0 = wid.y * OVH + 2u * lid.y;
  if (ox >= P.width || oy0 >= P.height) {
    return;
  }
  let it = P.intensity;
  for (var k = 0u; k < 2u; k++) {
    let oy = oy0 + k;
    if (oy >= P.height) {
      break;
    }
    let ly = 2u * lid.y + k;
    let b = ly * OVX + lid.x;
    let bl = hor2[b + 2u * OVX] * w0 + (hor2[b + OVX] + hor2[b + 3u * OVX]) * w1 + (hor2[b] + hor2[b + 4u * OVX]) * w2;
    let r0 = bl.x * it;
    let g0 = bl.y * it;
    let b0 = bl.z * it;
    let p0 = max(max(MIX0 * r0 + (MIX1 * g0 + (MIX2 * b0 + MIX3)), MIX3), 1e-4);
    let p1 = max(max(MIX4 * r0 + (MIX5 * g0 + (MIX6 * b0 + MIX7)), MIX7), 1e-4);
    let p2 = max(max(MIX8 * r0 + (MIX9 * g0 + (MIX10 * b0 + MIX11)), MIX11), 1e-4);
    let s0 = max(gamma_hdr(p0) / p0, 1e-4);
    let s1 = max(gamma_hdr(p1) / p1, 1e-4);
    let s2 = max(gamma_hdr(p2) / p2, 1e-4);
    let cc = src2[(ly + 2u) * OVTW + lid.x + 2u] * it;
    let c0 = max((MIX0 * cc.x + (MIX1 * cc.y + (MIX2 * cc.z + MIX3))) * s0, MIX3);
    let c1 = max((MIX4 * cc.x + (MIX5 * cc.y + (MIX6 * cc.z + MIX7))) * s1, MIX7);
    let c2 = max((MIX8 * cc.x + (MIX9 * cc.y + (MIX10 * cc.z + MIX11))) * s2, MIX11);
    let i = oy * P.width + ox;
    out_x[i] = c0 - c1;
    out_y[i] = c0 + c1;
    out_b[i] = c2;
  }
}
