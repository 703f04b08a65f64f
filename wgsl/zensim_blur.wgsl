// zensim stage 2: the 11-tap box blur as zensim's running sums, and the
// per-pixel features. Needs dssim_common.wgsl and zensim_common.wgsl
// prepended. One dispatch per scale for the three channels (gid.y or
// wid.z is the channel; P.mode holds each channel's mode).
//
// hblur   one invocation per plane row: the horizontal running sums of s
//         (reference), d (distorted) and, in full mode, s² + d² and s·d,
//         written × 1/11 to the channel's hb as (mu1, mu2, ssq, s12) (0
//         for the last two in edge mode). With P.cmp it also sets
//         flag[0] when any sample of s and d differs in its bits (zensim
//         scores identical images 100 without computing).
// vstats  one workgroup per zensim strip (16 output rows) and WG columns,
//         one invocation per column: the vertical running sums over the
//         strip's rows [y - 5, end + 5) (clipped to the image, mirrored at
//         the strip's ends, so they restart per strip as in zensim), the
//         features of every output row, the column's sums over the strip,
//         then the workgroup's sums and maxima (a fixed tree) into one
//         partial slot of NQ values.

@group(0) @binding(0) var<uniform> P: ZP;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> dst: array<f32>;
// hblur reads the same planes as blocks of 4 (rows start on a 16-byte
// boundary when the width is a multiple of 4; s_at, d_at read one sample).
@group(0) @binding(1) var<storage, read> src4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dst4: array<vec4<f32>>;

fn s_at(i: u32) -> f32 {
  return src4[i >> 2u][i & 3u];
}

fn d_at(i: u32) -> f32 {
  return dst4[i >> 2u][i & 3u];
}
// hb0..hb2: per pixel (mu1, mu2, ssq, s12) as one vec4, one buffer per
// channel (a binding stays within 16 bytes per pixel), so that hblur,
// whose invocations each walk their own row, stores 16 bytes per pixel in
// one transaction, and vstats reads them coalesced.
@group(0) @binding(3) var<storage, read_write> hb0: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> hb1: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> hb2: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> flag: array<atomic<u32>>;

// vstats reads the blurred values and writes partials.
@group(0) @binding(3) var<storage, read> hr0: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> hr1: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> hr2: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

fn hb_store(ch: u32, i: u32, v: vec4<f32>) {
  if (ch == 0u) {
    hb0[i] = v;
  } else if (ch == 1u) {
    hb1[i] = v;
  } else {
    hb2[i] = v;
  }
}

fn hr_load(ch: u32, i: u32) -> vec4<f32> {
  if (ch == 0u) {
    return hr0[i];
  } else if (ch == 1u) {
    return hr1[i];
  }
  return hr2[i];
}

override WG: u32 = 64u;

// HB_VEC: hblur takes the 16-byte path where it can (tests turn it off to
// check that both paths give the same bits).
override HB_VEC: bool = true;

const C2: f32 = 0.0009;

// The running sums of the invocation's row: s, d, s² + d², s·d.
var<private> r_ss: f32;
var<private> r_sd: f32;
var<private> r_sq: f32;
var<private> r_sp: f32;

// hinit starts the sums with the row's first window (11 samples, mirrored).
fn hinit(o: u32, w: u32, full: bool) {
  r_ss = 0.0;
  r_sd = 0.0;
  r_sq = 0.0;
  r_sp = 0.0;
  for (var i = 0u; i < DIAM; i++) {
    let k = o + init_idx(i, w);
    let sv = s_at(k);
    let dv = d_at(k);
    r_ss = opq(r_ss + sv);
    r_sd = opq(r_sd + dv);
    if (full) {
      r_sq = fma_rn(sv, sv, fma_rn(dv, dv, r_sq));
      r_sp = fma_rn(sv, dv, r_sp);
    }
  }
}

// hstep writes the column's means (element i of the channel's hb) and
// slides the window: sa, da enter, sr, dr leave.
fn hstep(ch: u32, i: u32, full: bool, sa: f32, da: f32, sr: f32, dr: f32) {
  hb_store(ch, i, vec4<f32>(opq(r_ss * INV_DIAM), opq(r_sd * INV_DIAM), opq(r_sq * INV_DIAM), opq(r_sp * INV_DIAM)));
  r_ss = opq(opq(r_ss + sa) - sr);
  r_sd = opq(opq(r_sd + da) - dr);
  if (full) {
    r_sq = fma_rn(sa, sa, fma_rn(da, da, fma_rn(-sr, sr, fma_rn(-dr, dr, r_sq))));
    r_sp = fma_rn(sa, da, fma_rn(-sr, dr, r_sp));
  }
}

