// ColorVideoVDP: the Weber contrast of a band below the base band and its
// sensitivities, one invocation per pixel (cpu/cvvdp prepareBand and the
// first part of scoreBand), on the window's rows. g is the image's level
// (three planes), ex the window of the enlarged coarser level (three
// planes, w·win_h apart, as are rp, s and mm); the background is max(ex's
// achromatic channel, 0.01). Needs cvvdp_common.wgsl and
// cvvdp_csf.wgsl.
//
// ref_band (Prepare): S per channel from the castleCSF row of the band and
// the background, and the reference's R·S·gain; written to rp and s.
// dist_band (Score): T·S·gain with the reference's S, then, in place of
// ex, |T_p − R_p| (the difference the masking model powers), and into mm
// the mutual masker min(|T_p|, |R_p|).

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> ex: array<f32>;
@group(0) @binding(4) var<storage, read_write> rp: array<f32>;
@group(0) @binding(5) var<storage, read_write> s: array<f32>;
@group(0) @binding(6) var<storage, read_write> mm: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

// contrast is the band's clamped Weber contrast of channel c at pixel gi
// of g's buffer (window pixel i).
fn contrast(gi: u32, i: u32, c: u32, lb: f32) -> f32 {
  return min((g[c * P.w * P.g_h + gi] - ex[c * P.win_h * P.w + i]) / lb, K[K_CMAX]) * P.mul;
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn ref_band(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.win_h) {
    return;
  }
  let n = P.w * P.win_h;
  let i = gid.y * P.w + gid.x;
  let gi = (P.win0 + gid.y - P.g0) * P.w + gid.x;
  let lb = max(ex[i], K[K_LMIN]);
  let logl = log10f(lb);
  for (var c = 0u; c < 3u; c++) {
    let sc = csf_s(P.band, c, logl);
    let ct = contrast(gi, i, c, lb);
    s[c * n + i] = sc;
    rp[c * n + i] = ct * sc * K[K_GAIN + c];
  }
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn dist_band(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.w || gid.y >= P.win_h) {
    return;
  }
  let n = P.w * P.win_h;
  let i = gid.y * P.w + gid.x;
  let gi = (P.win0 + gid.y - P.g0) * P.w + gid.x;
  let lb = max(ex[i], K[K_LMIN]);
  var d: array<f32, 3>;
  for (var c = 0u; c < 3u; c++) {
    let o = c * n + i;
    let tp = contrast(gi, i, c, lb) * s[o] * K[K_GAIN + c];
    let r = rp[o];
    d[c] = abs(tp - r);
    mm[o] = min(abs(tp), abs(r));
  }
  // ex is written only after every channel has read it (channel 0 is
  // the background).
  for (var c = 0u; c < 3u; c++) {
    ex[c * n + i] = d[c];
  }
}
