// Butteraugli visual masking, first step: the companded high-frequency
// activity of one image (from its HF and UHF planes), blurred afterwards by
// rows + col_plain.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> a0: array<f32>;
@group(0) @binding(2) var<storage, read> a1: array<f32>;
@group(0) @binding(3) var<storage, read> a2: array<f32>;
@group(0) @binding(4) var<storage, read> a3: array<f32>;
@group(0) @binding(5) var<storage, read_write> o0: array<f32>;

override WG_X: u32 = 16u;
override WG_Y: u32 = 16u;

// mask_pre: a0 = HF X, a1 = HF Y, a2 = UHF X, a3 = UHF Y -> o0.
@compute @workgroup_size(WG_X, WG_Y, 1)
fn mask_pre(@builtin(global_invocation_id) gid: vec3<u32>) {
  if (gid.x >= P.width || gid.y >= P.height) {
    return;
  }
  let i = gid.y * P.width + gid.x;
  let xd = (a2[i] + a0[i]) * 2.5;
  let yd = a3[i] * 0.4 + a1[i] * 0.4;
  let m = sqrt(xd * xd + yd * yd);
  o0[i] = sqrt(6.19424080439 * abs(m) + MASK_BIAS) - MASK_SQRT_BIAS;
}
