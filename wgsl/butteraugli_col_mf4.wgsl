// Butteraugli frequency separation, medium frequencies, 4 columns per
// thread (butteraugli_col4.wgsl): what butteraugli_col_mf.wgsl computes,
// lane by lane. Only the pointwise step: the host writes the bindings and
// cols up to here (blur.go's bfCol4Head for bfStageHF: the blurs bx, by,
// bb of the three row planes; read-write planes 0-1 the X and Y
// residuals, which become HF, 2-4 MF), and the step ends cols.

  let i = y * w + x;
  let hx = col4_get(0u, i, x, w) - bx;
  let hy = col4_get(1u, i, x, w) - by;
  col4_put(2u, i, x, w, remove_range4(0.29, bx));
  col4_put(3u, i, x, w, amplify_range4(0.1, by));
  col4_put(4u, i, x, w, bb);
  let s = 46.0 / (hy * hy + 46.0) * SUPPRESS_OMS + 0.653020556257;
  col4_put(0u, i, x, w, s * hx);
  col4_put(1u, i, x, w, hy);
}
