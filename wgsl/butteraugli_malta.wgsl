// Butteraugli Malta filters, shared part (prepended to butteraugli_malta_x
// and butteraugli_malta_y, in both of their geometries). An output block with a 4-pixel halo of the three weighted
// difference images (UHF, HF, MF of one channel) is built in workgroup
// memory: `mt` holds three planes (outside the image the difference is 0).
// Each output sums the squared sums of 16 line segments
// through its pixel: 7 to 9 contiguous samples on the UHF difference
// (malta_hf), 5 samples at every other pixel on the HF and MF differences
// (malta_lf). Segment sums are grouped as the CPU reference groups them.
//
// The host declares the tile ahead of this file (gpu/webgpu/butteraugli's
// bfMaltaTile): MT, its row width, MT_N, the samples of one plane, and
// mt, three planes; 40 and 1600 for the 32x32 blocks of the column
// kernels (butteraugli_malta_cols.wgsl), 24 and 576 for the 16x16 fallback.
// Both sum with these functions, so their maps are the same bits.

// s(b, r, c) is the difference at row r, column c of the 9x9 neighbourhood
// whose top-left sample is mt[b].
fn s(b: u32, r: u32, c: u32) -> f32 {
  return mt[b + r * MT + c];
}

fn sum5(a: f32, b: f32, c: f32, d: f32, e: f32) -> f32 {
  return (a + b) + (c + (d + e));
}

fn sum7(a: f32, b: f32, c: f32, d: f32, e: f32, f: f32, g: f32) -> f32 {
  return (a + b) + (c + ((d + e) + (f + g)));
}

fn sum9(a: f32, b: f32, c: f32, d: f32, e: f32, f: f32, g: f32, h: f32, i: f32) -> f32 {
  return ((a + b) + (c + d)) + ((e + f) + (g + h)) + i;
}

fn malta_lf(b: u32) -> f32 {
  let c = s(b, 4u, 4u);
  var t = sum5(s(b, 4u, 0u), s(b, 4u, 2u), c, s(b, 4u, 6u), s(b, 4u, 8u));
  var r = t * t;
  t = sum5(s(b, 0u, 4u), s(b, 2u, 4u), c, s(b, 6u, 4u), s(b, 8u, 4u));
  r += t * t;
  t = sum5(s(b, 1u, 1u), s(b, 2u, 2u), c, s(b, 6u, 6u), s(b, 7u, 7u));
  r += t * t;
  t = sum5(s(b, 1u, 7u), s(b, 2u, 6u), c, s(b, 6u, 2u), s(b, 7u, 1u));
  r += t * t;
  t = sum5(s(b, 0u, 5u), s(b, 2u, 5u), c, s(b, 6u, 3u), s(b, 8u, 3u));
  r += t * t;
  t = sum5(s(b, 0u, 3u), s(b, 2u, 3u), c, s(b, 6u, 5u), s(b, 8u, 5u));
  r += t * t;
  t = sum5(s(b, 3u, 0u), s(b, 3u, 2u), c, s(b, 5u, 6u), s(b, 5u, 8u));
  r += t * t;
  t = sum5(s(b, 5u, 0u), s(b, 5u, 2u), c, s(b, 3u, 6u), s(b, 3u, 8u));
  r += t * t;
  t = sum5(s(b, 1u, 2u), s(b, 2u, 3u), c, s(b, 6u, 5u), s(b, 7u, 6u));
  r += t * t;
  t = sum5(s(b, 1u, 6u), s(b, 2u, 5u), c, s(b, 6u, 3u), s(b, 7u, 2u));
  r += t * t;
  t = sum5(s(b, 2u, 1u), s(b, 3u, 2u), c, s(b, 5u, 6u), s(b, 6u, 7u));
  r += t * t;
  t = sum5(s(b, 2u, 7u), s(b, 3u, 6u), c, s(b, 5u, 2u), s(b, 6u, 1u));
  r += t * t;
  t = sum5(s(b, 6u, 0u), s(b, 5u, 2u), c, s(b, 3u, 6u), s(b, 2u, 8u));
  r += t * t;
  t = sum5(s(b, 2u, 0u), s(b, 3u, 2u), c, s(b, 5u, 6u), s(b, 6u, 8u));
  r += t * t;
  t = sum5(s(b, 0u, 2u), s(b, 2u, 3u), c, s(b, 6u, 5u), s(b, 8u, 6u));
  r += t * t;
  t = sum5(s(b, 0u, 6u), s(b, 2u, 5u), c, s(b, 6u, 3u), s(b, 8u, 2u));
  r += t * t;
  return r;
}

