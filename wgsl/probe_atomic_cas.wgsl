// f32 atomic add emulated with a compare-exchange loop on atomic<u32> and
// bitcasts. Every invocation adds 1.0 to acc[0]; the probe checks the sum
// is exact (integers below 2^24 are exact in f32).
override WG: u32 = 256;

@group(0) @binding(0) var<storage, read_write> acc: array<atomic<u32>>;

@compute @workgroup_size(WG)
fn main() {
  var old = atomicLoad(&acc[0]);
  loop {
    let r = atomicCompareExchangeWeak(&acc[0], old, bitcast<u32>(bitcast<f32>(old) + 1.0));
    if (r.exchanged) { break; }
    old = r.old_value;
  }
}
