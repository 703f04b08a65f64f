// Butteraugli blurs: the truncated-Gaussian FIR evaluated on a tile in
// workgroup memory. Prepended (after butteraugli_common.wgsl) to every blur
// module, which declares K (the Kernel uniform) and fills `tile`.
//
// Where the whole kernel fits inside the image the taps are added in pairs
// (p-i, p+i) into four partial sums (pair i into sum i mod 4) and the result
// is centre + sum0 + sum1 + sum2 + sum3, the grouping of the CPU reference
// (and of libjxl). Near the borders the kernel is cut off at the image edge
// and renormalised by the sum of the taps that remain, added in order.
// Samples outside the image are never read there (the tile holds 0).

override OFF: u32 = 16u;     // kernel radius
override TX: u32 = 32u;      // workgroup width (outputs along x)
override TY: u32 = 8u;       // workgroup height (outputs along y)
override TILE_N: u32 = 1280u; // floats in `tile` (set by the host)

var<workgroup> tile: array<f32, TILE_N>;

fn kf(i: u32) -> f32 {
  return K.full[i >> 2u][i & 3u];
}

fn kh(i: u32) -> f32 {
  return K.half[i >> 2u][i & 3u];
}

// fir blurs the tile sample at index c along one axis: st is the index step
// between neighbours, p the coordinate on that axis, n the image extent.
fn fir(c: u32, st: u32, p: i32, n: i32) -> f32 {
  let off = i32(OFF);
  if (p >= off && p < n - off) {
    var a0 = 0.0;
    var a1 = 0.0;
    var a2 = 0.0;
    var a3 = 0.0;
    for (var i = 0u; i < OFF; i += 4u) {
      var d = (OFF - i) * st;
      a0 = a0 + (tile[c - d] + tile[c + d]) * kh(i);
      if (i + 1u < OFF) {
        d -= st;
        a1 = a1 + (tile[c - d] + tile[c + d]) * kh(i + 1u);
      }
      if (i + 2u < OFF) {
        d -= st;
        a2 = a2 + (tile[c - d] + tile[c + d]) * kh(i + 2u);
      }
      if (i + 3u < OFF) {
        d -= st;
        a3 = a3 + (tile[c - d] + tile[c + d]) * kh(i + 3u);
      }
    }
    return tile[c] * kh(OFF) + a0 + a1 + a2 + a3;
  }
  let lo = max(0, p - off);
  let hi = min(n - 1, p + off);
  var ws = 0.0;
  for (var j = lo; j <= hi; j++) {
    ws = ws + kf(u32(j - p + off));
  }
  let scale = 1.0 / ws;
  var s = 0.0;
  for (var j = lo; j <= hi; j++) {
    s = s + tile[u32(i32(c) + (j - p) * i32(st))] * kf(u32(j - p + off));
  }
  return s * scale;
}

// Tile layouts. Row pass: TY rows of TX + 2 OFF samples. Column pass (per
// plane q): TY + 2 OFF rows of TX samples, starting at q * col_plane().
fn row_stride() -> u32 {
  return TX + 2u * OFF;
}

fn col_plane() -> u32 {
  return (TY + 2u * OFF) * TX;
}

// col_index is the tile index of plane q, halo row r, column lx.
fn col_index(q: u32, r: u32, lx: u32) -> u32 {
  return q * col_plane() + r * TX + lx;
}

// col_centre is the tile index of the output sample of thread lid, plane q.
fn col_centre(q: u32, lid: vec3<u32>) -> u32 {
  return col_index(q, lid.y + OFF, lid.x);
}
