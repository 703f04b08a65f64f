// Butteraugli blur, second half without a pointwise step, several outputs
// per thread: butteraugli_col_plain on the blocks of
// butteraugli_col_mf_v2 (which says why); the same bits.

override WY: u32 = 8u;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(TX, WY, 1)
fn cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x = wid.x * TX + lid.x;
  let y0 = i32(wid.y * TY) - i32(OFF);
  let xin = x < w;
  for (var r = lid.y; r < TY + 2u * OFF; r += WY) {
    let yy = y0 + i32(r);
    let ok = xin && yy >= 0 && yy < i32(h);
    let j = select(0u, u32(yy) * w + x, ok);
    tile[col_index(0u, r, lid.x)] = select(0.0, t0[j], ok);
  }
  workgroupBarrier();
  if (!xin) {
    return;
  }
  let cr = TY / WY;
  for (var k = 0u; k < cr; k++) {
    let ly = lid.y * cr + k;
    let y = wid.y * TY + ly;
    if (y >= h) {
      break;
    }
    dst[y * w + x] = fir(col_index(0u, ly + OFF, lid.x), TX, i32(y), i32(h));
  }
}
