// DSSIM: is WGSL's fma() fused on this device, and is fma_rn's emulation
// exact? Needs dssim_common.wgsl prepended (compiled with FMA_NATIVE off).
// io[0..2] = a, b, c with a * b not representable in f32, io[5] = 0 (the
// opq() zero); writes io[3] = fma(a, b, c), io[4] = the emulation.

@group(0) @binding(0) var<storage, read_write> io: array<f32>;

@compute @workgroup_size(1, 1, 1)
fn probe() {
  zero_bits = bitcast<u32>(io[5]);
  io[3] = fma(io[0], io[1], io[2]);
  io[4] = fma_rn(io[0], io[1], io[2]);
}
