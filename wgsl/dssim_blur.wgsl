// DSSIM stage 2: dssim-core 3.4.0's blur and the per-pixel SSIM map.
// Needs dssim_common.wgsl prepended (the host does it).
//
// dssim-core's blur is its 3x3 kernel applied twice, each pass reading rows
// and columns clamped to the image (edge extension). Each workgroup does
// both passes for a TX x TY tile in workgroup memory: the input tile with a
// 2-pixel apron, the first pass on the tile plus a 1-pixel apron, where an
// apron position outside the image holds the first pass's value at the
// clamped position (which is what the second pass reads there). Within a
// pass the arithmetic is dssim-core's portable blur's, in its order: the
// first and last pixel of a row use its fused multiply-adds
// fma(c, k2, fma(a, k0, b k1)) per row, the others add the three row sums
// (a k0 + b k1) + c k2 left to right.
//
// chroma  (L, a, b) -> (L, blur(a), blur(b)): dssim-core blurs the chroma
//         planes once before anything else (DssimChan::preprocess).
// stats   img -> (blur(img).xyz, sigma^2) where sigma^2 is the channel mean
//         of blur(img^2) - blur(img)^2, the only way the squared blur is
//         used later (dssim-core's compare_scale on L*a*b* pixels averages
//         the three channels' terms: (l + a + b) / 3).
// ssim    the cross term blur(img1 * img2) of the reference and distorted
//         images and dssim-core's SSIM formula with its constants
//         c1 = 0.01^2, c2 = 0.03^2, written for the owned rows [row0, row1)
//         into the map at row y - row0.
//
// The tile size is a constant (not an override) because the workgroup
// arrays are indexed from helper functions.

const TX: u32 = 16u;
const TY: u32 = 8u;
const IW: u32 = TX + 4u;
const IH: u32 = TY + 4u;
const MW: u32 = TX + 2u;
const MH: u32 = TY + 2u;
const NT: u32 = TX * TY;

// dssim-core 3.4.0 dssim-core/src/blur.rs KERNEL (AGPL-3.0; numbers only):
// corners, edges, centre.
const KC: f32 = 0.095332;
const KE: f32 = 0.118095;
const KM: f32 = 0.146293;
const THIRD: f32 = 1.0 / 3.0;

// Bindings: chroma and stats use P, in1, out1; ssim uses P, kc, r_img,
// r_mu, d_img, d_mu,
// map (each entry point's bindings are 0..n-1, automatic layouts).
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> in1: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out1: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> kc: array<f32>;
@group(0) @binding(2) var<storage, read> r_img: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> r_mu: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> d_img: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> d_mu: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> map: array<f32>;

var<workgroup> tin: array<vec4<f32>, IW * IH>;
var<workgroup> tin2: array<vec4<f32>, IW * IH>;
var<workgroup> tmid: array<vec4<f32>, MW * MH>;
var<workgroup> tmid2: array<vec4<f32>, MW * MH>;

fn row_plain(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, ko: f32, ki: f32) -> vec4<f32> {
  return opq4(opq4(opq4(a * ko) + opq4(b * ki)) + opq4(c * ko));
}

fn row_fused(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, ko: f32, ki: f32) -> vec4<f32> {
  return fma_rn4(c, ko, fma_rn4(a, ko, opq4(b * ki)));
}

// One 3x3 pass on nine taps (p: previous row, c: this row, n: next row;
// 0 left, 1 centre, 2 right).
fn conv(p0: vec4<f32>, p1: vec4<f32>, p2: vec4<f32>,
        c0: vec4<f32>, c1: vec4<f32>, c2: vec4<f32>,
        n0: vec4<f32>, n1: vec4<f32>, n2: vec4<f32>, edge: bool) -> vec4<f32> {
  if (edge) {
    return opq4(opq4(row_fused(p0, p1, p2, KC, KE) + row_fused(c0, c1, c2, KE, KM)) + row_fused(n0, n1, n2, KC, KE));
  }
  return opq4(opq4(row_plain(p0, p1, p2, KC, KE) + row_plain(c0, c1, c2, KE, KM)) + row_plain(n0, n1, n2, KC, KE));
}

