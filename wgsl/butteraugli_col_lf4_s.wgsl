// butteraugli_col_lf4.wgsl's global accesses on planes of f32 (any
// width): 4-byte loads and stores.

alias LT = f32;

// lf_ld0 is the sample at column x of the row starting at index row, 0
// outside the image (yok: the row is inside).
fn lf_ld0(q: u32, yok: bool, row: u32, x: u32, w: u32) -> f32 {
  let ok = yok && x < w;
  return select(0.0, lf_ld(q, select(0u, row + x, ok)), ok);
}

// lf_col_word is the samples at columns x..x+3 of the row.
fn lf_col_word(q: u32, yok: bool, row: u32, x: u32, w: u32) -> vec4<f32> {
  return vec4<f32>(lf_ld0(q, yok, row, x, w), lf_ld0(q, yok, row, x + 1u, w),
    lf_ld0(q, yok, row, x + 2u, w), lf_ld0(q, yok, row, x + 3u, w));
}

// lf_out is butteraugli_col_lf.wgsl's pointwise step for element i.
fn lf_out(i: u32, bx: f32, by: f32, bb: f32) {
  xyb0[i] = xyb0[i] - bx;
  xyb1[i] = xyb1[i] - by;
  xyb2[i] = xyb2[i] - bb;
  lf0[i] = bx * 33.832837186260;
  lf1[i] = by * 14.458268100570;
  lf2[i] = (-0.362267051518 * by + bb) * 49.87984651440;
}

// lf_col_store does the pointwise step for the pixels i..i+3 (columns
// x..x+3, x < w) that lie inside the row.
fn lf_col_store(i: u32, x: u32, w: u32, bx: vec4<f32>, by: vec4<f32>, bb: vec4<f32>) {
  lf_out(i, bx.x, by.x, bb.x);
  if (x + 1u < w) {
    lf_out(i + 1u, bx.y, by.y, bb.y);
  }
  if (x + 2u < w) {
    lf_out(i + 2u, bx.z, by.z, bb.z);
  }
  if (x + 3u < w) {
    lf_out(i + 3u, bx.w, by.w, bb.w);
  }
}
