// ColorVideoVDP: the decimated pyramid's reduce and expand passes
// (cpu/cvvdp pyramid.go, lpyr_dec.py), one invocation per output sample
// and channel (z). Planes of a level lie one after another in one buffer
// (channel c at c·w·h); so do the intermediate planes in tmp. Needs
// cvvdp_common.wgsl. P is the finer level's Params: reduce goes from
// (w, h) to (wn, hn), expand from (wn, hn) back to the window rows
// [win0, win0 + win_h) of (w, h).
//
// Reduce: the 5-tap kernel vertically with stride 2 (reduce_v) then
// horizontally (reduce_h), zero padding plus pycvvdp's corrections at the
// first and last output; the last column's correction follows the parity
// of the ROWS h, as lpyr_dec.py's does. Expand: even outputs
// ke0·x[m−1] + ke2·x[m] + ke0·x[m+1], odd ones ke1·x[m] + ke1·x[m+1],
// indices clamped to the source (expand_v, then expand_h).

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> K: array<f32>;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

fn tap(k: i32) -> f32 {
  // taps [kr0, kr1, kr2, kr1, kr0] for k = -2..2
  return K[K_RED + u32(2 - abs(k))];
}

// reduce_v: src level rows [r_src0, r_src0 + r_src_h) (w wide) -> dst
// tmp rows for next-level rows [r_out0, r_out0 + r_out_h) (w wide). The
// bounds and the edge corrections are the whole level's.
@compute @workgroup_size(WG_X, WG_Y, 1)
fn reduce_v(@builtin(global_invocation_id) gid: vec3<u32>) {
  let w = P.w;
  let h = P.h;
  if (gid.x >= w || gid.y >= P.r_out_h) {
    return;
  }
  let oi = P.r_out0 + gid.y;
  let i = i32(oi);
  let x = gid.x;
  let so = gid.z * w * P.r_src_h;
  let s0 = i32(P.r_src0);
  let kr0 = K[K_RED];
  let kr1 = K[K_RED + 1u];
  let c = 2 * i;
  var out = 0.0;
  for (var k = -2; k <= 2; k++) {
    let r = c + k;
    if (r < 0 || r >= i32(h)) {
      continue;
    }
    out += tap(k) * src[so + u32(r - s0) * w + x];
  }
  if (i == 0) {
    out += src[so + x] * kr1 + src[so + w + x] * kr0;
  }
  if (oi == P.hn - 1u) {
    let last = src[so + (h - 1u - P.r_src0) * w + x];
    if (h % 2u == 1u) {
      out += last * kr1 + src[so + (h - 2u - P.r_src0) * w + x] * kr0;
    } else {
      out += last * kr0;
    }
  }
  dst[gid.z * P.r_out_h * w + gid.y * w + x] = out;
}

// reduce_h: src tmp (w × r_out_h) -> dst next level rows r_out0.. (wn ×
// hn, whole).
@compute @workgroup_size(WG_X, WG_Y, 1)
fn reduce_h(@builtin(global_invocation_id) gid: vec3<u32>) {
  let w = P.w;
  if (gid.x >= P.wn || gid.y >= P.r_out_h) {
    return;
  }
  let kr0 = K[K_RED];
  let kr1 = K[K_RED + 1u];
  let ro = gid.z * P.r_out_h * w + gid.y * w;
  let c = 2 * i32(gid.x);
  var s = 0.0;
  for (var k = -2; k <= 2; k++) {
    let x = c + k;
    if (x >= 0 && x < i32(w)) {
      s += tap(k) * src[ro + u32(x)];
    }
  }
  if (gid.x == 0u) {
    s += src[ro] * kr1 + src[ro + 1u] * kr0;
  }
  if (gid.x == P.wn - 1u) {
    if (P.h % 2u == 1u) {
      s += src[ro + w - 1u] * kr1 + src[ro + w - 2u] * kr0;
    } else {
      s += src[ro + w - 1u] * kr0;
    }
  }
  dst[gid.z * P.wn * P.hn + (P.r_out0 + gid.y) * P.wn + gid.x] = s;
}

fn clampi(i: i32, n: u32) -> u32 {
  return u32(clamp(i, 0, i32(n) - 1));
}

// expand_v: src coarser level (wn × hn) -> dst tmp (wn × win_h): the
// window's rows win0.. of the enlarged columns.
@compute @workgroup_size(WG_X, WG_Y, 1)
fn expand_v(@builtin(global_invocation_id) gid: vec3<u32>) {
  let sw = P.wn;
  let sh = P.hn;
  if (gid.x >= sw || gid.y >= P.win_h) {
    return;
  }
  let so = gid.z * sw * sh;
  let r = P.win0 + gid.y;
  let m = i32(r / 2u);
  let x = gid.x;
  var out: f32;
  if (r % 2u == 0u) {
    let a = src[so + clampi(m - 1, sh) * sw + x];
    let b = src[so + clampi(m, sh) * sw + x];
    let c = src[so + clampi(m + 1, sh) * sw + x];
    out = K[K_EXP] * a + K[K_EXP + 2u] * b + K[K_EXP] * c;
  } else {
    let a = src[so + clampi(m, sh) * sw + x];
    let b = src[so + clampi(m + 1, sh) * sw + x];
    out = K[K_EXP + 1u] * a + K[K_EXP + 1u] * b;
  }
  dst[gid.z * sw * P.win_h + gid.y * sw + x] = out;
}

// expand_h: src tmp (wn × win_h) -> dst (w × win_h), the window of the
// enlarged coarser level.
@compute @workgroup_size(WG_X, WG_Y, 1)
fn expand_h(@builtin(global_invocation_id) gid: vec3<u32>) {
  let sw = P.wn;
  if (gid.x >= P.w || gid.y >= P.win_h) {
    return;
  }
  let ro = gid.z * sw * P.win_h + gid.y * sw;
  let m = i32(gid.x / 2u);
  var out: f32;
  if (gid.x % 2u == 0u) {
    out = K[K_EXP] * src[ro + clampi(m - 1, sw)] + K[K_EXP + 2u] * src[ro + clampi(m, sw)] + K[K_EXP] * src[ro + clampi(m + 1, sw)];
  } else {
    out = K[K_EXP + 1u] * src[ro + clampi(m, sw)] + K[K_EXP + 1u] * src[ro + clampi(m + 1, sw)];
  }
  dst[gid.z * P.w * P.win_h + gid.y * P.w + gid.x] = out;
}