// Tile geometry of this workgroup: origin (ox, oy) and the plane size.
struct Tile {
  ox: i32,
  oy: i32,
  w: i32,
  h: i32,
}

// Plane index of input-tile slot k (clamped position).
fn in_plane_index(t: Tile, k: u32) -> u32 {
  let x = clamp(t.ox - 2 + i32(k % IW), 0, t.w - 1);
  let y = clamp(t.oy - 2 + i32(k / IW), 0, t.h - 1);
  return u32(y) * u32(t.w) + u32(x);
}

// First pass over tin (and tin2 when two is set) into tmid (tmid2). The
// nine taps of a clamped position are three clamped columns times three
// clamped rows, computed once.
fn pass1(t: Tile, li: u32, two: bool) {
  for (var k = li; k < MW * MH; k = k + NT) {
    let x = clamp(t.ox - 1 + i32(k % MW), 0, t.w - 1);
    let y = clamp(t.oy - 1 + i32(k / MW), 0, t.h - 1);
    let edge = x == 0 || x == t.w - 1;
    let c0 = u32(max(x - 1, 0) - (t.ox - 2));
    let c1 = u32(x - (t.ox - 2));
    let c2 = u32(min(x + 1, t.w - 1) - (t.ox - 2));
    let r0 = u32(max(y - 1, 0) - (t.oy - 2)) * IW;
    let r1 = u32(y - (t.oy - 2)) * IW;
    let r2 = u32(min(y + 1, t.h - 1) - (t.oy - 2)) * IW;
    tmid[k] = conv(tin[r0 + c0], tin[r0 + c1], tin[r0 + c2], tin[r1 + c0], tin[r1 + c1], tin[r1 + c2],
                   tin[r2 + c0], tin[r2 + c1], tin[r2 + c2], edge);
    if (two) {
      tmid2[k] = conv(tin2[r0 + c0], tin2[r0 + c1], tin2[r0 + c2], tin2[r1 + c0], tin2[r1 + c1], tin2[r1 + c2],
                      tin2[r2 + c0], tin2[r2 + c1], tin2[r2 + c2], edge);
    }
  }
}

// Indices in tmid of the nine taps of the second pass at plane position
// (x, y): three columns and three row offsets.
struct Taps {
  c0: u32,
  c1: u32,
  c2: u32,
  r0: u32,
  r1: u32,
  r2: u32,
  edge: bool,
}

fn taps2(t: Tile, x: i32, y: i32) -> Taps {
  return Taps(u32(max(x - 1, 0) - (t.ox - 1)), u32(x - (t.ox - 1)), u32(min(x + 1, t.w - 1) - (t.ox - 1)),
              u32(max(y - 1, 0) - (t.oy - 1)) * MW, u32(y - (t.oy - 1)) * MW, u32(min(y + 1, t.h - 1) - (t.oy - 1)) * MW,
              x == 0 || x == t.w - 1);
}

// Second pass from tmid.
fn pass2(q: Taps) -> vec4<f32> {
  return conv(tmid[q.r0 + q.c0], tmid[q.r0 + q.c1], tmid[q.r0 + q.c2], tmid[q.r1 + q.c0], tmid[q.r1 + q.c1], tmid[q.r1 + q.c2],
              tmid[q.r2 + q.c0], tmid[q.r2 + q.c1], tmid[q.r2 + q.c2], q.edge);
}

fn pass2b(q: Taps) -> vec4<f32> {
  return conv(tmid2[q.r0 + q.c0], tmid2[q.r0 + q.c1], tmid2[q.r0 + q.c2], tmid2[q.r1 + q.c0], tmid2[q.r1 + q.c1], tmid2[q.r1 + q.c2],
              tmid2[q.r2 + q.c0], tmid2[q.r2 + q.c1], tmid2[q.r2 + q.c2], q.edge);
}

