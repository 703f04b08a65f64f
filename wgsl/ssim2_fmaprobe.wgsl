// Probe: is WGSL fma() fused on this device, and is the emulation exact?
// Needs ssim2_color.wgsl prepended. io[0..2] = a, b, c with a * b not
// representable in f32, io[5] = 0; io[3] = fma(a, b, c), io[4] = the
// emulation.

@group(0) @binding(0) var<storage, read_write> io: array<f32>;

@compute @workgroup_size(1, 1, 1)
fn probe() {
  fma_zero = bitcast<u32>(io[5]); // 0
  io[3] = fma(io[0], io[1], io[2]);
  io[4] = fma_emulated(io[0], io[1], io[2]);
}
