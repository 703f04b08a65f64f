// IW-SSIM row sums of the two region planes of pix, one workgroup per
// region row the strip owns (a whole image owns them all): each invocation adds its strided columns in order, then a
// fixed tree in workgroup memory, so every sum has one order whatever the
// device (bit-identical run to run). Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;

// WG, the workgroup size, must be a power of two (the tree halves it).
override WG: u32 = 256u;
var<workgroup> part0: array<f32, WG>;
var<workgroup> part1: array<f32, WG>;

@compute @workgroup_size(WG, 1, 1)
fn rows(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let row = P.own0 + wid.x;
  let rn = P.rw * P.rh;
  var s0 = 0.0;
  var s1 = 0.0;
  if (wid.x < P.nown) {
    for (var j = lid.x; j < P.rw; j += WG) {
      s0 += src[row * P.rw + j];
      s1 += src[rn + row * P.rw + j];
    }
  }
  part0[lid.x] = s0;
  part1[lid.x] = s1;
  workgroupBarrier();
  for (var hs = WG / 2u; hs > 0u; hs = hs / 2u) {
    if (lid.x < hs) {
      part0[lid.x] = part0[lid.x] + part0[lid.x + hs];
      part1[lid.x] = part1[lid.x] + part1[lid.x + hs];
    }
    workgroupBarrier();
  }
  if (lid.x == 0u && wid.x < P.nown) {
    sums[2u * (P.row_off + wid.x)] = part0[0];
    sums[2u * (P.row_off + wid.x) + 1u] = part1[0];
  }
}
