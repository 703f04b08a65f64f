// Subgroups: each workgroup writes subgroupAdd(1) (= the subgroup's live
// invocation count) and the subgroup_size builtin from its first invocation.
enable subgroups;

override WG: u32 = 64;

@group(0) @binding(0) var<storage, read_write> outv: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) li: u32,
        @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(subgroup_size) sgs: u32) {
  let s = subgroupAdd(1u);
  if (li == 0u) {
    outv[2u * wid.x] = s;
    outv[2u * wid.x + 1u] = sgs;
  }
}
