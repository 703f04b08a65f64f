// ColorVideoVDP: the masking model and the spatial pooling of one row of a
// band below the base band (cpu/cvvdp scoreBand, vblurRow, maskedRow), one
// workgroup per row y = own0 + workgroup (band rows; the window planes
// hold rows win0..): the masker's vertical blur ×10^mask_c (or, for
// bands too small to blur, the masker ×10^mask_c), safe_pow of it to q per
// channel, the cross-channel masking signal M, D = safe_pow(|T_p − R_p|,
// p) / (1 + M) softly clamped at 10^d_max, and the row's sums of
// safe_pow(D, 2) per channel, added in a fixed order (strided per
// invocation, then a tree): bit-identical run to run. Needs
// cvvdp_common.wgsl.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> mb: array<f32>;   // hb (blurred along x) or mm
@group(0) @binding(3) var<storage, read> du: array<f32>;   // |T_p − R_p|
@group(0) @binding(4) var<storage, read_write> sums: array<f32>;
@group(0) @binding(5) var<storage, read_write> heat: array<f32>;  // rows_map only

// WG must be a power of two (the tree halves it).
override WG: u32 = 256u;
var<workgroup> part: array<vec3<f32>, WG>;

// masker is the masking signal of the window plane at offset o for band
// pixel (x, y): the vertical blur (reflected at the band's edges, which
// the window covers) of the horizontally blurred masker, or the masker
// itself, times 10^mask_c.
fn masker(o: u32, x: u32, y: i32) -> f32 {
  if (P.blur == 0u) {
    return mb[o + (u32(y) - P.win0) * P.w + x] * K[K_MASKC];
  }
  let h = i32(P.h);
  var v: array<f32, 13>;
  for (var k = 0; k < 13; k++) {
    v[k] = mb[o + (u32(reflect_idx(y + k - 6, h)) - P.win0) * P.w + x];
  }
  let s = K[K_PU + 6u] * v[6] + K[K_PU + 5u] * (v[5] + v[7]) + K[K_PU + 4u] * (v[4] + v[8]) +
    K[K_PU + 3u] * (v[3] + v[9]) + K[K_PU + 2u] * (v[2] + v[10]) + K[K_PU + 1u] * (v[1] + v[11]) +
    K[K_PU] * (v[0] + v[12]);
  return s * K[K_MASKC];
}

fn sq_term(d: f32) -> f32 {
  let e = K[K_EPS];
  let t = d + e;
  return t * t - e * e;
}

// pixel_d is the masked, softly clamped difference D per channel at band
// pixel (x, y).
fn pixel_d(x: u32, y: u32) -> vec3<f32> {
  let n = P.w * P.win_h;
  let ly = y - P.win0;
  let eps = K[K_EPS];
  let dm = K[K_DMAX];
  var sp: array<f32, 3>;
  var dv: array<f32, 3>;
  for (var c = 0u; c < 3u; c++) {
    sp[c] = pow(masker(c * n, x, i32(y)) + eps, K[K_MASKQ + c]) - K[K_EPSQ + c];
    dv[c] = pow(du[c * n + ly * P.w + x] + eps, K[K_MASKP]) - K[K_EPSP];
  }
  var d: vec3<f32>;
  for (var c = 0u; c < 3u; c++) {
    let m = sp[0] * K[K_XCM + c] + sp[1] * K[K_XCM + 3u + c] + sp[2] * K[K_XCM + 6u + c];
    let u = dv[c] / (1.0 + m);
    d[c] = dm * u / (dm + u);
  }
  return d;
}

// finish adds the invocations' parts in a fixed tree and writes row y's
// sums.
fn finish(lid: u32, y: u32, acc: vec3<f32>) {
  part[lid] = acc;
  workgroupBarrier();
  for (var hs = WG / 2u; hs > 0u; hs = hs / 2u) {
    if (lid < hs) {
      part[lid] = part[lid] + part[lid + hs];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let o = 3u * (P.row_off + y);
    sums[o] = part[0].x;
    sums[o + 1u] = part[0].y;
    sums[o + 2u] = part[0].z;
  }
}

@compute @workgroup_size(WG, 1, 1)
fn rows(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let y = P.own0 + wid.x;
  var acc = vec3<f32>(0.0);
  for (var x = lid.x; x < P.w; x += WG) {
    let d = pixel_d(x, y);
    acc += vec3<f32>(sq_term(d[0]), sq_term(d[1]), sq_term(d[2]));
  }
  finish(lid.x, y, acc);
}

// rows_map is rows that also writes the band's distortion-map values
// (the band's whole plane, w × h) of its row.
@compute @workgroup_size(WG, 1, 1)
fn rows_map(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
  let y = P.own0 + wid.x;
  var acc = vec3<f32>(0.0);
  for (var x = lid.x; x < P.w; x += WG) {
    let d = pixel_d(x, y);
    acc += vec3<f32>(sq_term(d[0]), sq_term(d[1]), sq_term(d[2]));
    heat[y * P.w + x] = heat_pixel(d, K_HEATW, P.mul);
  }
  finish(lid.x, y, acc);
}
