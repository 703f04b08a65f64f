// Half precision: out[i] = f32(h(in[i]) * 1.5h + 0.25h) with inputs chosen
// so every step is exact in f16; the probe compares with the same math in Go.
enable f16;

override WG: u32 = 64;

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < arrayLength(&dst)) {
    let h = f16(src[i]);
    dst[i] = f32(h * 1.5h + 0.25h);
  }
}
