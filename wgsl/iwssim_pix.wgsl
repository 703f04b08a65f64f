// IW-SSIM per region pixel: the Gaussian statistics along y, the
// contrast-structure term cs and, at scales with weights, piq's
// information content iw from the 3×3 statistics (the distorted side here,
// the reference's prepared in float64: refm holds five region planes, its
// Gaussian mean and variance, 3×3 mean and variance, and vᵀC⁻¹v/N).
// out holds two region planes: cs·iw and iw (last scale: the full SSIM
// and 1). Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read> bx: array<f32>;
@group(0) @binding(4) var<storage, read> refm: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

override WG_X: u32 = 64u;
override WG_Y: u32 = 4u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn pix(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.rw || gid.y >= P.rh) {
    return;
  }
  let n = P.h * P.rw;
  var m0 = 0.0;
  var e2 = 0.0;
  var ex = 0.0;
  for (var t = 0u; t < 11u; t++) {
    let k = K[K_GAUSS + t];
    let i = (gid.y + t) * P.rw + gid.x;
    m0 += k * g[i];
    e2 += k * g[n + i];
    ex += k * g[2u * n + i];
  }
  let rn = P.rw * P.rh;
  let o = gid.y * P.rw + gid.x;
  // Reference statistics: the mean shifted like the distorted side's.
  let my = refm[o] - P.shift;
  let vy = refm[rn + o];
  let sxx = max(e2 - m0 * m0, 0.0);
  let sxy = ex - m0 * my;
  let c1 = K[K_C1];
  let c2 = K[K_C2];
  let cs = (2.0 * sxy + c2) / (sxx + vy + c2);
  if (P.nlam == 0u) {
    let mx = m0 + P.shift;
    let myu = my + P.shift;
    out[o] = (2.0 * (mx * myu) + c1) / (mx * mx + myu * myu + c1) * cs;
    out[rn + o] = 1.0;
    return;
  }
  // 3×3 statistics of the block centred on this pixel (rows +4..+6).
  var q0 = 0.0;
  var q1 = 0.0;
  var q2 = 0.0;
  for (var t = 4u; t <= 6u; t++) {
    let i = (gid.y + t) * P.rw + gid.x;
    q0 += bx[i];
    q1 += bx[n + i];
    q2 += bx[2u * n + i];
  }
  let bw = K[K_BOX];
  let eps = K[K_EPS];
  let bmx = bw * q0;
  let bmy = refm[2u * rn + o] - P.shift;
  let byy = refm[3u * rn + o];
  let ss = refm[4u * rn + o];
  let bxx = max(bw * q1 - bmx * bmx, 0.0);
  let bxy = bw * q2 - bmx * bmy;
  var gg = bxy / (byy + eps);
  var vv = bxx - gg * bxy;
  if (byy < eps) {
    gg = 0.0;
    vv = bxx;
  }
  if (bxx < eps) {
    gg = 0.0;
    vv = 0.0;
  }
  let nsq = K[K_NSQ];
  let q = (vv + (1.0 + gg * gg) * nsq) * ss;
  let c = 1.0 + nsq * vv * K[K_INVNSQ2];
  // Σ log2 of the factors: a float32 product of ten factors could
  // overflow, so the logarithms are added, in k order.
  var iw = 0.0;
  for (var k = 0u; k < P.nlam; k++) {
    iw += log2(c + q * K[P.lam_off + k]);
  }
  if (iw < eps) {
    iw = 0.0;
  }
  out[o] = cs * iw;
  out[rn + o] = iw;
}
