// Butteraugli frequency separation, high and ultra-high frequencies, 4
// columns per thread (butteraugli_col4.wgsl): what
// butteraugli_col_uhf.wgsl computes, lane by lane.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<LT>;
@group(0) @binding(3) var<storage, read> t1: array<LT>;
@group(0) @binding(4) var<storage, read_write> hf0: array<LT>;
@group(0) @binding(5) var<storage, read_write> hf1: array<LT>;
@group(0) @binding(6) var<storage, read_write> out0: array<LT>;
@group(0) @binding(7) var<storage, read_write> out1: array<LT>;

fn col4_src(q: u32, j: u32) -> LT {
  switch q {
    case 0u: {
      return t0[j];
    }
    default: {
      return t1[j];
    }
  }
}

fn col4_rd(q: u32, j: u32) -> LT {
  switch q {
    case 0u: {
      return hf0[j];
    }
    default: {
      return hf1[j];
    }
  }
}

fn col4_wr(q: u32, j: u32, v: LT) {
  switch q {
    case 0u: {
      hf0[j] = v;
    }
    case 1u: {
      hf1[j] = v;
    }
    case 2u: {
      out0[j] = v;
    }
    default: {
      out1[j] = v;
    }
  }
}

@compute @workgroup_size(CTX, CTY, 1)
fn cols(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = P.width;
  let x = wid.x * CTX * 4u + 4u * lid.x;
  let y = wid.y * CTY + lid.y;
  let live = x < w && y < P.height;
  let bx = col4_plane(0u, wid, lid, live);
  workgroupBarrier();
  let by = col4_plane(1u, wid, lid, live);
  if (!live) {
    return;
  }
  let i = y * w + x;
  let ux = col4_get(0u, i, x, w) - bx;
  col4_put(2u, i, x, w, remove_range4(1.5, bx));
  col4_put(0u, i, x, w, remove_range4(0.04, ux));
  let hv = maximum_clamp4(28.4691806922, by);
  let uv = maximum_clamp4(5.19175294647, col4_get(1u, i, x, w) - hv);
  col4_put(1u, i, x, w, uv * 2.69313763794);
  col4_put(3u, i, x, w, amplify_range4(0.132, hv * 2.155));
}
