// Butteraugli frequency separation, medium frequencies, 4 columns per
// thread (butteraugli_col4.wgsl): what butteraugli_col_mf.wgsl computes,
// lane by lane.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> t0: array<LT>;
@group(0) @binding(3) var<storage, read> t1: array<LT>;
@group(0) @binding(4) var<storage, read> t2: array<LT>;
@group(0) @binding(5) var<storage, read_write> res0: array<LT>;
@group(0) @binding(6) var<storage, read_write> res1: array<LT>;
@group(0) @binding(7) var<storage, read_write> mf0: array<LT>;
@group(0) @binding(8) var<storage, read_write> mf1: array<LT>;
@group(0) @binding(9) var<storage, read_write> mf2: array<LT>;

fn col4_src(q: u32, j: u32) -> LT {
  switch q {
    case 0u: {
      return t0[j];
    }
    case 1u: {
      return t1[j];
    }
    default: {
      return t2[j];
    }
  }
}

fn col4_rd(q: u32, j: u32) -> LT {
  switch q {
    case 0u: {
      return res0[j];
    }
    default: {
      return res1[j];
    }
  }
}

fn col4_wr(q: u32, j: u32, v: LT) {
  switch q {
    case 0u: {
      res0[j] = v;
    }
    case 1u: {
      res1[j] = v;
    }
    case 2u: {
      mf0[j] = v;
    }
    case 3u: {
      mf1[j] = v;
    }
    default: {
      mf2[j] = v;
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
  workgroupBarrier();
  let bb = col4_plane(2u, wid, lid, live);
  if (!live) {
    return;
  }
  let i = y * w + x;
  let hx = col4_get(0u, i, x, w) - bx;
  let hy = col4_get(1u, i, x, w) - by;
  col4_put(2u, i, x, w, remove_range4(0.29, bx));
  col4_put(3u, i, x, w, amplify_range4(0.1, by));
  col4_put(4u, i, x, w, bb);
  let s = 46.0 / (hy * hy + 46.0) * SUPPRESS_OMS + 0.653020556257;
  col4_put(0u, i, x, w, s * hx);
  col4_put(1u, i, x, w, hy);
}
