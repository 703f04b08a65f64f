// SSIMULACRA2 vertical blur pass fused with the error maps, one channel of
// one scale per dispatch. Needs ssim2_color.wgsl and ssim2_iir.wgsl
// prepended.
//
// A workgroup covers VX columns; thread (cx, q) runs libjxl's vertical
// recursion (FastGaussianVertical: y = n2 * sum - d1 * y[-1] - y[-2] with
// fused multiply-adds, started N - 1 rows above the image, inputs outside
// the image zero) down column x of quantity q's horizontally blurred plane
// (q: 0 img1, 1 img2, 2 img1², 3 img2², 4 img1·img2), so five threads share
// a column and each warp reads whole row segments (coalesced). The rows go
// in chunks of R: each thread first loads its R input sums (independent
// loads, all in flight together), then steps the recursion and leaves
// mu1, mu2, sigma11, sigma22, sigma12 in workgroup memory; after a barrier
// the 5·VX threads evaluate the SSIM error and the two edge maps of the
// VX × R pixels of the chunk (thread (cx, q) takes rows q, q + 5, ...; R is
// a multiple of 5) and add the six terms to their own compensated sums.
//
// Each thread writes its six sums (TwoSum: the rounding error of every
// addition is kept) to `partials`: slot q·width + x of each term, so a term
// has 5·width slots, which ssim2_reduce.wgsl adds in a fixed order. Nothing
// depends on scheduling, so scores are bit-identical run to run.
//
// Cached reference (P.channels != 0): b0 and b2 are not horizontal blurs
// but the reference's finished mu1 and sigma11 planes, made once by
// ssim2_hblur.wgsl's vblur in the same operations as the recursion here;
// threads q = 0 and 2 copy the chunk's rows of them into workgroup memory
// instead of running the recursion, so the maps see the same values bit
// for bit. Not combined with carry (strips recompute all five).
//
// Row window: only rows [win_lo, win_hi) are summed (a strip's interior at
// this scale; the whole height for a full image); chunks starting at or
// past win_hi are not computed.
//
// Strips (carry != 0): the recursion's poles lie on the unit circle, so its
// f32 rounding never decays and a value depends on the whole column above
// it, not on a few rows: a strip cannot restart the recursion in a halo and
// get the full image's values (it moved scores by up to 0.1). Instead the
// state is carried: each thread stores y[win_hi - 1] and y[win_hi - 2] (6
// floats) at partials[carry + k·5·width + q·width + x], and the next strip
// (win_lo > 0) resumes from them at row win_lo, reading its inputs from
// rows win_lo - N - 1 and on, which its crop holds bit for bit. The first
// strip (win_lo = 0, its crop starts at the image's row 0) starts as a
// whole image does. So every strip's blurs are the full image's, bit for
// bit.

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

// Columns per workgroup (workgroup size VX × 5), set by the host: fewer
// columns give more workgroups in flight per SM (the pass is latency
// bound); nothing computed depends on VX.
override VX: u32 = 32u;
const R = 20u;  // rows per chunk, 5 · 4 (4 pixels per thread in the maps)

const C2 = 0.0009;

// Per chunk: the five blurred quantities, [q][r][cx] at q * QS + r * VX + cx
// (QS padded by 8 so a warp holding several q's stores without bank
// conflicts).
override QS: u32 = R * VX + 8u;
var<workgroup> mt: array<f32, 5u * QS>;

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

// Index of row y (clamped into the image) at column x, and whether y is
// inside; loads through it are unconditional, so the R rows of a chunk
// are independent straight-line loads the compiler can issue together.
fn rix(y: i32, x: u32) -> u32 {
  return u32(clamp(y, 0, i32(P.height) - 1)) * P.width + x;
}

fn rin(y: i32) -> bool {
  return y >= 0 && y < i32(P.height);
}

