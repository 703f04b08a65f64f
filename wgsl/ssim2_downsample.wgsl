// SSIMULACRA2 stage 2 (scales 1..5): 2x2 box downsample in linear RGB, as
// libjxl's Downsample (edge pixels repeated for odd sizes, the four samples
// summed row by row then multiplied by 0.25), then XYB of the result.
// Needs ssim2_color.wgsl prepended.

// The XYB outputs (bindings from 7 on) and put_xyb come from a prefix the
// host writes (ssim2XYBOut in gpu/webgpu/ssim2): three planes in three
// buffers, or in one buffer (the pyramid of all channels): WebGPU refuses
// one buffer bound writable three times. Plane c of this scale starts at
// P.base, P.base1, P.base2.
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> src_r: array<f32>;
@group(0) @binding(2) var<storage, read> src_g: array<f32>;
@group(0) @binding(3) var<storage, read> src_b: array<f32>;
@group(0) @binding(4) var<storage, read_write> lin_r: array<f32>;
@group(0) @binding(5) var<storage, read_write> lin_g: array<f32>;
@group(0) @binding(6) var<storage, read_write> lin_b: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

@compute @workgroup_size(WG_X, WG_Y, 1)
fn downsample(@builtin(global_invocation_id) gid: vec3<u32>) {
  fma_zero = P.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let x0 = 2u * gid.x;
  let y0 = 2u * gid.y;
  let x1 = min(x0 + 1u, P.src_width - 1u);
  let y1 = min(y0 + 1u, P.src_height - 1u);
  let i00 = y0 * P.src_width + x0;
  let i01 = y0 * P.src_width + x1;
  let i10 = y1 * P.src_width + x0;
  let i11 = y1 * P.src_width + x1;
  let r = opq(opq(opq(src_r[i00] + src_r[i01]) + src_r[i10]) + src_r[i11]) * 0.25;
  let g = opq(opq(opq(src_g[i00] + src_g[i01]) + src_g[i10]) + src_g[i11]) * 0.25;
  let b = opq(opq(opq(src_b[i00] + src_b[i01]) + src_b[i10]) + src_b[i11]) * 0.25;
  let i = gid.y * P.width + gid.x;
  lin_r[i] = r;
  lin_g[i] = g;
  lin_b[i] = b;
  let v = linear_to_xyb(r, g, b);
  put_xyb(i, v);
}