fn avg3(v: vec3<f32>) -> f32 {
  return opq(opq(opq(v.x + v.y) + v.z) * THIRD);
}

fn opq3(x: vec3<f32>) -> vec3<f32> {
  return opq4(vec4<f32>(x, 0.0)).xyz;
}

// in1: (L, a, b, 0) -> out1: (L, blur(a), blur(b), 0).
@compute @workgroup_size(TX, TY, 1)
fn chroma(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  zero_bits = P.pad0;
  let t = Tile(i32(wid.x * TX), i32(wid.y * TY), i32(P.width), i32(P.height));
  for (var k = li; k < IW * IH; k = k + NT) {
    tin[k] = in1[in_plane_index(t, k)];
  }
  workgroupBarrier();
  pass1(t, li, false);
  workgroupBarrier();
  let x = t.ox + i32(li % TX);
  let y = t.oy + i32(li / TX);
  if (x < t.w && y < t.h) {
    let b = pass2(taps2(t, x, y));
    let i = u32(y) * P.width + u32(x);
    out1[i] = vec4<f32>(in1[i].x, b.y, b.z, 0.0);
  }
}

// in1: img -> out1: (mu.xyz, sigma^2).
@compute @workgroup_size(TX, TY, 1)
fn stats(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  zero_bits = P.pad0;
  let t = Tile(i32(wid.x * TX), i32(wid.y * TY), i32(P.width), i32(P.height));
  for (var k = li; k < IW * IH; k = k + NT) {
    let v = in1[in_plane_index(t, k)];
    tin[k] = v;
    tin2[k] = opq4(v * v);
  }
  workgroupBarrier();
  pass1(t, li, true);
  workgroupBarrier();
  let x = t.ox + i32(li % TX);
  let y = t.oy + i32(li / TX);
  if (x < t.w && y < t.h) {
    let q = taps2(t, x, y);
    let mu = pass2(q);
    let sq = pass2b(q);
    let i = u32(y) * P.width + u32(x);
    out1[i] = vec4<f32>(mu.xyz, avg3(opq3(sq.xyz - opq3(mu.xyz * mu.xyz))));
  }
}

// Reference img and stats, distorted img and stats ->
// map rows [row0, row1).
@compute @workgroup_size(TX, TY, 1)
fn ssim(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  zero_bits = P.pad0;
  let t = Tile(i32(wid.x * TX), i32(P.row0 + wid.y * TY), i32(P.width), i32(P.height));
  for (var k = li; k < IW * IH; k = k + NT) {
    let j = in_plane_index(t, k);
    tin[k] = opq4(r_img[j] * d_img[j]);
  }
  workgroupBarrier();
  pass1(t, li, false);
  workgroupBarrier();
  let x = t.ox + i32(li % TX);
  let y = t.oy + i32(li / TX);
  if (x < t.w && y < i32(P.row1)) {
    let cross = pass2(taps2(t, x, y));
    let i = u32(y) * P.width + u32(x);
    let m1 = r_mu[i];
    let m2 = d_mu[i];
    let mu11 = opq3(m1.xyz * m1.xyz);
    let mu12 = opq3(m1.xyz * m2.xyz);
    let mu22 = opq3(m2.xyz * m2.xyz);
    let mu1_sq = avg3(mu11);
    let mu2_sq = avg3(mu22);
    let mu1_mu2 = avg3(mu12);
    let sigma12 = avg3(opq3(cross.xyz - mu12));
    let c1 = kc[20];
    let c2 = kc[21];
    // fma(2, x, c) is 2x (exact) + c rounded once: no emulation needed.
    let n1 = opq(opq(2.0 * mu1_mu2) + c1);
    let n2 = opq(opq(2.0 * sigma12) + c2);
    let d1 = opq(opq(mu1_sq + mu2_sq) + c1);
    let d2 = opq(opq(m1.w + m2.w) + c2);
    let s = div_rn(opq(n1 * n2), opq(d1 * d2));
    map[u32(y - i32(P.row0)) * P.width + u32(x)] = s;
  }
}
