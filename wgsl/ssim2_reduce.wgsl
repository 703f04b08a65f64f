// SSIMULACRA2 final reduction: one workgroup per (scale, channel, term) sums
// that term's per-workgroup partial sums written by ssim2_maps.wgsl.
//
// Deterministic and compensated: thread t adds slots t, t + WG, t + 2 WG, ...
// in order, keeping the rounding error of each addition (TwoSum), then the threads' (sum, compensation) pairs
// are merged by a fixed binary tree using TwoSum, so the rounding error of
// every addition is carried along. The result is written as two f32 (sum and
// error) that the host adds in float64; the relative error of a sum is then a
// few f32 ulp of the largest partial, independent of the number of slots.
// (No multiplications appear, so FMA contraction cannot change the result.)

struct Term {
  base: u32,  // first partial slot of this term
  count: u32, // number of slots
  pad0: u32,
  pad1: u32,
}

@group(0) @binding(0) var<storage, read> terms: array<Term>;
@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;

override WG: u32 = 256u; // power of two

var<workgroup> rs: array<f32, WG>;
var<workgroup> rc: array<f32, WG>;

// s + c is the exact sum of a + b.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  let err = (a - (s - bb)) + (b - bb);
  return vec2<f32>(s, err);
}

@compute @workgroup_size(WG, 1, 1)
fn reduce(@builtin(local_invocation_id) lid: vec3<u32>,
          @builtin(workgroup_id) wid: vec3<u32>) {
  let t = terms[wid.x];
  var s = 0.0;
  var c = 0.0; // accumulated error, to be added to s
  for (var i = lid.x; i < t.count; i = i + WG) {
    let r = two_sum(s, partials[t.base + i]);
    s = r.x;
    c = c + r.y;
  }
  rs[lid.x] = s;
  rc[lid.x] = c;
  workgroupBarrier();
  for (var k = WG / 2u; k > 0u; k = k / 2u) {
    if (lid.x < k) {
      let r = two_sum(rs[lid.x], rs[lid.x + k]);
      rs[lid.x] = r.x;
      rc[lid.x] = (rc[lid.x] + rc[lid.x + k]) + r.y;
    }
    workgroupBarrier();
  }
  if (lid.x == 0u) {
    sums[2u * wid.x] = rs[0];
    sums[2u * wid.x + 1u] = rc[0];
  }
}
