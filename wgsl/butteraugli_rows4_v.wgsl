// butteraugli_rows4.wgsl's global accesses on planes of vec4 words
// (widths that are a multiple of 4: a row starts on a word, and a word
// is inside the row or outside it): 16-byte loads and stores.

alias LT = vec4<f32>;

// row4_word is samples xx..xx+3 (xx a multiple of 4) of the row
// starting at index row, 0 outside the image.
fn row4_word(yin: bool, row: u32, xx: i32, w: u32) -> vec4<f32> {
  let ok = yin && xx >= 0 && xx < i32(w);
  return select(vec4<f32>(0.0), src[select(0u, (row + u32(xx)) >> 2u, ok)], ok);
}

// row4_store stores the outputs at xo..xo+3 (xo < w, a multiple of 4).
fn row4_store(row: u32, xo: u32, w: u32, o: vec4<f32>) {
  dst[(row + xo) >> 2u] = o;
}
