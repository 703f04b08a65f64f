// castleCSF lookup (cpu/cvvdp csfInterp, sensitivity): needs K bound as
// `K`. Included after cvvdp_common.wgsl by the kernels that use it.

// csf_s is the sensitivity S of channel c on band b for a background of
// log10 luminance logl: the band's row interpolated linearly along the
// table's uniform log-luminance axis (clamped), 10^ of it, times the
// sensitivity correction.
fn csf_s(b: u32, c: u32, logl: f32) -> f32 {
  let x0 = K[K_LOGL0];
  let x1 = K[K_LOGL1];
  var ind = (logl - x0) / (x1 - x0) * 31.0;
  ind = clamp(ind, 0.0, 31.0);
  let i0 = u32(ind);
  let frac = ind - f32(i0);
  let i1 = min(i0 + 1u, 31u);
  let row = K_CSF + (3u * b + c) * 32u;
  let v = K[row + i0] * (1.0 - frac) + K[row + i1] * frac;
  return exp10f(v) * K[K_SENS];
}
