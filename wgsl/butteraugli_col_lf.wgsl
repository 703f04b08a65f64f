// Butteraugli frequency separation, low frequencies: the XYB planes blurred
// along y (they were blurred along x into t0..t2) give LF; XYB minus LF
// (written over xyb) is what the medium/high split works on next. LF is
// then scaled per channel, B after mixing in Y (unscaled).

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<f32>;
@group(0) @binding(3) var<storage, read> t1: array<f32>;
@group(0) @binding(4) var<storage, read> t2: array<f32>;
@group(0) @binding(5) var<storage, read_write> xyb0: array<f32>;
@group(0) @binding(6) var<storage, read_write> xyb1: array<f32>;
@group(0) @binding(7) var<storage, read_write> xyb2: array<f32>;
@group(0) @binding(8) var<storage, read_write> lf0: array<f32>;
@group(0) @binding(9) var<storage, read_write> lf1: array<f32>;
@group(0) @binding(10) var<storage, read_write> lf2: array<f32>;

@compute @workgroup_size(TX, TY, 1)
fn cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x = wid.x * TX + lid.x;
  let y0 = i32(wid.y * TY) - i32(OFF);
  let xin = x < w;
  for (var r = lid.y; r < TY + 2u * OFF; r += TY) {
    let yy = y0 + i32(r);
    let ok = xin && yy >= 0 && yy < i32(h);
    let j = select(0u, u32(yy) * w + x, ok);
    tile[col_index(0u, r, lid.x)] = select(0.0, t0[j], ok);
    tile[col_index(1u, r, lid.x)] = select(0.0, t1[j], ok);
    tile[col_index(2u, r, lid.x)] = select(0.0, t2[j], ok);
  }
  workgroupBarrier();
  let y = wid.y * TY + lid.y;
  if (!xin || y >= h) {
    return;
  }
  let bx = fir(col_centre(0u, lid), TX, i32(y), i32(h));
  let by = fir(col_centre(1u, lid), TX, i32(y), i32(h));
  let bb = fir(col_centre(2u, lid), TX, i32(y), i32(h));
  let i = y * w + x;
  xyb0[i] = xyb0[i] - bx;
  xyb1[i] = xyb1[i] - by;
  xyb2[i] = xyb2[i] - bb;
  lf0[i] = bx * 33.832837186260;
  lf1[i] = by * 14.458268100570;
  lf2[i] = (-0.362267051518 * by + bb) * 49.87984651440;
}
