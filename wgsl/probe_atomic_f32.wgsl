// Native f32 atomics: WGSL has none (Dawn answers "'atomic' only supports
// 'i32' or 'u32'"). The probe compiles this to record that, and uses it only
// if some runtime ever accepts it.
override WG: u32 = 256;

@group(0) @binding(0) var<storage, read_write> acc: atomic<f32>;

@compute @workgroup_size(WG)
fn main() {
  atomicAdd(&acc, 1.0);
}
