// Butteraugli blur, first half, several outputs per thread: butteraugli_rows
// on blocks of TX x TY outputs (256 x 8) computed by WX x WY threads
// (64 x 4), thread (lx, ly) blurring columns lx, lx + WX, ... of rows
// ly, ly + WY, ... (see butteraugli_fir.wgsl; every output is fir() of the
// same tile samples as in butteraugli_rows, so the same bits). Why: the
// 64-wide blocks re-read 2*OFF halo samples per 64 outputs and keep about
// one load in flight per thread before the barrier; here the halo is
// shared by 256 outputs and each thread issues eight or more loads.

override WX: u32 = 64u;
override WY: u32 = 4u;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(WX, WY, 1)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let x0 = i32(wid.x * TX) - i32(OFF);
  let rs = row_stride();
  for (var r = lid.y; r < TY; r += WY) {
    let y = wid.y * TY + r;
    let yin = y < P.height;
    for (var i = lid.x; i < rs; i += WX) {
      let xx = x0 + i32(i);
      let ok = yin && xx >= 0 && xx < i32(w);
      let j = select(0u, y * w + u32(xx), ok);
      tile[r * rs + i] = select(0.0, src[j], ok);
    }
  }
  workgroupBarrier();
  for (var r = lid.y; r < TY; r += WY) {
    let y = wid.y * TY + r;
    if (y >= P.height) {
      break;
    }
    for (var q = lid.x; q < TX; q += WX) {
      let x = wid.x * TX + q;
      if (x >= w) {
        break;
      }
      dst[y * w + x] = fir(r * rs + q + OFF, 1u, i32(x), i32(w));
    }
  }
}
