// Butteraugli reduction of the distance map to its maximum and the power
// sums of two p-norms (libjxl's ComputeDistanceP sums d^p, d^2p and d^4p).
//
//   reduce_map:      workgroup g covers items [g*256*per, (g+1)*256*per) of
//                    the map's window (P.stride items in, P.src_height long:
//                    a strip's interior rows), thread t the items t, t+256, ... of that
//                    range, summed in that order; then a fixed binary tree
//                    over the 256 threads. One record of 8 floats per
//                    workgroup: max, the three cube sums, the three p sums.
//   reduce_partials: one workgroup adds the records the same way.
//
// Nothing depends on scheduling: the results are bit-identical run to run.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

const RW = 256u;
var<workgroup> red: array<f32, 1792>;  // 7 x RW

fn tree(li: u32) {
  for (var st = RW / 2u; st > 0u; st >>= 1u) {
    workgroupBarrier();
    if (li < st) {
      red[li] = max(red[li], red[li + st]);
      for (var q = 1u; q < 7u; q++) {
        red[q * RW + li] = red[q * RW + li] + red[q * RW + li + st];
      }
    }
  }
  workgroupBarrier();
}

fn put(li: u32, r: array<f32, 7>) {
  for (var q = 0u; q < 7u; q++) {
    red[q * RW + li] = r[q];
  }
}

fn store(g: u32) {
  for (var q = 0u; q < 7u; q++) {
    dst[g * 8u + q] = red[q * RW];
  }
  dst[g * 8u + 7u] = 0.0;
}

@compute @workgroup_size(256, 1, 1)
fn reduce_map(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let per = P.src_width;
  let n = P.src_height;
  let p = P.pnorm;
  var r = array<f32, 7>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  let base = wid.x * RW * per;
  for (var k = 0u; k < per; k++) {
    let idx = base + k * RW + li;
    if (idx >= n) {
      break;
    }
    let d = src[P.stride + idx];
    r[0] = max(r[0], d);
    var e = d * (d * d);
    r[1] += e;
    e *= e;
    r[2] += e;
    e *= e;
    r[3] += e;
    if (p > 0.0) {
      var q = select(0.0, pow(d, p), d > 0.0);
      r[4] += q;
      q *= q;
      r[5] += q;
      q *= q;
      r[6] += q;
    }
  }
  put(li, r);
  tree(li);
  if (li == 0u) {
    store(wid.x);
  }
}

@compute @workgroup_size(256, 1, 1)
fn reduce_partials(@builtin(local_invocation_index) li: u32) {
  let n = P.src_height;
  var r = array<f32, 7>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
  for (var g = li; g < n; g += RW) {
    r[0] = max(r[0], src[g * 8u]);
    for (var q = 1u; q < 7u; q++) {
      r[q] += src[g * 8u + q];
    }
  }
  put(li, r);
  tree(li);
  if (li == 0u) {
    store(0u);
  }
}
