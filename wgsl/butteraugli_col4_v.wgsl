// butteraugli_col4.wgsl's global accesses on planes of vec4 words (widths
// that are a multiple of 4: a row starts on a word, and a word is inside
// the row or outside it): 16-byte loads and stores.

alias LT = vec4<f32>;

// col4_word is the samples at columns x..x+3 (x a multiple of 4) of
// blurred plane q's row starting at index row, 0 outside the image (yok:
// the row is inside).
fn col4_word(q: u32, yok: bool, row: u32, x: u32, w: u32) -> vec4<f32> {
  let ok = yok && x < w;
  return select(vec4<f32>(0.0), col4_src(q, select(0u, (row + x) >> 2u, ok)), ok);
}

// col4_get is read-write plane q at the pixels i..i+3 (x < w, a multiple
// of 4: all four inside the row).
fn col4_get(q: u32, i: u32, x: u32, w: u32) -> vec4<f32> {
  return col4_rd(q, i >> 2u);
}

// col4_put stores v into plane q at the pixels i..i+3.
fn col4_put(q: u32, i: u32, x: u32, w: u32, v: vec4<f32>) {
  col4_wr(q, i >> 2u, v);
}
