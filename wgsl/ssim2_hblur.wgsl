// SSIMULACRA2 horizontal blur pass, up to SSIM2_JOBS (scale, channel) jobs
// per dispatch (workgroup_id.z picks the job's Params in PJ; its planes
// start at P.base in every buffer bound): thread (row y, quantity q) runs libjxl's FastGaussian1D along row y of
// quantity q: 0 img1, 1 img2, 2 img1*img1, 3 img2*img2, 4 img1*img2 (the
// products rounded to f32, as libjxl's Multiply stores them). Needs
// ssim2_color.wgsl and ssim2_iir.wgsl prepended.
//
// FastGaussian1D, as libjxl runs it on x86 (4 lanes): a scalar loop for
// outputs n < 8 (warm-up from n = -N + 1), then 4 outputs per step from
// the powers of the recursion (mul_in / mul_prev / mul_prev2, fused
// multiply-adds in libjxl's order), then a scalar loop for the tail.
// Inputs outside the row are zero.
//
// Quantity map: with P.stride = 0 thread row gid.y blurs quantity gid.y
// (5 rows); otherwise gid.y picks the 4-bit field gid.y of P.stride (a
// cached reference: 0x20 blurs quantities 0 and 2 of the reference once at
// Prepare, 0x431 blurs the distorted image's 1, 3, 4 at every Score). The
// arithmetic of a quantity does not depend on the map.
//
// vblur (entry point below): the vertical recursion of ssim2_vmaps.wgsl,
// in the same operations, for a cached reference's mu1 and sigma11.

@group(0) @binding(0) var<uniform> PJ: array<Params, SSIM2_JOBS>;

// This invocation's job (PJ[workgroup_id.z]), set first thing.
var<private> P: Params;
@group(0) @binding(1) var<uniform> K: Coef;
@group(0) @binding(2) var<storage, read> img1: array<f32>;
@group(0) @binding(3) var<storage, read> img2: array<f32>;
@group(0) @binding(4) var<storage, read_write> o0: array<f32>;
@group(0) @binding(5) var<storage, read_write> o1: array<f32>;
@group(0) @binding(6) var<storage, read_write> o2: array<f32>;
@group(0) @binding(7) var<storage, read_write> o3: array<f32>;
@group(0) @binding(8) var<storage, read_write> o4: array<f32>;

override WG: u32 = 64u;

fn src(q: u32, i: u32) -> f32 {
  switch q {
    case 0u: { return img1[i]; }
    case 1u: { return img2[i]; }
    case 2u: { let a = img1[i]; return a * a; }
    case 3u: { let b = img2[i]; return b * b; }
    default: { return img1[i] * img2[i]; }
  }
}

fn put(q: u32, i: u32, v: f32) {
  switch q {
    case 0u: { o0[i] = v; }
    case 1u: { o1[i] = v; }
    case 2u: { o2[i] = v; }
    case 3u: { o3[i] = v; }
    default: { o4[i] = v; }
  }
}

// The quantity of dispatch row r (see the header).
fn qsel(r: u32) -> u32 {
  return select(r, (P.stride >> (4u * r)) & 15u, P.stride != 0u);
}

// Sample x of the row starting at `row`, zero outside [0, w).
fn at(q: u32, row: u32, x: i32, w: i32) -> f32 {
  if (x < 0 || x >= w) {
    return 0.0;
  }
  return src(q, row + u32(x));
}

