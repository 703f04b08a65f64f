// Butteraugli AC terms of channel Y: the Malta sums of the UHF, HF and MF
// differences (see butteraugli_malta.wgsl), the asymmetric HF term, the MF
// term and the masking-activity term, MR outputs down a column per thread
// (butteraugli_malta_cols.wgsl). Reference planes end in 0, the distorted
// image's in 1.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> u0: array<f32>;
@group(0) @binding(2) var<storage, read> u1: array<f32>;
@group(0) @binding(3) var<storage, read> h0: array<f32>;
@group(0) @binding(4) var<storage, read> h1: array<f32>;
@group(0) @binding(5) var<storage, read> m0: array<f32>;
@group(0) @binding(6) var<storage, read> m1: array<f32>;
@group(0) @binding(7) var<storage, read> act0: array<f32>;
@group(0) @binding(8) var<storage, read> act1: array<f32>;
@group(0) @binding(9) var<storage, read_write> ac1: array<f32>;

@compute @workgroup_size(MW, MH, 1)
fn malta(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
         @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let bx = wid.x * MW;
  let by = wid.y * (MH * MR);
  malta_fill(li, i32(bx) - 4, i32(by) - 4, w, h, MW_UHF_Y, MW_HF_Y, MW_MF_Y);
  workgroupBarrier();
  let x = bx + lid.x;
  let y0 = by + lid.y * MR;
  if (x >= w || y0 >= h) {
    return;
  }
  let ms = malta_cols(lid.y * MR * MT + lid.x);
  for (var j = 0u; j < MR; j++) {
    if (y0 + j >= h) {
      break;
    }
    let i = (y0 + j) * w + x;
    let a = asym_l2(h0[i], h1[i], ASYM_Y, ASYM_Y, ms[j]);
    var d = m0[i] - m1[i];
    var v = d * d * L2MF_Y + a;
    d = act0[i] - act1[i];
    v += 10.0 * d * d;
    ac1[i] = v;
  }
}
