// Butteraugli blur, first half: one plane convolved along x (see
// butteraugli_fir.wgsl). Workgroup TX x TY; each row's tile spans the
// workgroup's columns plus OFF on either side. Rows are independent: the
// workgroups cover rows from P.row0 to win_end(P) (a band's window,
// butteraugli_common.wgsl; the whole plane with the level's own block).

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(TX, TY, 1)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let y = P.row0 + wid.y * TY + lid.y;
  let x0 = i32(wid.x * TX) - i32(OFF);
  let rs = row_stride();
  let yin = y < win_end(P);
  for (var i = lid.x; i < rs; i += TX) {
    let xx = x0 + i32(i);
    let ok = yin && xx >= 0 && xx < i32(w);
    let j = select(0u, y * w + u32(xx), ok);
    tile[lid.y * rs + i] = select(0.0, src[j], ok);
  }
  workgroupBarrier();
  let x = wid.x * TX + lid.x;
  if (x >= w || !yin) {
    return;
  }
  dst[y * w + x] = fir(lid.y * rs + lid.x + OFF, 1u, i32(x), i32(w));
}
