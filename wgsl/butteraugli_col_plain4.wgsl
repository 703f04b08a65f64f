// Butteraugli blur, second half without a pointwise step, 4 columns per
// thread (butteraugli_col4.wgsl): what butteraugli_col_plain.wgsl
// computes.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<LT>;
@group(0) @binding(3) var<storage, read_write> dst: array<LT>;

fn col4_src(q: u32, j: u32) -> LT {
  return t0[j];
}

// col4_rd is never called here (the _s accesses name it).
fn col4_rd(q: u32, j: u32) -> LT {
  return dst[j];
}

fn col4_wr(q: u32, j: u32, v: LT) {
  dst[j] = v;
}

@compute @workgroup_size(CTX, CTY, 1)
fn cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let x = wid.x * CTX * 4u + 4u * lid.x;
  let y = wid.y * CTY + lid.y;
  let live = x < w && y < P.height;
  let b = col4_plane(0u, wid, lid, live);
  if (!live) {
    return;
  }
  col4_put(0u, y * w + x, x, w, b);
}
