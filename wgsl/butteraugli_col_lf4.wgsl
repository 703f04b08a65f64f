// Butteraugli frequency separation, low frequencies, 4 columns per thread
// (the default LF pair and r16g4; gpu/webgpu/butteraugli/lf.go): what
// butteraugli_col_lf.wgsl computes, with the column tile in vec4 words
// (CTX words, 4·CTX columns a row; CR = CTY + 2·LOFF rows). Each tap of a
// thread's 4 outputs is one 16-byte load and the sums are vec4 (lf_col4,
// generated): lane by lane the scalar operations of butteraugli_fir.wgsl
// in its order. The three planes are blurred one after another through
// the one tile (8 KiB for LOFF = 16, half of WebGPU's default limit). The
// host prepends the constants, lf_col4 and the global accesses:
// butteraugli_col_lf4_s.wgsl on planes of f32, _v.wgsl on planes of vec4
// for widths that are a multiple of 4; the pointwise step is
// lf_col_store's.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<LT>;
@group(0) @binding(3) var<storage, read> t1: array<LT>;
@group(0) @binding(4) var<storage, read> t2: array<LT>;
@group(0) @binding(5) var<storage, read_write> xyb0: array<LT>;
@group(0) @binding(6) var<storage, read_write> xyb1: array<LT>;
@group(0) @binding(7) var<storage, read_write> xyb2: array<LT>;
@group(0) @binding(8) var<storage, read_write> lf0: array<LT>;
@group(0) @binding(9) var<storage, read_write> lf1: array<LT>;
@group(0) @binding(10) var<storage, read_write> lf2: array<LT>;

var<workgroup> ct: array<vec4<f32>, CR * CTX>;

fn lf_kf(i: u32) -> f32 {
  return K.full[i >> 2u][i & 3u];
}

// lf_ld is element j of plane q (a constant at every call).
fn lf_ld(q: u32, j: u32) -> LT {
  switch q {
    case 0u: {
      return t0[j];
    }
    case 1u: {
      return t1[j];
    }
    default: {
      return t2[j];
    }
  }
}

// lf_fill loads plane q's tile: all CR rows of the thread's 4 columns,
// the loads of a column issued together.
fn lf_fill(q: u32, wid: vec3<u32>, lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x = wid.x * CTX * 4u + 4u * lid.x;
  let y0 = i32(wid.y * CTY) - LOFF;
  for (var r = lid.y; r < CR; r += CTY) {
    let yy = y0 + i32(r);
    let yok = yy >= 0 && yy < i32(h);
    let row = select(0u, u32(yy) * w, yok);
    ct[r * CTX + lid.x] = lf_col_word(q, yok, row, x, w);
  }
}

// lf_col_edge is the cut-off blur (fir's border path) of the 4 columns of
// tile word c, row p of n.
fn lf_col_edge(c: u32, p: i32, n: i32) -> vec4<f32> {
  let lo = max(0, p - LOFF);
  let hi = min(n - 1, p + LOFF);
  var ws = 0.0;
  for (var j = lo; j <= hi; j++) {
    ws = ws + lf_kf(u32(j - p + LOFF));
  }
  let scale = 1.0 / ws;
  var s = vec4<f32>(0.0);
  for (var j = lo; j <= hi; j++) {
    s = s + ct[u32(i32(c) + (j - p) * i32(CTX))] * lf_kf(u32(j - p + LOFF));
  }
  return s * scale;
}

// lf_blur is the column blur of the thread's 4 outputs.
fn lf_blur(lid: vec3<u32>, y: u32, h: u32) -> vec4<f32> {
  let c = (lid.y + u32(LOFF)) * CTX + lid.x;
  let p = i32(y);
  if (p >= LOFF && p < i32(h) - LOFF) {
    return lf_col4(c);
  }
  return lf_col_edge(c, p, i32(h));
}

@compute @workgroup_size(CTX, CTY, 1)
fn cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x = wid.x * CTX * 4u + 4u * lid.x;
  let y = wid.y * CTY + lid.y;
  let live = x < w && y < h;
  var bx = vec4<f32>(0.0);
  var by = vec4<f32>(0.0);
  var bb = vec4<f32>(0.0);
  lf_fill(0u, wid, lid);
  workgroupBarrier();
  if (live) {
    bx = lf_blur(lid, y, h);
  }
  workgroupBarrier();
  lf_fill(1u, wid, lid);
  workgroupBarrier();
  if (live) {
    by = lf_blur(lid, y, h);
  }
  workgroupBarrier();
  lf_fill(2u, wid, lid);
  workgroupBarrier();
  if (live) {
    bb = lf_blur(lid, y, h);
  }
  if (!live) {
    return;
  }
  lf_col_store(y * w + x, x, w, bx, by, bb);
}