@compute @workgroup_size(WG, 1, 1)
fn hblur(@builtin(global_invocation_id) gid: vec3<u32>) {
  P = PJ[gid.z];
  fma_zero = P.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  let y = gid.x;
  let q = qsel(gid.y);
  if (y >= P.height) {
    return;
  }
  let w = i32(P.width);
  let row = P.base + y * P.width;
  // Lane 0 of each k's constants (the scalar loops use only lane 0).
  let in0 = vec3<f32>(K.mul_in[0].x, K.mul_in[1].x, K.mul_in[2].x);
  let pv0 = vec3<f32>(K.mul_prev[0].x, K.mul_prev[1].x, K.mul_prev[2].x);
  let pp0 = vec3<f32>(K.mul_prev2[0].x, K.mul_prev2[1].x, K.mul_prev2[2].x);
  var prev = vec3<f32>(0.0);
  var prev2 = vec3<f32>(0.0);

  var n = -IIR_N + 1;
  let first = min(8i, w); // RoundUpTo(N + 1, 4)
  for (; n < first; n = n + 1) {
    let s = at(q, row, n - IIR_N - 1, w) + at(q, row, n + IIR_N - 1, w);
    var o = vec3<f32>(s) * in0;
    o = fmaf3(pp0, prev2, o);
    prev2 = prev;
    o = fmaf3(pv0, prev, o);
    prev = o;
    if (n >= 0) {
      put(q, row + u32(n), o.x + opq(o.y + o.z));
    }
  }

  // Interior: four outputs per step, no bounds checks needed.
  for (; n < w - IIR_N + 1 - 3; n = n + 4) {
    let l = row + u32(n - IIR_N - 1);
    let r = row + u32(n + IIR_N - 1);
    let s0 = src(q, l) + src(q, r);
    let s1 = src(q, l + 1u) + src(q, r + 1u);
    let s2 = src(q, l + 2u) + src(q, r + 2u);
    let s3 = src(q, l + 3u) + src(q, r + 3u);
    var out: array<vec4<f32>, 3>;
    for (var k = 0u; k < 3u; k = k + 1u) {
      let mi = K.mul_in[k];
      var o = vec4<f32>(s0) * mi;
      // ShiftLeftLanes<1..3>(mul_in): lanes below the shift are zero, and
      // fma(0, s, o) == o, so those lanes are left as they are.
      o = fmaf4(vec4<f32>(0.0, mi.x, mi.y, mi.z), vec4<f32>(s1), o);
      o = fmaf4(vec4<f32>(0.0, 0.0, mi.x, mi.y), vec4<f32>(s2), o);
      o = fmaf4(vec4<f32>(0.0, 0.0, 0.0, mi.x), vec4<f32>(s3), o);
      o = fmaf4(K.mul_prev2[k], vec4<f32>(prev2[k]), o);
      o = fmaf4(K.mul_prev[k], vec4<f32>(prev[k]), o);
      out[k] = o;
    }
    prev2 = vec3<f32>(out[0].z, out[1].z, out[2].z);
    prev = vec3<f32>(out[0].w, out[1].w, out[2].w);
    let v = out[0] + opq4(out[1] + out[2]);
    let o = row + u32(n);
    put(q, o, v.x);
    put(q, o + 1u, v.y);
    put(q, o + 2u, v.z);
    put(q, o + 3u, v.w);
  }

  // Tail, scalar with bounds checks.
  for (; n < w; n = n + 1) {
    let s = at(q, row, n - IIR_N - 1, w) + at(q, row, n + IIR_N - 1, w);
    var o = vec3<f32>(s) * in0;
    o = fmaf3(pp0, prev2, o);
    prev2 = prev;
    o = fmaf3(pv0, prev, o);
    prev = o;
    put(q, row + u32(n), o.x + opq(o.y + o.z));
  }
}

// vblur: thread (column x, k) runs ssim2_vmaps.wgsl's vertical recursion
// (FastGaussianVertical, started N - 1 rows above the image, inputs outside
// it zero) down column x of img1 (k = 0, into o0) or img2 (k = 1, into o1)
// and stores every row's output y.x + (y.y + y.z), exactly the value
// vmaps keeps in workgroup memory for that quantity. A cached reference
// binds its horizontal blurs of img1 and img1² and gets its mu1 and
// sigma11 planes, which vmaps then reads instead of recomputing them.
fn vrow(k: u32, y: i32, x: u32) -> f32 {
  if (y < 0 || y >= i32(P.height)) {
    return 0.0;
  }
  let i = P.base + u32(y) * P.width + x;
  if (k == 0u) {
    return img1[i];
  }
  return img2[i];
}

@compute @workgroup_size(WG, 1, 1)
fn vblur(@builtin(global_invocation_id) gid: vec3<u32>) {
  P = PJ[gid.z];
  fma_zero = P.pad0;
  let x = gid.x;
  let k = gid.y;
  if (x >= P.width) {
    return;
  }
  let n2 = K.n2.xyz;
  let nd1 = -K.d1.xyz;
  var y1 = vec3<f32>(0.0);
  var y2 = vec3<f32>(0.0);
  let h = i32(P.height);
  for (var n = -IIR_N + 1; n < h; n = n + 1) {
    let s = vrow(k, n - IIR_N - 1, x) + vrow(k, n + IIR_N - 1, x);
    let y = fmaf3(n2, vec3<f32>(s), fmaf3(nd1, y1, -y2));
    y2 = y1;
    y1 = y;
    if (n >= 0) {
      let v = y.x + opq(y.y + y.z);
      let i = P.base + u32(n) * P.width + x;
      if (k == 0u) {
        o0[i] = v;
      } else {
        o1[i] = v;
      }
    }
  }
}
