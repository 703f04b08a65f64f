// Butteraugli blurs, second half, 4 columns per thread (the vec4 blurs of
// gpu/webgpu/butteraugli/blur.go): the column machinery shared by the
// stages, whose files (butteraugli_col_lf4, _mf4, _uhf4 and _plain4.wgsl)
// hold only their pointwise steps. The column tile holds one plane at a
// time in vec4 words (CTX words, 4·CTX columns a row; CR = CTY + 2·LOFF
// rows): each tap of a thread's 4 outputs is one 16-byte load and the
// sums are vec4 (fir_col4, generated): lane by lane the scalar operations
// of butteraugli_fir.wgsl in its order. A kernel blurs its planes one
// after another through the tile, so its workgroup memory does not grow
// with their number (8 KiB for the LF radius of 16, half of WebGPU's
// default limit).
//
// The host prepends the constants (LOFF, CTX, CTY, CR), fir_col4, then
// this file and the global accesses (butteraugli_col4_s.wgsl on planes of
// f32, _v.wgsl on planes of vec4 for widths that are a multiple of 4),
// then what it generates for the stage (blur.go's bfCol4Head): the
// bindings, the three functions the accesses reach the planes through,
// each a switch on a plane number that is a constant at every call
// (col4_src(q, j) loads element j of blurred plane q, col4_rd(q, j) of
// read-write plane q, col4_wr(q, j, v) stores it), and the entry point
// cols up to its pointwise step, which the stage's file appends.

var<workgroup> ct: array<vec4<f32>, CR * CTX>;

fn col4_kf(i: u32) -> f32 {
  return K.full[i >> 2u][i & 3u];
}

// col4_fill loads plane q's tile: all CR rows of the thread's 4 columns,
// the loads of a column issued together.
fn col4_fill(q: u32, wid: vec3<u32>, lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x = wid.x * CTX * 4u + 4u * lid.x;
  let y0 = i32(wid.y * CTY) - LOFF;
  for (var r = lid.y; r < CR; r += CTY) {
    let yy = y0 + i32(r);
    let yok = yy >= 0 && yy < i32(h);
    let row = select(0u, u32(yy) * w, yok);
    ct[r * CTX + lid.x] = col4_word(q, yok, row, x, w);
  }
}

// col4_edge is the cut-off blur (fir's border path) of the 4 columns of
// tile word c, row p of n.
fn col4_edge(c: u32, p: i32, n: i32) -> vec4<f32> {
  let lo = max(0, p - LOFF);
  let hi = min(n - 1, p + LOFF);
  var ws = 0.0;
  for (var j = lo; j <= hi; j++) {
    ws = ws + col4_kf(u32(j - p + LOFF));
  }
  let scale = 1.0 / ws;
  var s = vec4<f32>(0.0);
  for (var j = lo; j <= hi; j++) {
    s = s + ct[u32(i32(c) + (j - p) * i32(CTX))] * col4_kf(u32(j - p + LOFF));
  }
  return s * scale;
}

// col4_plane fills the tile with plane q and returns the column blur of
// the thread's 4 outputs (0 where live is false: the thread only helps to
// fill). The caller puts a barrier between two planes, so that no thread
// refills the tile while another still reads it.
fn col4_plane(q: u32, wid: vec3<u32>, lid: vec3<u32>, live: bool) -> vec4<f32> {
  col4_fill(q, wid, lid);
  workgroupBarrier();
  if (!live) {
    return vec4<f32>(0.0);
  }
  let c = (lid.y + u32(LOFF)) * CTX + lid.x;
  let p = i32(wid.y * CTY + lid.y);
  let h = i32(P.height);
  if (p >= LOFF && p < h - LOFF) {
    return fir_col4(c);
  }
  return col4_edge(c, p, h);
}

// The pointwise steps' scalar functions (butteraugli_common.wgsl) lane by
// lane: the same operations on each.
fn remove_range4(w: f32, v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(remove_range(w, v.x), remove_range(w, v.y), remove_range(w, v.z), remove_range(w, v.w));
}

fn amplify_range4(w: f32, v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(amplify_range(w, v.x), amplify_range(w, v.y), amplify_range(w, v.z), amplify_range(w, v.w));
}

fn maximum_clamp4(m: f32, v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(maximum_clamp(m, v.x), maximum_clamp(m, v.y), maximum_clamp(m, v.z), maximum_clamp(m, v.w));
}