// hcol is one column x of the general path: indices mirrored and clamped.
fn hcol(ch: u32, o: u32, y: u32, w: u32, x: u32, full: bool) -> bool {
  let a = o + add_idx(x, w);
  let m = o + rem_idx(x, w);
  let diff = P.cmp == 1u && bitcast<u32>(s_at(o + x)) != bitcast<u32>(d_at(o + x));
  hstep(ch, y * w + x, full, s_at(a), d_at(a), s_at(m), d_at(m));
  return diff;
}

// hblur: see the file comment. Rows whose width is a multiple of 4 (every
// scale but possibly the last) take the interior in steps of 4 columns
// with 16-byte loads: each invocation walks its own row, so a warp's
// scalar load touches as many cache lines as it has invocations; here the
// 8 samples a step needs (4 entering, 4 leaving, per image) come from
// blocks of 4 loaded once each and kept in registers (one new block per
// image per step, loaded a step before its first use). The columns near
// the ends, where the window is mirrored, take the general path. Both
// paths call hstep with the same values in the same order: the same bits.
@compute @workgroup_size(WG, 1, 1)
fn hblur(@builtin(global_invocation_id) gid: vec3<u32>) {
  let y = gid.x;
  let ch = gid.y;
  let mode = chan_mode(P.mode, ch);
  // Scale 0 runs every channel (the identical-image flag), in edge mode
  // at least; elsewhere channels without blurred features do nothing.
  if (y >= P.rows || (mode < 2u && P.cmp == 0u)) {
    return;
  }
  zero_bits = P.zero;
  let w = P.pw;
  let o = ch * w * P.rows + y * w;
  let full = mode == 3u;
  hinit(o, w, full);
  var diff = false;
  var x = 0u;
  if (HB_VEC && w % 4u == 0u && w >= 20u) {
    for (; x < 8u; x++) {
      diff = hcol(ch, o, y, w, x, full) || diff;
    }
    // Blocks at x - 8, x - 4, x, x + 4, x + 8 of both images.
    let b = o / 4u;
    var s0 = src4[b];
    var s1 = src4[b + 1u];
    var s2 = src4[b + 2u];
    var s3 = src4[b + 3u];
    var s4 = src4[b + 4u];
    var d0 = dst4[b];
    var d1 = dst4[b + 1u];
    var d2 = dst4[b + 2u];
    var d3 = dst4[b + 3u];
    var d4 = dst4[b + 4u];
    // Interior: columns x .. x + 3 add x + 6 .. x + 9 (blocks x + 4 and
    // x + 8) and remove x - 5 .. x - 2 (blocks x - 8 and x - 4), all
    // within the row when x + 12 ≤ w.
    for (; x + 12u <= w; x += 4u) {
      var ns = s4;
      var nd = d4;
      if (x + 16u <= w) {
        ns = src4[(o + x + 12u) / 4u];
        nd = dst4[(o + x + 12u) / 4u];
      }
      if (P.cmp == 1u && any(bitcast<vec4<u32>>(s2) != bitcast<vec4<u32>>(d2))) {
        diff = true;
      }
      let i = y * w + x;
      hstep(ch, i, full, s3.z, d3.z, s0.w, d0.w);
      hstep(ch, i + 1u, full, s3.w, d3.w, s1.x, d1.x);
      hstep(ch, i + 2u, full, s4.x, d4.x, s1.y, d1.y);
      hstep(ch, i + 3u, full, s4.y, d4.y, s1.z, d1.z);
      s0 = s1;
      s1 = s2;
      s2 = s3;
      s3 = s4;
      s4 = ns;
      d0 = d1;
      d1 = d2;
      d2 = d3;
      d3 = d4;
      d4 = nd;
    }
  }
  for (; x < w; x++) {
    diff = hcol(ch, o, y, w, x, full) || diff;
  }
  if (diff) {
    atomicOr(&flag[0], 1u);
  }
}

var<workgroup> red: array<f32, 1280>; // NQ × WG (WG ≤ 64)

// q: one column's sums over its strip rows, in the order of part's slots:
// SSIM d, d², d⁴, d⁸, artifact ×4, detail-lost ×4, MSE, Σ(s-mu1)²,
// Σ(d-mu2)², Σ|s-mu1|, Σ|d-mu2|, then the maxima of d, artifact, detail.
var<private> q: array<f32, 20>;

