// Butteraugli Malta filters by columns, shared part of butteraugli_malta_x
// and butteraugli_malta_y (after butteraugli_malta.wgsl, whose malta_hf,
// malta_lf and malta_diff they use, so every output is the same f32
// operations in the same order whatever the block geometry).
//
// Workgroups of MW x MH threads (host constants: 32 x 8), each thread MR
// (4) outputs down its column: a block covers MW x MH*MR pixels and its
// tile, with the 4-pixel halo, is MT = MW + 8 wide and MH*MR + 8 tall.
// Its workgroup memory is 3 x 40 x 40 f32, 19,200 bytes: more than
// WebGPU's default limit (16 KiB), so a device that offers less runs these
// kernels as 16 x 16 threads with MR = 1 (6,912 bytes).
//
// Why columns (on CUDA, issue #17: 16 MP Malta 1.05 -> ~0.6 ms a kernel;
// this WGSL on an H200 at 16 MP: malta_x 1.005 -> 0.923 ms, malta_y 0.997
// -> 0.956 ms): the 16x16 kernels are bound by workgroup-memory bandwidth
// (~160 loads an output, and a 32-thread wave spans two rows of the
// 24-wide tile, so half its loads hit the same banks twice); here a wave is one tile row
// (conflict-free), the loads the four outputs of a column share are made
// once when the compiler keeps them (they sit in one unrolled loop), and
// the halo drops from 2.25 to 1.56 tile samples per output, each three
// malta_diff with two divisions. The fill issues all of a thread's global
// loads before its first difference (one memory round trip per block).

// MNI is the tile samples each thread fills.
const MNI = (MT_N + MW * MH - 1u) / (MW * MH);

// malta_fill fills the three difference tiles of the block whose tile
// starts at pixel (bx, by) (0 outside the image), with the weights of one
// channel: wu, wh, wm for UHF, HF and MF.
fn malta_fill(li: u32, bx: i32, by: i32, w: u32, h: u32, wu: vec3<f32>, wh: vec3<f32>, wm: vec3<f32>) {
  var r: array<array<f32, 6>, MNI>;
  var inside: array<bool, MNI>;
  for (var it = 0u; it < MNI; it++) {
    let k = li + it * (MW * MH);
    let xx = bx + i32(k % MT);
    let yy = by + i32(k / MT);
    let ok = k < MT_N && xx >= 0 && xx < i32(w) && yy >= 0 && yy < i32(h);
    inside[it] = ok;
    let j = select(0u, u32(yy) * w + u32(xx), ok);
    r[it][0] = select(0.0, u0[j], ok);
    r[it][1] = select(0.0, u1[j], ok);
    r[it][2] = select(0.0, h0[j], ok);
    r[it][3] = select(0.0, h1[j], ok);
    r[it][4] = select(0.0, m0[j], ok);
    r[it][5] = select(0.0, m1[j], ok);
  }
  for (var it = 0u; it < MNI; it++) {
    let k = li + it * (MW * MH);
    if (k >= MT_N) {
      break;
    }
    var du = 0.0;
    var dh = 0.0;
    var dm = 0.0;
    if (inside[it]) {
      du = malta_diff(r[it][0], r[it][1], wu);
      dh = malta_diff(r[it][2], r[it][3], wh);
      dm = malta_diff(r[it][4], r[it][5], wm);
    }
    mt[k] = du;
    mt[MT_N + k] = dh;
    mt[2u * MT_N + k] = dm;
  }
}

// malta_cols sums the Malta filters of a thread's MR outputs (b: the tile
// index of the first one's neighbourhood), each as malta_hf + malta_lf +
// malta_lf in that order, the 16x16 kernels' sum.
fn malta_cols(b: u32) -> array<f32, MR> {
  var ms: array<f32, MR>;
  for (var j = 0u; j < MR; j++) {
    ms[j] = malta_hf(b + j * MT);
  }
  for (var j = 0u; j < MR; j++) {
    ms[j] = ms[j] + malta_lf(MT_N + b + j * MT);
  }
  for (var j = 0u; j < MR; j++) {
    ms[j] = ms[j] + malta_lf(2u * MT_N + b + j * MT);
  }
  return ms;
}
