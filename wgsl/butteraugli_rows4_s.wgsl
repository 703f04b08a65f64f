// butteraugli_rows4.wgsl's global accesses on planes of f32 (any
// width): 4-byte loads and stores.

alias LT = f32;

// row4_ld is source sample xx of the row starting at index row, 0
// outside the image.
fn row4_ld(yin: bool, row: u32, xx: i32, w: u32) -> f32 {
  let ok = yin && xx >= 0 && xx < i32(w);
  return select(0.0, src[select(0u, row + u32(xx), ok)], ok);
}

// row4_word is samples xx..xx+3 of the row.
fn row4_word(yin: bool, row: u32, xx: i32, w: u32) -> vec4<f32> {
  return vec4<f32>(row4_ld(yin, row, xx, w), row4_ld(yin, row, xx + 1, w),
    row4_ld(yin, row, xx + 2, w), row4_ld(yin, row, xx + 3, w));
}

// row4_store stores the outputs at xo..xo+3 that lie inside the row.
fn row4_store(row: u32, xo: u32, w: u32, o: vec4<f32>) {
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
