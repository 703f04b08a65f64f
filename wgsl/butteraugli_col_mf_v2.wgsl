// Butteraugli medium frequencies, several outputs per thread:
// butteraugli_col_mf on blocks of TX x TY outputs (32 x 32) computed by
// TX x WY threads (32 x 8), each thread TY / WY consecutive rows of its
// column (see butteraugli_fir.wgsl; every output is fir() of the same tile
// samples and the same pointwise step as in butteraugli_col_mf, so the
// same bits). Why: 8-row blocks re-read 2*OFF halo rows per 8 output rows
// (2.75x the plane for the 15-tap blur); 32-row blocks 1.44x, and the
// outputs of a column share their tile loads where the compiler keeps
// them.

override WY: u32 = 8u;

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
    tile[col_index(1u, r, lid.x)] = select(0.0, t1[j], ok);
    tile[col_index(2u, r, lid.x)] = select(0.0, t2[j], ok);
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
    let bx = fir(col_index(0u, ly + OFF, lid.x), TX, i32(y), i32(h));
    let by = fir(col_index(1u, ly + OFF, lid.x), TX, i32(y), i32(h));
    let bb = fir(col_index(2u, ly + OFF, lid.x), TX, i32(y), i32(h));
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
}
