// SSIMULACRA2 vertical blur pass fused with the error maps, one channel of
// one scale per dispatch: thread x runs libjxl's vertical recursion
// (FastGaussianVertical: y = n2 * sum - d1 * y[-1] - y[-2] with fused
// multiply-adds, started N - 1 rows above the image, inputs outside the
// image zero) down column x of the five horizontally blurred planes, which
// gives mu1, mu2, sigma11, sigma22, sigma12 row by row; it then evaluates
// the SSIM error and the two edge maps at each pixel and sums the six terms
// down the column. Needs ssim2_color.wgsl and ssim2_iir.wgsl prepended.
//
// The column sums are compensated (TwoSum: the rounding error of every
// addition is kept) and written one per column to `partials`;
// ssim2_reduce.wgsl adds the columns in a fixed order. Nothing depends on
// scheduling, so scores are bit-identical run to run.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Coef;
@group(0) @binding(2) var<storage, read> b0: array<f32>; // blur(img1) rows
@group(0) @binding(3) var<storage, read> b1: array<f32>; // blur(img2) rows
@group(0) @binding(4) var<storage, read> b2: array<f32>; // blur(img1*img1) rows
@group(0) @binding(5) var<storage, read> b3: array<f32>; // blur(img2*img2) rows
@group(0) @binding(6) var<storage, read> b4: array<f32>; // blur(img1*img2) rows
@group(0) @binding(7) var<storage, read> img1: array<f32>;
@group(0) @binding(8) var<storage, read> img2: array<f32>;
@group(0) @binding(9) var<storage, read_write> partials: array<f32>;

override WG: u32 = 64u;

const C2 = 0.0009;

fn row_val(q: u32, y: i32, x: u32) -> f32 {
  if (y < 0 || y >= i32(P.height)) {
    return 0.0;
  }
  let i = u32(y) * P.width + x;
  switch q {
    case 0u: { return b0[i]; }
    case 1u: { return b1[i]; }
    case 2u: { return b2[i]; }
    case 3u: { return b3[i]; }
    default: { return b4[i]; }
  }
}

// s + c is the exact sum of a + b.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

@compute @workgroup_size(WG, 1, 1)
fn vmaps(@builtin(global_invocation_id) gid: vec3<u32>) {
  fma_zero = P.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  let x = gid.x;
  if (x >= P.width) {
    return;
  }
  let h = i32(P.height);
  let n2 = K.n2.xyz;
  let nd1 = -K.d1.xyz;
  var y1: array<vec3<f32>, 5>; // y[n-1] of the three filters, per quantity
  var y2: array<vec3<f32>, 5>; // y[n-2]
  for (var q = 0u; q < 5u; q = q + 1u) {
    y1[q] = vec3<f32>(0.0);
    y2[q] = vec3<f32>(0.0);
  }
  var acc: array<vec2<f32>, 6>; // (sum, error) of the six terms
  for (var t = 0u; t < 6u; t = t + 1u) {
    acc[t] = vec2<f32>(0.0);
  }
  var m: array<f32, 5>;
  for (var n = -IIR_N + 1; n < h; n = n + 1) {
    for (var q = 0u; q < 5u; q = q + 1u) {
      let s = row_val(q, n - IIR_N - 1, x) + row_val(q, n + IIR_N - 1, x);
      let y = fmaf3(n2, vec3<f32>(s), fmaf3(nd1, y1[q], -y2[q]));
      y2[q] = y1[q];
      y1[q] = y;
      m[q] = y.x + opq(y.y + y.z);
    }
    if (n < 0) {
      continue;
    }
    let mu1 = m[0];
    let mu2 = m[1];
    // libjxl's SSIMMap and EdgeDiffMap for this pixel, in its f32 steps
    // (opq keeps products from being fused into the following subtraction;
    // libjxl's scalar code has no FMA there).
    let mu11 = opq(mu1 * mu1);
    let mu22 = opq(mu2 * mu2);
    let mu12 = opq(mu1 * mu2);
    let dm = mu1 - mu2;
    let num_m = 1.0 - opq(dm * dm);
    let num_s = 2.0 * opq(m[4] - mu12) + C2;
    let den_s = opq(opq(m[2] - mu11) + opq(m[3] - mu22)) + C2;
    // d = 1 - num_m * num_s / den_s: the f32 quotient correctly rounded as
    // libjxl's (it quantises small errors to steps of 2^-24, and equal
    // images give exactly 1), then 1 - q, exact for q in [0.5, 2].
    let d = max(1.0 - div_rn(opq(num_m * num_s), den_s), 0.0);
    let i = u32(n) * P.width + x;
    // (1 + |img2 - mu2|) / (1 + |img1 - mu1|) - 1, which libjxl evaluates
    // in double, as one f32 quotient of the difference.
    let e1 = abs(img1[i] - mu1);
    let e2 = abs(img2[i] - mu2);
    let d1 = (e2 - e1) / (1.0 + e1);
    let art = max(d1, 0.0);
    let det = max(-d1, 0.0);
    let d2 = d * d;
    let a2 = art * art;
    let l2 = det * det;
    let v = array<f32, 6>(d, d2 * d2, art, a2 * a2, det, l2 * l2);
    for (var t = 0u; t < 6u; t = t + 1u) {
      let r = two_sum(acc[t].x, v[t]);
      acc[t] = vec2<f32>(r.x, acc[t].y + r.y);
    }
  }
  for (var t = 0u; t < 6u; t = t + 1u) {
    partials[P.partial_base + t * P.partial_count + x] = acc[t].x + acc[t].y;
  }
}
