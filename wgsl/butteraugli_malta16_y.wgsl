// butteraugli_malta_y with one output per thread on 16x16 blocks (6,912
// bytes of workgroup memory): the fallback for devices whose workgroup
// memory limit is below the column kernels' 19,200 bytes (WebGPU's default
// limit is 16 KiB). Each output is the same operations in the same order.
//
// Butteraugli AC terms of channel Y: the Malta sums of the UHF, HF and MF
// differences (see butteraugli_malta.wgsl), the asymmetric HF term, the MF
// term and the masking-activity term. Reference planes end in 0, the
// distorted image's in 1.

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

@compute @workgroup_size(16, 16, 1)
fn malta(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
         @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x0 = i32(wid.x * 16u) - 4;
  let y0 = i32(wid.y * 16u) - 4;
  for (var k = li; k < MT_N; k += 256u) {
    let xx = x0 + i32(k % MT);
    let yy = y0 + i32(k / MT);
    var du = 0.0;
    var dh = 0.0;
    var dm = 0.0;
    if (xx >= 0 && xx < i32(w) && yy >= 0 && yy < i32(h)) {
      let j = u32(yy) * w + u32(xx);
      du = malta_diff(u0[j], u1[j], MW_UHF_Y);
      dh = malta_diff(h0[j], h1[j], MW_HF_Y);
      dm = malta_diff(m0[j], m1[j], MW_MF_Y);
    }
    mt[k] = du;
    mt[MT_N + k] = dh;
    mt[2u * MT_N + k] = dm;
  }
  workgroupBarrier();
  let x = wid.x * 16u + lid.x;
  let y = wid.y * 16u + lid.y;
  if (x >= w || y >= h) {
    return;
  }
  let b = lid.y * MT + lid.x;
  let ms = malta_hf(b) + malta_lf(MT_N + b) + malta_lf(2u * MT_N + b);
  let i = y * w + x;
  let a = asym_l2(h0[i], h1[i], ASYM_Y, ASYM_Y, ms);
  var d = m0[i] - m1[i];
  var v = d * d * L2MF_Y + a;
  d = act0[i] - act1[i];
  v += 10.0 * d * d;
  ac1[i] = v;
}
