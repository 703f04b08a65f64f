// Butteraugli frequency separation, medium frequencies: the residual of the
// low-frequency split blurred along y (along x into t0..t2) is MF; the rest
// of X and Y (written over res0, res1) is HF. MF X loses its small values,
// MF Y gets them amplified, MF B is the blur itself. Finally HF X is
// suppressed where HF Y contrast is high.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<f32>;
@group(0) @binding(3) var<storage, read> t1: array<f32>;
@group(0) @binding(4) var<storage, read> t2: array<f32>;
@group(0) @binding(5) var<storage, read_write> res0: array<f32>;
@group(0) @binding(6) var<storage, read_write> res1: array<f32>;
@group(0) @binding(7) var<storage, read_write> mf0: array<f32>;
@group(0) @binding(8) var<storage, read_write> mf1: array<f32>;
@group(0) @binding(9) var<storage, read_write> mf2: array<f32>;

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
  let hx = res0[i] - bx;
  let hy = res1[i] - by;
  mf0[i] = remove_range(0.29, bx);
  mf1[i] = amplify_range(0.1, by);
  mf2[i] = bb;
  let s = 46.0 / (hy * hy + 46.0) * SUPPRESS_OMS + 0.653020556257;
  res0[i] = s * hx;
  res1[i] = hy;
}