// The recursion's input sums row[n - N - 1] + row[n + N - 1] (zero outside
// the image) of quantity q for n = y0 .. y0 + R - 1 at column x.
fn chunk_sums(q: u32, y0: i32, x: u32) -> array<f32, R> {
  var sv: array<f32, R>;
  switch q {
    case 0u: {
      for (var r = 0i; r < i32(R); r = r + 1) {
        let a = y0 + r - IIR_N - 1;
        let b = a + 2 * IIR_N;
        sv[r] = select(0.0, b0[rix(a, x)], rin(a)) + select(0.0, b0[rix(b, x)], rin(b));
      }
    }
    case 1u: {
      for (var r = 0i; r < i32(R); r = r + 1) {
        let a = y0 + r - IIR_N - 1;
        let b = a + 2 * IIR_N;
        sv[r] = select(0.0, b1[rix(a, x)], rin(a)) + select(0.0, b1[rix(b, x)], rin(b));
      }
    }
    case 2u: {
      for (var r = 0i; r < i32(R); r = r + 1) {
        let a = y0 + r - IIR_N - 1;
        let b = a + 2 * IIR_N;
        sv[r] = select(0.0, b2[rix(a, x)], rin(a)) + select(0.0, b2[rix(b, x)], rin(b));
      }
    }
    case 3u: {
      for (var r = 0i; r < i32(R); r = r + 1) {
        let a = y0 + r - IIR_N - 1;
        let b = a + 2 * IIR_N;
        sv[r] = select(0.0, b3[rix(a, x)], rin(a)) + select(0.0, b3[rix(b, x)], rin(b));
      }
    }
    default: {
      for (var r = 0i; r < i32(R); r = r + 1) {
        let a = y0 + r - IIR_N - 1;
        let b = a + 2 * IIR_N;
        sv[r] = select(0.0, b4[rix(a, x)], rin(a)) + select(0.0, b4[rix(b, x)], rin(b));
      }
    }
  }
  return sv;
}

// s + c is the exact sum of a + b.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

