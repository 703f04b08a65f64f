// Butteraugli frequency separation, high and ultra-high frequencies, 4
// columns per thread (butteraugli_col4.wgsl): what
// butteraugli_col_uhf.wgsl computes, lane by lane. Only the pointwise
// step: the host writes the bindings and cols up to here (blur.go's
// bfCol4Head for bfStageUHF: the blurs bx, by of the two row planes;
// read-write planes 0-1 the HF planes, which become UHF, 2-3 HF), and the
// step ends cols.

  let i = y * w + x;
  let ux = col4_get(0u, i, x, w) - bx;
  col4_put(2u, i, x, w, remove_range4(1.5, bx));
  col4_put(0u, i, x, w, remove_range4(0.04, ux));
  let hv = maximum_clamp4(28.4691806922, by);
  let uv = maximum_clamp4(5.19175294647, col4_get(1u, i, x, w) - hv);
  col4_put(1u, i, x, w, uv * 2.69313763794);
  col4_put(3u, i, x, w, amplify_range4(0.132, hv * 2.155));
}
