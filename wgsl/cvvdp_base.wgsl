// ColorVideoVDP: the base band (cpu/cvvdp prepareBand's and
// scoreBaseBand's last-band case), one workgroup for the whole band: the
// background is the mean of the achromatic channel clamped at 0.01, the
// contrast min(g / mean, 1000). base_ref (Prepare) writes the reference's
// S per channel (the CSF at 0.1 cycles/degree for that background) to
// rb[0..2] and its contrast R to rb[4 + c·n + i]; base_dist (Score) sums
// safe_pow(|T − R|·S, 2) per channel into sums[3·row_off + c] (and
// base_dist_map the distortion map's values into heat). Sums run in
// a fixed order (strided per invocation, then a tree). Needs
// cvvdp_common.wgsl and cvvdp_csf.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> rb: array<f32>;
@group(0) @binding(4) var<storage, read_write> sums: array<f32>;
@group(0) @binding(5) var<storage, read_write> heat: array<f32>;  // base_dist_map only

// WG must be a power of two (the tree halves it).
override WG: u32 = 256u;
var<workgroup> part: array<vec3<f32>, WG>;

// tree adds part[0..WG) into part[0] (every invocation calls it).
fn tree(lid: u32) {
  workgroupBarrier();
  for (var hs = WG / 2u; hs > 0u; hs = hs / 2u) {
    if (lid < hs) {
      part[lid] = part[lid] + part[lid + hs];
    }
    workgroupBarrier();
  }
}

// background is the band's mean achromatic level clamped at 0.01 (all
// invocations get it).
fn background(lid: u32) -> f32 {
  let n = P.w * P.h;
  var s = 0.0;
  for (var i = lid; i < n; i += WG) {
    s += max(g[i], K[K_LMIN]);
  }
  part[lid] = vec3<f32>(s, 0.0, 0.0);
  tree(lid);
  let lb = part[0].x / f32(n);
  workgroupBarrier();
  return lb;
}

@compute @workgroup_size(WG, 1, 1)
fn base_ref(@builtin(local_invocation_id) lid: vec3<u32>) {
  let n = P.w * P.h;
  let lb = background(lid.x);
  if (lid.x < 3u) {
    rb[lid.x] = csf_s(P.band, lid.x, log10f(lb));
  }
  for (var i = lid.x; i < n; i += WG) {
    for (var c = 0u; c < 3u; c++) {
      rb[4u + c * n + i] = min(g[c * n + i] / lb, K[K_CMAX]);
    }
  }
}

// base_d is the base band's difference |T − R|·S per channel at pixel i
// of a band of n pixels with background lb.
fn base_d(i: u32, n: u32, lb: f32) -> vec3<f32> {
  var d: vec3<f32>;
  for (var c = 0u; c < 3u; c++) {
    let t = min(g[c * n + i] / lb, K[K_CMAX]);
    d[c] = abs(t - rb[4u + c * n + i]) * rb[c];
  }
  return d;
}

// base_finish adds the invocations' sums of safe_pow(D, 2) in a fixed
// tree and writes them.
fn base_finish(lid: u32, acc: vec3<f32>) {
  part[lid] = acc;
  tree(lid);
  if (lid == 0u) {
    let o = 3u * P.row_off;
    sums[o] = part[0].x;
    sums[o + 1u] = part[0].y;
    sums[o + 2u] = part[0].z;
  }
}

@compute @workgroup_size(WG, 1, 1)
fn base_dist(@builtin(local_invocation_id) lid: vec3<u32>) {
  let n = P.w * P.h;
  let lb = background(lid.x);
  let e = K[K_EPS];
  var acc = vec3<f32>(0.0);
  for (var i = lid.x; i < n; i += WG) {
    let d = base_d(i, n, lb);
    acc += (d + e) * (d + e) - e * e;
  }
  base_finish(lid.x, acc);
}

// base_dist_map is base_dist that also writes each pixel's
// distortion-map value to heat.
@compute @workgroup_size(WG, 1, 1)
fn base_dist_map(@builtin(local_invocation_id) lid: vec3<u32>) {
  let n = P.w * P.h;
  let lb = background(lid.x);
  let e = K[K_EPS];
  var acc = vec3<f32>(0.0);
  for (var i = lid.x; i < n; i += WG) {
    let d = base_d(i, n, lb);
    acc += (d + e) * (d + e) - e * e;
    heat[i] = heat_pixel(d, K_HEATWB, P.mul);
  }
  base_finish(lid.x, acc);
}