fn edge(sv: f32, dv: f32, m1: f32, m2: f32) {
  let hs = opq(sv - m1);
  let hd = opq(dv - m2);
  let e1 = abs(hs);
  let e2 = abs(hd);
  let ed = opq(div_rn(opq(1.0 + e2), opq(1.0 + e1)) - 1.0);
  let art = max(ed, 0.0);
  let det = max(-ed, 0.0);
  let a2 = opq(art * art);
  let t2 = opq(det * det);
  let a4 = opq(a2 * a2);
  let t4 = opq(t2 * t2);
  q[4] = opq(q[4] + art);
  q[5] = opq(q[5] + a2);
  q[6] = opq(q[6] + a4);
  q[7] = opq(q[7] + opq(a4 * a4));
  q[8] = opq(q[8] + det);
  q[9] = opq(q[9] + t2);
  q[10] = opq(q[10] + t4);
  q[11] = opq(q[11] + opq(t4 * t4));
  let pd = opq(sv - dv);
  q[12] = opq(q[12] + opq(pd * pd));
  q[13] = opq(q[13] + opq(hs * hs));
  q[14] = opq(q[14] + opq(hd * hd));
  q[15] = opq(q[15] + e1);
  q[16] = opq(q[16] + e2);
  q[18] = max(q[18], art);
  q[19] = max(q[19], det);
}

@compute @workgroup_size(WG, 1, 1)
fn vstats(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let ch = wid.z;
  let mode = chan_mode(P.mode, ch);
  if (mode == 0u) {
    return; // no features: the slots are not read (count 0)
  }
  zero_bits = P.zero;
  let w = P.pw;
  let x = wid.x * WG + lid.x;
  let k = P.k0 + wid.y;
  let gy = k * STRIP;
  let end = min(gy + STRIP, P.gh);
  let top = max(gy, RADIUS) - RADIUS;
  let bot = min(end + RADIUS, P.gh);
  let h = bot - top;
  let in0 = gy - top;
  let in1 = end - top;
  let base = ch * w * P.rows + (top - P.y0) * w + x; // in src, dst
  let hbase = (top - P.y0) * w + x;                  // in this channel's hr
  for (var i = 0u; i < NQ; i++) {
    q[i] = 0.0;
  }
  if (x < w && mode == 1u) {
    for (var y = in0; y < in1; y++) {
      let v = opq(src[base + y * w] - dst[base + y * w]);
      q[12] = opq(q[12] + opq(v * v));
    }
  } else if (x < w) {
    let full = mode == 3u;
    var a1 = 0.0;
    var a2 = 0.0;
    var aq = 0.0;
    var ap = 0.0;
    for (var i = 0u; i < DIAM; i++) {
      let v = hr_load(ch, hbase + init_idx(i, h) * w);
      a1 = opq(a1 + v.x);
      a2 = opq(a2 + v.y);
      if (full) {
        aq = opq(aq + v.z);
        ap = opq(ap + v.w);
      }
    }
    for (var y = 0u; y < in1; y++) {
      if (y >= in0) {
        let o = base + y * w;
        let m1 = opq(a1 * INV_DIAM);
        let m2 = opq(a2 * INV_DIAM);
        if (full) {
          let qq = opq(aq * INV_DIAM);
          let pp = opq(ap * INV_DIAM);
          let md = opq(m1 - m2);
          let num_m = fma_rn(md, -md, 1.0);
          let num_s = fma_rn(2.0, fma_rn(-m1, m2, pp), C2);
          let den = opq(fma_rn(-m2, m2, fma_rn(-m1, m1, qq)) + C2);
          let sd = max(opq(1.0 - div_rn(opq(num_m * num_s), den)), 0.0);
          let sd2 = opq(sd * sd);
          let sd4 = opq(sd2 * sd2);
          q[0] = opq(q[0] + sd);
          q[1] = opq(q[1] + sd2);
          q[2] = opq(q[2] + sd4);
          q[3] = opq(q[3] + opq(sd4 * sd4));
          q[17] = max(q[17], sd);
        }
        edge(src[o], dst[o], m1, m2);
      }
      if (y + 1u >= in1) {
        break;
      }
      let va = hr_load(ch, hbase + add_idx(y, h) * w);
      let vr = hr_load(ch, hbase + rem_idx(y, h) * w);
      a1 = opq(opq(a1 + va.x) - vr.x);
      a2 = opq(opq(a2 + va.y) - vr.y);
      if (full) {
        aq = opq(opq(aq + va.z) - vr.z);
        ap = opq(opq(ap + va.w) - vr.w);
      }
    }
  }
  for (var i = 0u; i < NQ; i++) {
    red[i * WG + lid.x] = q[i];
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
    let o = (P.slot + ch * P.aux + k * P.gx + wid.x) * NQ;
    for (var i = 0u; i < NQ; i++) {
      part[o + i] = red[i * WG];
    }
  }
}
