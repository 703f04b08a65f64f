// butteraugli_rows_lf4.wgsl's global accesses on planes of f32 (any
// width): 4-byte loads and stores.

alias LT = f32;

// lf_row_ld is source sample xx of the row starting at index row, 0
// outside the image.
fn lf_row_ld(yin: bool, row: u32, xx: i32, w: u32) -> f32 {
  let ok = yin && xx >= 0 && xx < i32(w);
  return select(0.0, src[select(0u, row + u32(xx), ok)], ok);
}

// lf_row_word is samples xx..xx+3 of the row.
fn lf_row_word(yin: bool, row: u32, xx: i32, w: u32) -> vec4<f32> {
  return vec4<f32>(lf_row_ld(yin, row, xx, w), lf_row_ld(yin, row, xx + 1, w),
    lf_row_ld(yin, row, xx + 2, w), lf_row_ld(yin, row, xx + 3, w));
}

// lf_row_store stores the outputs at xo..xo+3 that lie inside the row.
fn lf_row_store(row: u32, xo: u32, w: u32, o: vec4<f32>) {
  if (xo + 3u < w) {
    dst[row + xo] = o.x;
    dst[row + xo + 1u] = o.y;
    dst[row + xo + 2u] = o.z;
    dst[row + xo + 3u] = o.w;
    return;
  }
  for (var j = 0u; j < 4u && xo + j < w; j++) {
    dst[row + xo + j] = o[j];
  }
}
