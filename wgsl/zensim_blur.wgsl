// zensim stage 2: the 11-tap box blur as zensim's running sums, and the
// per-pixel features. Needs dssim_common.wgsl and zensim_common.wgsl
// prepended. One dispatch per scale and channel (P.mode).
//
// hblur   one invocation per plane row: the horizontal running sums of s
//         (reference), d (distorted) and, in full mode, s² + d² and s·d,
//         written × 1/11 to mu1, mu2, ssq, s12. With P.cmp it also sets
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
@group(0) @binding(3) var<storage, read_write> mu1: array<f32>;
@group(0) @binding(4) var<storage, read_write> mu2: array<f32>;
@group(0) @binding(5) var<storage, read_write> ssq: array<f32>;
@group(0) @binding(6) var<storage, read_write> s12: array<f32>;
@group(0) @binding(7) var<storage, read_write> flag: array<atomic<u32>>;

// vstats reads the blurred planes and writes partials.
@group(0) @binding(3) var<storage, read> hm1: array<f32>;
@group(0) @binding(4) var<storage, read> hm2: array<f32>;
@group(0) @binding(5) var<storage, read> hsq: array<f32>;
@group(0) @binding(6) var<storage, read> hs12: array<f32>;
@group(0) @binding(7) var<storage, read_write> part: array<f32>;

override WG: u32 = 64u;

const C2: f32 = 0.0009;

@compute @workgroup_size(WG, 1, 1)
fn hblur(@builtin(global_invocation_id) gid: vec3<u32>) {
  let y = gid.x;
  if (y >= P.rows) {
    return;
  }
  zero_bits = P.zero;
  let w = P.pw;
  let o = y * w;
  let full = P.mode == 3u;
  var ss = 0.0;
  var sd = 0.0;
  var sq = 0.0;
  var sp = 0.0;
  for (var i = 0u; i < DIAM; i++) {
    let k = o + init_idx(i, w);
    let sv = src[k];
    let dv = dst[k];
    ss = opq(ss + sv);
    sd = opq(sd + dv);
    if (full) {
      sq = fma_rn(sv, sv, fma_rn(dv, dv, sq));
      sp = fma_rn(sv, dv, sp);
    }
  }
  var diff = false;
  for (var x = 0u; x < w; x++) {
    mu1[o + x] = opq(ss * INV_DIAM);
    mu2[o + x] = opq(sd * INV_DIAM);
    if (full) {
      ssq[o + x] = opq(sq * INV_DIAM);
      s12[o + x] = opq(sp * INV_DIAM);
    }
    if (P.cmp == 1u && bitcast<u32>(src[o + x]) != bitcast<u32>(dst[o + x])) {
      diff = true;
    }
    let a = o + add_idx(x, w);
    let m = o + rem_idx(x, w);
    let sa = src[a];
    let da = dst[a];
    let sr = src[m];
    let dr = dst[m];
    ss = opq(opq(ss + sa) - sr);
    sd = opq(opq(sd + da) - dr);
    if (full) {
      sq = fma_rn(sa, sa, fma_rn(da, da, fma_rn(-sr, sr, fma_rn(-dr, dr, sq))));
      sp = fma_rn(sa, da, fma_rn(-sr, dr, sp));
    }
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
  let base = (top - P.y0) * w + x;
  for (var i = 0u; i < NQ; i++) {
    q[i] = 0.0;
  }
  if (x < w && P.mode == 1u) {
    for (var y = in0; y < in1; y++) {
      let v = opq(src[base + y * w] - dst[base + y * w]);
      q[12] = opq(q[12] + opq(v * v));
    }
  } else if (x < w) {
    let full = P.mode == 3u;
    var a1 = 0.0;
    var a2 = 0.0;
    var aq = 0.0;
    var ap = 0.0;
    for (var i = 0u; i < DIAM; i++) {
      let o = base + init_idx(i, h) * w;
      a1 = opq(a1 + hm1[o]);
      a2 = opq(a2 + hm2[o]);
      if (full) {
        aq = opq(aq + hsq[o]);
        ap = opq(ap + hs12[o]);
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
      let ad = base + add_idx(y, h) * w;
      let rm = base + rem_idx(y, h) * w;
      a1 = opq(opq(a1 + hm1[ad]) - hm1[rm]);
      a2 = opq(opq(a2 + hm2[ad]) - hm2[rm]);
      if (full) {
        aq = opq(opq(aq + hsq[ad]) - hsq[rm]);
        ap = opq(opq(ap + hs12[ad]) - hs12[rm]);
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
    let o = (P.slot + k * P.gx + wid.x) * NQ;
    for (var i = 0u; i < NQ; i++) {
      part[o + i] = red[i * WG];
    }
  }
}
