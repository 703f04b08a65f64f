// IW-SSIM statistics along x, for every row of a band: the 11-tap
// Gaussian of a, a², a·b and (scales with weights) the 3-sums around each
// region column of the same, where a = x − shift, b = y − shift (x the
// distorted band, y the reference's). Shifting both by the same constant
// changes no variance or covariance and keeps the float32 cancellation of
// E[a²] − E[a]² small on the low-pass scale, whose values reach 255·16.
// g holds three planes of h×rw (a, a², a·b), bx the same for the 3-sums.
// Needs iwssim_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> bx: array<f32>;

override WG_X: u32 = 64u;
override WG_Y: u32 = 4u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn hpass(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.rw || gid.y >= P.h) {
    return;
  }
  let base = gid.y * P.w + gid.x;
  var s0 = 0.0;
  var s1 = 0.0;
  var s2 = 0.0;
  var b0 = 0.0;
  var b1 = 0.0;
  var b2 = 0.0;
  for (var t = 0u; t < 11u; t++) {
    let a = x[base + t] - P.shift;
    let b = y[base + t] - P.shift;
    let k = K[K_GAUSS + t];
    s0 += k * a;
    s1 += k * (a * a);
    s2 += k * (a * b);
    if (t >= 4u && t <= 6u) {
      b0 += a;
      b1 += a * a;
      b2 += a * b;
    }
  }
  let n = P.h * P.rw;
  let i = gid.y * P.rw + gid.x;
  g[i] = s0;
  g[n + i] = s1;
  g[2u * n + i] = s2;
  if (P.nlam > 0u) {
    bx[i] = b0;
    bx[n + i] = b1;
    bx[2u * n + i] = b2;
  }
}
