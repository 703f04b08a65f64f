// y = a * x + b over n elements. Used by the capability probe and the
// device tests as the smallest real kernel.
override WG: u32 = 64;

struct Params { a: f32, b: f32, n: u32, _pad: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i < params.n) {
    y[i] = params.a * x[i] + params.b;
  }
}
