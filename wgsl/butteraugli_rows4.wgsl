// Butteraugli blur, first half, 4 outputs per thread (the vec4 blurs of
// gpu/webgpu/butteraugli/blur.go): one plane convolved along x with the
// kernel of radius LOFF. Workgroup RTX×RTY; each tile row spans the
// workgroup's 4·RTX outputs, LHALO samples to their left (LOFF rounded up
// to whole vec4 words, so that every word starts on a multiple of 4 of
// the image row and can be one 16-byte global load) and at least LOFF to
// their right, in RV vec4 words. A thread reads the NW words around its
// outputs (16-byte workgroup loads) and sums from registers (fir_row4,
// generated, the arithmetic of butteraugli_fir.wgsl's interior sum). The
// host prepends the constants (LOFF, LHALO, NW, RTX, RTY, RV) and
// fir_row4, then the global accesses: butteraugli_rows4_s.wgsl (planes of
// f32) or _v.wgsl (planes of vec4, for widths that are a multiple of 4).
// Rows are independent: the workgroups cover rows from P.row0 to
// win_end(P) (a band's window, butteraugli_common.wgsl; the whole plane
// with the level's own block).

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> src: array<LT>;
@group(0) @binding(3) var<storage, read_write> dst: array<LT>;

var<workgroup> rt: array<vec4<f32>, RTY * RV>;

fn row4_kf(i: u32) -> f32 {
  return K.full[i >> 2u][i & 3u];
}

// row4_edge is the cut-off blur (fir's border path) of output p whose
// sample is number q of the tile row starting at word base.
fn row4_edge(base: u32, q: u32, p: i32, n: i32) -> f32 {
  let lo = max(0, p - LOFF);
  let hi = min(n - 1, p + LOFF);
  var ws = 0.0;
  for (var j = lo; j <= hi; j++) {
    ws = ws + row4_kf(u32(j - p + LOFF));
  }
  let scale = 1.0 / ws;
  var s = 0.0;
  for (var j = lo; j <= hi; j++) {
    let k = u32(i32(q) + (j - p));
    s = s + rt[base + (k >> 2u)][k & 3u] * row4_kf(u32(j - p + LOFF));
  }
  return s * scale;
}

@compute @workgroup_size(RTX, RTY, 1)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let y = P.row0 + wid.y * RTY + lid.y;
  let yin = y < win_end(P);
  let row = select(0u, y * w, yin);
  let x0 = i32(wid.x * RTX * 4u) - LHALO;
  let base = lid.y * RV;
  for (var i = lid.x; i < RV; i += RTX) {
    let xx = x0 + 4 * i32(i);
    rt[base + i] = row4_word(yin, row, xx, w);
  }
  workgroupBarrier();
  let xo = wid.x * RTX * 4u + 4u * lid.x;
  if (!yin || xo >= w) {
    return;
  }
  var o = fir_row4(base + lid.x);
  let n = i32(w);
  if (!(i32(xo) >= LOFF && i32(xo) + 3 < n - LOFF)) {
    for (var j = 0u; j < 4u; j++) {
      let p = i32(xo + j);
      if (p < n && !(p >= LOFF && p < n - LOFF)) {
        o[j] = row4_edge(base, 4u * lid.x + j + u32(LHALO), p, n);
      }
    }
  }
  row4_store(row, xo, w, o);
}
