// zensim stage 3: one workgroup per scale and channel adds that channel's
// partial slots [base, base + count) (slots[2i], slots[2i+1]) into NQ values
// of res: each invocation walks the slots with stride WG in order, then a
// fixed tree. Needs dssim_common.wgsl and zensim_common.wgsl prepended.

@group(0) @binding(0) var<storage, read> slots: array<u32>;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> res: array<f32>;

override WG: u32 = 128u;

var<workgroup> red: array<f32, 2560>; // NQ × WG (WG ≤ 128)

@compute @workgroup_size(WG, 1, 1)
fn reduce(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let base = slots[2u * wid.x];
  let count = slots[2u * wid.x + 1u];
  var acc: array<f32, 20>;
  for (var i = 0u; i < NQ; i++) {
    acc[i] = 0.0;
  }
  for (var j = lid.x; j < count; j += WG) {
    let o = (base + j) * NQ;
    for (var i = 0u; i < 17u; i++) {
      acc[i] = acc[i] + part[o + i];
    }
    for (var i = 17u; i < NQ; i++) {
      acc[i] = max(acc[i], part[o + i]);
    }
  }
  for (var i = 0u; i < NQ; i++) {
    red[i * WG + lid.x] = acc[i];
  }
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    workgroupBarrier();
    if (lid.x < s) {
      for (var i = 0u; i < 17u; i++) {
        red[i * WG + lid.x] = red[i * WG + lid.x] + red[i * WG + lid.x + s];
      }
      for (var i = 17u; i < NQ; i++) {
        red[i * WG + lid.x] = max(red[i * WG + lid.x], red[i * WG + lid.x + s]);
      }
    }
  }
  if (lid.x == 0u) {
    for (var i = 0u; i < NQ; i++) {
      res[wid.x * NQ + i] = red[i * WG];
    }
  }
}
