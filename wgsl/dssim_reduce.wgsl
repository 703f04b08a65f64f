// DSSIM stage 3: dssim-core's pooling of each scale's SSIM map, reduced in a
// fixed order (no atomics): scores are bit-identical run to run.
// Needs dssim_common.wgsl prepended (the host does it).
//
// dssim-core pools a scale's map m (N values) as
//   avg   = max(sum(m) / N, 0) ^ (0.5 ^ scale)
//   score = 1 - sum(|avg - m|) / N
// in float64. Here:
// sums     per workgroup of the owned map rows, the sum of m - 1 (exact in
//          f32 for m in [0.5, 2], and small, so the f32 sum keeps the mean
//          to ~1e-10) -> slot.x.
// mean     one workgroup per scale: compensated sum of the slots (TwoSum in
//          a fixed tree, as ssim2_reduce does) -> res[8s + 0, 1]; the f32
//          avg the deviation pass uses -> res[8s + 2].
// devs     per workgroup: sum of |avg - m|, and the counts of m below and
//          above avg -> slot.y, .z, .w.
// finish   one workgroup per scale: compensated sum of the deviations and
//          the two counts -> res[8s + 3, 4, 5, 6].
// The host finishes in float64: the mean from res[8s + 0, 1], avg with the
// float64 power, and the deviation sum corrected from the f32 avg to the
// float64 one with the counts (exact unless a map value lies between the
// two, which moves the result by at most 2 |delta| per such value).

struct Scale {
  slot: u32,  // first slot of this scale (all strips)
  count: u32, // number of slots
  n: u32,     // map values of this scale (all strips)
  expo: f32,  // 0.5 ^ scale
}

const WG: u32 = 256u;
const PER: u32 = 16u; // map values per thread

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> map: array<f32>;
@group(0) @binding(2) var<storage, read_write> slots: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> res_in: array<f32>;

@group(0) @binding(0) var<storage, read> scales: array<Scale>;
@group(0) @binding(1) var<storage, read> slots_in: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> res: array<f32>;

var<workgroup> rs: array<f32, WG>;
var<workgroup> rc: array<f32, WG>;
var<workgroup> rlt: array<u32, WG>;
var<workgroup> rgt: array<u32, WG>;

fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  let err = (a - (s - bb)) + (b - bb);
  return vec2<f32>(s, err);
}

// Map values of this dispatch: owned rows times the width.
fn count() -> u32 {
  return (P.row1 - P.row0) * P.width;
}

@compute @workgroup_size(WG, 1, 1)
fn sums(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let n = count();
  let base = wid.x * WG * PER;
  var s = 0.0;
  for (var k = 0u; k < PER; k = k + 1u) {
    let i = base + k * WG + li;
    if (i < n) {
      s = s + (map[i] - 1.0);
    }
  }
  rs[li] = s;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k / 2u) {
    if (li < k) {
      rs[li] = rs[li] + rs[li + k];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
    slots[P.slot + wid.x].x = bitcast<u32>(rs[0]);
  }
}

@compute @workgroup_size(WG, 1, 1)
fn devs(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let n = count();
  let avg = res_in[8u * P.scale + 2u];
  let base = wid.x * WG * PER;
  var s = 0.0;
  var lt = 0u;
  var gt = 0u;
  for (var k = 0u; k < PER; k = k + 1u) {
    let i = base + k * WG + li;
    if (i < n) {
      let m = map[i];
      s = s + abs(avg - m);
      lt = lt + select(0u, 1u, m < avg);
      gt = gt + select(0u, 1u, m > avg);
    }
  }
  rs[li] = s;
  rlt[li] = lt;
  rgt[li] = gt;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k / 2u) {
    if (li < k) {
      rs[li] = rs[li] + rs[li + k];
      rlt[li] = rlt[li] + rlt[li + k];
      rgt[li] = rgt[li] + rgt[li + k];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
    let o = P.slot + wid.x;
    slots[o].y = bitcast<u32>(rs[0]);
    slots[o].z = rlt[0];
    slots[o].w = rgt[0];
  }
}

// Compensated fixed-order sum of component c of a scale's slots; thread 0
// gets (sum, error) in rs[0], rc[0].
fn slot_sum(sc: Scale, li: u32, c: u32) {
  var s = 0.0;
  var e = 0.0;
  for (var i = li; i < sc.count; i = i + WG) {
    let r = two_sum(s, bitcast<f32>(slots_in[sc.slot + i][c]));
    s = r.x;
    e = e + r.y;
  }
  rs[li] = s;
  rc[li] = e;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k / 2u) {
    if (li < k) {
      let r = two_sum(rs[li], rs[li + k]);
      rs[li] = r.x;
      rc[li] = (rc[li] + rc[li + k]) + r.y;
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(WG, 1, 1)
fn mean(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let sc = scales[wid.x];
  slot_sum(sc, li, 0u);
  if (li == 0u) {
    let avg = 1.0 + (rs[0] + rc[0]) / f32(sc.n);
    res[8u * wid.x] = rs[0];
    res[8u * wid.x + 1u] = rc[0];
    res[8u * wid.x + 2u] = pow(max(avg, 0.0), sc.expo);
  }
}

@compute @workgroup_size(WG, 1, 1)
fn finish(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let sc = scales[wid.x];
  slot_sum(sc, li, 1u);
  if (li == 0u) {
    res[8u * wid.x + 3u] = rs[0];
    res[8u * wid.x + 4u] = rc[0];
  }
  workgroupBarrier();
  var lt = 0u;
  var gt = 0u;
  for (var i = li; i < sc.count; i = i + WG) {
    lt = lt + slots_in[sc.slot + i].z;
    gt = gt + slots_in[sc.slot + i].w;
  }
  rlt[li] = lt;
  rgt[li] = gt;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k / 2u) {
    if (li < k) {
      rlt[li] = rlt[li] + rlt[li + k];
      rgt[li] = rgt[li] + rgt[li + k];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
    res[8u * wid.x + 5u] = bitcast<f32>(rlt[0]);
    res[8u * wid.x + 6u] = bitcast<f32>(rgt[0]);
  }
}
