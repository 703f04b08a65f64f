// butteraugli_col_lf4.wgsl's global accesses on planes of vec4 words
// (widths that are a multiple of 4: a row starts on a word, and a word
// is inside the row or outside it): 16-byte loads and stores, the
// pointwise step lane by lane.

alias LT = vec4<f32>;

// lf_col_word is the samples at columns x..x+3 (x a multiple of 4) of the
// row starting at index row, 0 outside the image (yok: the row is
// inside).
fn lf_col_word(q: u32, yok: bool, row: u32, x: u32, w: u32) -> vec4<f32> {
  let ok = yok && x < w;
  return select(vec4<f32>(0.0), lf_ld(q, select(0u, (row + x) >> 2u, ok)), ok);
}

// lf_out is butteraugli_col_lf.wgsl's pointwise step for word i.
fn lf_out(i: u32, bx: vec4<f32>, by: vec4<f32>, bb: vec4<f32>) {
  xyb0[i] = xyb0[i] - bx;
  xyb1[i] = xyb1[i] - by;
  xyb2[i] = xyb2[i] - bb;
  lf0[i] = bx * 33.832837186260;
  lf1[i] = by * 14.458268100570;
  lf2[i] = (-0.362267051518 * by + bb) * 49.87984651440;
}

// lf_col_store does the pointwise step for the pixels i..i+3 (x < w, a
// multiple of 4: all four inside the row).
fn lf_col_store(i: u32, x: u32, w: u32, bx: vec4<f32>, by: vec4<f32>, bb: vec4<f32>) {
  lf_out(i >> 2u, bx, by, bb);
}