@compute @workgroup_size(VX, 5, 1)
fn vmaps(@builtin(local_invocation_id) lid: vec3<u32>,
         @builtin(workgroup_id) wid: vec3<u32>) {
  fma_zero = P.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  let cx = lid.x;
  let q = lid.y;
  let x = wid.x * VX + cx;
  let inside = x < P.width;
  let xc = min(x, P.width - 1u); // columns past the edge compute, unused
  let n2 = K.n2.xyz;
  let nd1 = -K.d1.xyz;
  var y1 = vec3<f32>(0.0); // y[n-1] of the three filters
  var y2 = vec3<f32>(0.0); // y[n-2]
  let wlo = i32(P.win_lo);
  let whi = i32(P.win_hi);
  let carry = P.carry != 0u;
  let cw = 5u * P.width;
  let ci = P.carry + q * P.width + xc;
  var start = 0i;
  let kept = P.channels != 0u && (q == 0u || q == 2u);
  if (carry && wlo > 0) {
    y1 = vec3<f32>(partials[ci], partials[ci + cw], partials[ci + 2u * cw]);
    y2 = vec3<f32>(partials[ci + 3u * cw], partials[ci + 4u * cw], partials[ci + 5u * cw]);
    start = wlo;
  } else if (!kept) { // kept: mu1 / sigma11 come finished, no state
    for (var n = -IIR_N + 1; n < 0; n = n + 1) {
      let s = row_val(q, n - IIR_N - 1, xc) + row_val(q, n + IIR_N - 1, xc);
      let y = fmaf3(n2, vec3<f32>(s), fmaf3(nd1, y1, -y2));
      y2 = y1;
      y1 = y;
    }
  }
  var c1 = y1; // the state after row whi - 1 (strips)
  var c2 = y2;
  var acc: array<vec2<f32>, 6>; // (sum, error) of the six terms
  for (var t = 0u; t < 6u; t = t + 1u) {
    acc[t] = vec2<f32>(0.0);
  }
  for (var y0 = start; y0 < whi; y0 = y0 + i32(R)) {
    if (kept) {
      // Rows past the image are never summed: clamped loads are fine.
      var kv: array<f32, R>;
      if (q == 0u) {
        for (var r = 0i; r < i32(R); r = r + 1) {
          kv[r] = b0[rix(y0 + r, xc)];
        }
      } else {
        for (var r = 0i; r < i32(R); r = r + 1) {
          kv[r] = b2[rix(y0 + r, xc)];
        }
      }
      for (var r = 0u; r < R; r = r + 1u) {
        mt[q * QS + r * VX + cx] = kv[r];
      }
    } else if (!carry) {
      let sv = chunk_sums(q, y0, xc);
      for (var r = 0u; r < R; r = r + 1u) {
        let y = fmaf3(n2, vec3<f32>(sv[r]), fmaf3(nd1, y1, -y2));
        y2 = y1;
        y1 = y;
        mt[q * QS + r * VX + cx] = y.x + opq(y.y + y.z);
      }
    } else {
      let sv = chunk_sums(q, y0, xc);
      for (var r = 0u; r < R; r = r + 1u) {
        let y = fmaf3(n2, vec3<f32>(sv[r]), fmaf3(nd1, y1, -y2));
        y2 = y1;
        y1 = y;
        mt[q * QS + r * VX + cx] = y.x + opq(y.y + y.z);
        if (y0 + i32(r) == whi - 1) {
          c1 = y1;
          c2 = y2;
        }
      }
    }
    // This thread's pixels of the chunk (rows q, q + 5, ...), loaded before
    // the barrier so their latency overlaps it.
    var i1: array<f32, 4>;
    var i2: array<f32, 4>;
    for (var j = 0u; j < R / 5u; j = j + 1u) {
      let ii = rix(y0 + i32(q + 5u * j), xc);
      i1[j] = img1[ii];
      i2[j] = img2[ii];
    }
    workgroupBarrier();
    for (var j = 0u; j < R / 5u; j = j + 1u) {
      let r = q + 5u * j;
      let n = y0 + i32(r);
      if (inside && n >= wlo && n < whi) {
        let mu1 = mt[r * VX + cx];
        let mu2 = mt[QS + r * VX + cx];
        let s11 = mt[2u * QS + r * VX + cx];
        let s22 = mt[3u * QS + r * VX + cx];
        let s12 = mt[4u * QS + r * VX + cx];
        // libjxl's SSIMMap and EdgeDiffMap for this pixel, in its f32 steps
        // (opq keeps products from being fused into the following
        // subtraction; libjxl's scalar code has no FMA there).
        let mu11 = opq(mu1 * mu1);
        let mu22 = opq(mu2 * mu2);
        let mu12 = opq(mu1 * mu2);
        let dm = mu1 - mu2;
        let num_m = 1.0 - opq(dm * dm);
        let num_s = 2.0 * opq(s12 - mu12) + C2;
        let den_s = opq(opq(s11 - mu11) + opq(s22 - mu22)) + C2;
        // d = 1 - num_m * num_s / den_s: the f32 quotient correctly rounded
        // as libjxl's (it quantises small errors to steps of 2^-24, and
        // equal images give exactly 1), then 1 - q, exact for q in [0.5, 2].
        let d = max(1.0 - div_rn(opq(num_m * num_s), den_s), 0.0);
        // (1 + |img2 - mu2|) / (1 + |img1 - mu1|) - 1, which libjxl
        // evaluates in double, as one f32 quotient of the difference.
        let e1 = abs(i1[j] - mu1);
        let e2 = abs(i2[j] - mu2);
        let d1 = (e2 - e1) / (1.0 + e1);
        let art = max(d1, 0.0);
        let det = max(-d1, 0.0);
        let d2 = d * d;
        let a2 = art * art;
        let l2 = det * det;
        let v = array<f32, 6>(d, d2 * d2, art, a2 * a2, det, l2 * l2);
        for (var t = 0u; t < 6u; t = t + 1u) {
          let rs = two_sum(acc[t].x, v[t]);
          acc[t] = vec2<f32>(rs.x, acc[t].y + rs.y);
        }
      }
    }
    workgroupBarrier();
  }
  if (inside) {
    for (var t = 0u; t < 6u; t = t + 1u) {
      partials[P.partial_base + t * P.partial_count + q * P.width + x] = acc[t].x + acc[t].y;
    }
    if (carry) {
      partials[ci] = c1.x;
      partials[ci + cw] = c1.y;
      partials[ci + 2u * cw] = c1.z;
      partials[ci + 3u * cw] = c2.x;
      partials[ci + 4u * cw] = c2.y;
      partials[ci + 5u * cw] = c2.z;
    }
  }
}
