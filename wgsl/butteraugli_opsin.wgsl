// Butteraugli opsin dynamics: linear RGB -> butteraugli XYB, one 16x16 tile
// per workgroup.
//
// The sensitivity of each pixel comes from a copy of the image blurred with
// the 5-tap Gaussian (sigma 1.2) whose borders mirror the image (the edge
// sample repeated). The tile and a 2-pixel mirrored halo of each channel go
// to workgroup memory; the blur runs along x for every halo row, then along
// y, with the CPU reference's grouping: centre*w0 + (+-1 pair)*w1 +
// (+-2 pair)*w2.
//
// Tiles start at row P.row0 and rows from win_end(P) on are not written
// (a band's window, butteraugli_common.wgsl): the halo still mirrors at
// the image's own edges, so every output is the whole-image dispatch's.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<uniform> K: Kernel;
@group(0) @binding(2) var<storage, read> lin_r: array<f32>;
@group(0) @binding(3) var<storage, read> lin_g: array<f32>;
@group(0) @binding(4) var<storage, read> lin_b: array<f32>;
@group(0) @binding(5) var<storage, read_write> out_x: array<f32>;
@group(0) @binding(6) var<storage, read_write> out_y: array<f32>;
@group(0) @binding(7) var<storage, read_write> out_b: array<f32>;

const T = 16u;       // output tile side
const HT = 20u;      // tile plus halo
var<workgroup> src: array<vec3<f32>, 400>;  // HT x HT
var<workgroup> hor: array<vec3<f32>, 320>;  // HT rows x T columns

// mirror reflects a coordinate into [0, n), repeating the edge sample.
fn mirror(x0: i32, n: i32) -> i32 {
  var x = x0;
  loop {
    if (x < 0) {
      x = -x - 1;
    } else if (x >= n) {
      x = 2 * n - 1 - x;
    } else {
      break;
    }
  }
  return x;
}

fn log2_approx(x: f32) -> f32 {
  let bits = bitcast<i32>(x);
  let e = (bits - 0x3f2aaaab) >> 23u;
  let m = bitcast<f32>(bits - (e << 23u)) - 1.0;
  let num = (7.4245873327820566e-01 * m + 1.4287160470083755e+00) * m + -1.8503833400518310e-06;
  let den = (1.7409343003366853e-01 * m + 1.0096718572241148e+00) * m + 9.9032814277590719e-01;
  return num / den + f32(e);
}

fn gamma_hdr(v0: f32) -> f32 {
  let v = max(v0, 0.0);
  return GAMMA_MUL * log2_approx(v + 9.9710635769299145) + -23.16046239805755;
}

@compute @workgroup_size(16, 16, 1)
fn opsin(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32,
         @builtin(local_invocation_id) lid: vec3<u32>) {
  let w = i32(P.width);
  let h = i32(P.height);
  let x0 = i32(wid.x * T) - 2;
  let ty = P.row0 + wid.y * T;
  let y0 = i32(ty) - 2;
  for (var i = li; i < HT * HT; i += 256u) {
    let sx = mirror(x0 + i32(i % HT), w);
    let sy = mirror(y0 + i32(i / HT), h);
    let j = u32(sy * w + sx);
    src[i] = vec3<f32>(lin_r[j], lin_g[j], lin_b[j]);
  }
  workgroupBarrier();
  let w0 = K.half[0][2];
  let w1 = K.half[0][1];
  let w2 = K.half[0][0];
  for (var i = li; i < HT * T; i += 256u) {
    let r = i / T;
    let c = i % T;
    let b = r * HT + c;
    hor[i] = src[b + 2u] * w0 + (src[b + 1u] + src[b + 3u]) * w1 + (src[b] + src[b + 4u]) * w2;
  }
  workgroupBarrier();
  let ox = wid.x * T + lid.x;
  let oy = ty + lid.y;
  if (ox >= P.width || oy >= win_end(P)) {
    return;
  }
  let b = lid.y * T + lid.x;
  let bl = hor[b + 2u * T] * w0 + (hor[b + T] + hor[b + 3u * T]) * w1 + (hor[b] + hor[b + 4u * T]) * w2;
  let it = P.intensity;
  let r0 = bl.x * it;
  let g0 = bl.y * it;
  let b0 = bl.z * it;
  let p0 = max(max(MIX0 * r0 + (MIX1 * g0 + (MIX2 * b0 + MIX3)), MIX3), 1e-4);
  let p1 = max(max(MIX4 * r0 + (MIX5 * g0 + (MIX6 * b0 + MIX7)), MIX7), 1e-4);
  let p2 = max(max(MIX8 * r0 + (MIX9 * g0 + (MIX10 * b0 + MIX11)), MIX11), 1e-4);
  let s0 = max(gamma_hdr(p0) / p0, 1e-4);
  let s1 = max(gamma_hdr(p1) / p1, 1e-4);
  let s2 = max(gamma_hdr(p2) / p2, 1e-4);
  let cc = src[(lid.y + 2u) * HT + lid.x + 2u] * it;
  let c0 = max((MIX0 * cc.x + (MIX1 * cc.y + (MIX2 * cc.z + MIX3))) * s0, MIX3);
  let c1 = max((MIX4 * cc.x + (MIX5 * cc.y + (MIX6 * cc.z + MIX7))) * s1, MIX7);
  let c2 = max((MIX8 * cc.x + (MIX9 * cc.y + (MIX10 * cc.z + MIX11))) * s2, MIX11);
  let i = oy * P.width + ox;
  out_x[i] = c0 - c1;
  out_y[i] = c0 + c1;
  out_b[i] = c2;
}