fn malta_hf(b: u32) -> f32 {
  let c = s(b, 4u, 4u);
  var t = sum9(s(b, 4u, 0u), s(b, 4u, 1u), s(b, 4u, 2u), s(b, 4u, 3u), c, s(b, 4u, 5u), s(b, 4u, 6u), s(b, 4u, 7u), s(b, 4u, 8u));
  var r = t * t;
  t = sum9(s(b, 0u, 4u), s(b, 1u, 4u), s(b, 2u, 4u), s(b, 3u, 4u), c, s(b, 5u, 4u), s(b, 6u, 4u), s(b, 7u, 4u), s(b, 8u, 4u));
  r += t * t;
  t = sum7(s(b, 1u, 1u), s(b, 2u, 2u), s(b, 3u, 3u), c, s(b, 5u, 5u), s(b, 6u, 6u), s(b, 7u, 7u));
  r += t * t;
  t = sum7(s(b, 1u, 7u), s(b, 2u, 6u), s(b, 3u, 5u), c, s(b, 5u, 3u), s(b, 6u, 2u), s(b, 7u, 1u));
  r += t * t;
  // These four segments are counted twice, the second time at the end.
  let a = sum9(s(b, 0u, 5u), s(b, 1u, 5u), s(b, 2u, 5u), s(b, 3u, 4u), c, s(b, 5u, 4u), s(b, 6u, 3u), s(b, 7u, 3u), s(b, 8u, 3u));
  r += a * a;
  let d = sum9(s(b, 0u, 3u), s(b, 1u, 3u), s(b, 2u, 3u), s(b, 3u, 4u), c, s(b, 5u, 4u), s(b, 6u, 5u), s(b, 7u, 5u), s(b, 8u, 5u));
  r += d * d;
  let e = sum9(s(b, 3u, 0u), s(b, 3u, 1u), s(b, 3u, 2u), s(b, 4u, 3u), c, s(b, 4u, 5u), s(b, 5u, 6u), s(b, 5u, 7u), s(b, 5u, 8u));
  r += e * e;
  let f = sum9(s(b, 5u, 0u), s(b, 5u, 1u), s(b, 5u, 2u), s(b, 4u, 3u), c, s(b, 4u, 5u), s(b, 3u, 6u), s(b, 3u, 7u), s(b, 3u, 8u));
  r += f * f;
  t = sum7(s(b, 1u, 2u), s(b, 2u, 3u), s(b, 3u, 3u), c, s(b, 5u, 5u), s(b, 6u, 5u), s(b, 7u, 6u));
  r += t * t;
  t = sum7(s(b, 1u, 6u), s(b, 2u, 5u), s(b, 3u, 5u), c, s(b, 5u, 3u), s(b, 6u, 3u), s(b, 7u, 2u));
  r += t * t;
  t = sum7(s(b, 2u, 1u), s(b, 3u, 2u), s(b, 3u, 3u), c, s(b, 5u, 5u), s(b, 5u, 6u), s(b, 6u, 7u));
  r += t * t;
  t = sum7(s(b, 2u, 7u), s(b, 3u, 6u), s(b, 3u, 5u), c, s(b, 5u, 3u), s(b, 5u, 2u), s(b, 6u, 1u));
  r += t * t;
  r += f * f;
  r += e * e;
  r += d * d;
  r += a * a;
  return r;
}

// malta_diff is the weighted, asymmetric difference the filters read:
// wt = (norm1, weight of the symmetric term, weight of the half-open terms).
fn malta_diff(v0: f32, v1: f32, wt: vec3<f32>) -> f32 {
  let absval = 0.5 * (abs(v0) + abs(v1));
  let den = wt.x + absval;
  var d = wt.y / den * (v0 - v1);
  let s2 = wt.z / den;
  let f0 = abs(v0);
  let small = 0.55 * f0;
  let big = 1.05 * f0;
  if (v0 < 0.0) {
    if (v1 > -small) {
      d = d - s2 * (v1 + small);
    } else if (v1 < -big) {
      d = d + s2 * (-v1 - big);
    }
  } else {
    if (v1 < small) {
      d = d + s2 * (small - v1);
    } else if (v1 > big) {
      d = d - s2 * (v1 - big);
    }
  }
  return d;
}

// asym_l2 adds to prev the weighted squared HF difference plus half-open
// penalties for a distorted value that shrank towards zero or overshot.
fn asym_l2(v0: f32, v1: f32, wgt: f32, wlt: f32, prev: f32) -> f32 {
  let dd = v0 - v1;
  let total = dd * dd * wgt + prev;
  let f0 = abs(v0);
  let small = 0.4 * f0;
  let big = f0;
  var v = 0.0;
  if (v0 < 0.0) {
    if (v1 > -small) {
      v = v1 + small;
    } else if (v1 < -big) {
      v = -v1 - big;
    }
  } else {
    if (v1 < small) {
      v = small - v1;
    } else if (v1 > big) {
      v = v1 - big;
    }
  }
  return wlt * (v * v) + total;
}
