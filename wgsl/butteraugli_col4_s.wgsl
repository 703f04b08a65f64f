// butteraugli_col4.wgsl's global accesses on planes of f32 (any width):
// 4-byte loads and stores, the lanes past the row's end left out.

alias LT = f32;

// col4_ld0 is the sample at column x of blurred plane q's row starting
// at index row, 0 outside the image (yok: the row is inside).
fn col4_ld0(q: u32, yok: bool, row: u32, x: u32, w: u32) -> f32 {
  let ok = yok && x < w;
  return select(0.0, col4_src(q, select(0u, row + x, ok)), ok);
}

// col4_word is the samples at columns x..x+3 of the row.
fn col4_word(q: u32, yok: bool, row: u32, x: u32, w: u32) -> vec4<f32> {
  return vec4<f32>(col4_ld0(q, yok, row, x, w), col4_ld0(q, yok, row, x + 1u, w),
    col4_ld0(q, yok, row, x + 2u, w), col4_ld0(q, yok, row, x + 3u, w));
}

// col4_get is read-write plane q at the pixels i..i+3 (columns x..x+3,
// x < w), 0 for those past the row's end.
fn col4_get(q: u32, i: u32, x: u32, w: u32) -> vec4<f32> {
  var v = vec4<f32>(col4_rd(q, i), 0.0, 0.0, 0.0);
  if (x + 1u < w) {
    v.y = col4_rd(q, i + 1u);
  }
  if (x + 2u < w) {
    v.z = col4_rd(q, i + 2u);
  }
  if (x + 3u < w) {
    v.w = col4_rd(q, i + 3u);
  }
  return v;
}

// col4_put stores v into plane q at the pixels i..i+3 that lie inside the
// row.
fn col4_put(q: u32, i: u32, x: u32, w: u32, v: vec4<f32>) {
  col4_wr(q, i, v.x);
  if (x + 1u < w) {
    col4_wr(q, i + 1u, v.y);
  }
  if (x + 2u < w) {
    col4_wr(q, i + 2u, v.z);
  }
  if (x + 3u < w) {
    col4_wr(q, i + 3u, v.w);
  }
}
