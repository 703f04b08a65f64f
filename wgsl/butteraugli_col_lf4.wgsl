// Butteraugli frequency separation, low frequencies, 4 columns per thread
// (butteraugli_col4.wgsl): what butteraugli_col_lf.wgsl computes, lane by
// lane. Only the pointwise step: the host writes the bindings and cols up
// to here (blur.go's bfCol4Head for bfStageLF: the blurs bx, by, bb of the
// three row planes; read-write planes 0-2 the XYB planes, 3-5 LF), and
// the step ends cols.

  let i = y * w + x;
  col4_put(0u, i, x, w, col4_get(0u, i, x, w) - bx);
  col4_put(1u, i, x, w, col4_get(1u, i, x, w) - by);
  col4_put(2u, i, x, w, col4_get(2u, i, x, w) - bb);
  col4_put(3u, i, x, w, bx * 33.832837186260);
  col4_put(4u, i, x, w, by * 14.458268100570);
  col4_put(5u, i, x, w, (-0.362267051518 * by + bb) * 49.87984651440);
}
