// Butteraugli visual masking, reference only: fuzzy erosion of the blurred
// activity (a mix of the three smallest values among the pixel and its
// eight neighbours at distance 3), turned into the weights of the AC and DC
// error terms.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> act: array<f32>;
@group(0) @binding(2) var<storage, read_write> mac: array<f32>;
@group(0) @binding(3) var<storage, read_write> mdc: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

// The three smallest values seen, in order.
fn store_min3(v: f32, m: ptr<function, vec3<f32>>) {
  if (v < (*m).z) {
    if (v < (*m).x) {
      *m = vec3<f32>(v, (*m).x, (*m).y);
    } else if (v < (*m).y) {
      *m = vec3<f32>((*m).x, v, (*m).y);
    } else {
      (*m).z = v;
    }
  }
}

fn mask_y(d: f32) -> f32 {
  let c = 2.5485944793 / ((0.451936922203 * d) + 0.829591754942);
  let r = GLOBAL_SCALE * (1.0 + c);
  return r * r;
}

fn mask_dc_y(d: f32) -> f32 {
  let c = 0.505054525019 / ((3.87449418804 * d) + 0.20025578522);
  let r = GLOBAL_SCALE * (1.0 + c);
  return r * r;
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn erode(@builtin(global_invocation_id) gid: vec3<u32>) {
  let w = P.width;
  let h = P.height;
  let x = gid.x;
  let y = gid.y;
  if (x >= w || y >= h) {
    return;
  }
  let i = y * w + x;
  let c = act[i];
  var m = vec3<f32>(c, 2.0 * c, 2.0 * c);
  let up = y >= 3u;
  let down = y + 3u < h;
  if (x >= 3u) {
    store_min3(act[i - 3u], &m);
    if (up) {
      store_min3(act[i - 3u * w - 3u], &m);
    }
    if (down) {
      store_min3(act[i + 3u * w - 3u], &m);
    }
  }
  if (x + 3u < w) {
    store_min3(act[i + 3u], &m);
    if (up) {
      store_min3(act[i - 3u * w + 3u], &m);
    }
    if (down) {
      store_min3(act[i + 3u * w + 3u], &m);
    }
  }
  if (up) {
    store_min3(act[i - 3u * w], &m);
  }
  if (down) {
    store_min3(act[i + 3u * w], &m);
  }
  let e = 0.45 * m.x + 0.3 * m.y + 0.25 * m.z;
  mac[i] = mask_y(e);
  mdc[i] = mask_dc_y(e);
}
