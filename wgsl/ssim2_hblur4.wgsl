// SSIMULACRA2 horizontal blur pass for widths that are a multiple of 4:
// the same recursion, in the same operations and order, as
// ssim2_hblur.wgsl (thread per row y and quantity q), but with 16-byte
// memory accesses. Needs ssim2_color.wgsl and ssim2_iir.wgsl prepended.
//
// Why: in the row kernel every thread of a warp walks its own row, so each
// scalar load or store of a warp touches 32 different cache lines; the
// interior step's 8 scalar loads and 4 scalar stores per 4 outputs made the
// kernel L1-throughput bound. Here a row starts on a 16-byte boundary
// (width % 4 == 0), the interior step n (n % 4 == 0) needs inputs
// n - 6 .. n - 3 and n + 4 .. n + 7: the right block n + 4 is one aligned
// vec4 load, and the left four come from the blocks n - 8 and n - 4, which
// were the right blocks two and one steps earlier (kept in registers). One
// vec4 load and one vec4 store per step instead of 8 + 4 scalar accesses.
// The warm-up (n < 8) and the tail (last < 8 columns) stay scalar.
// Quantity map (P.stride) as in ssim2_hblur.wgsl.
//
// Prefetch: a step's load would otherwise be used at once, so each step
// paid one memory round trip (a loop-carried store before it keeps the
// compiler from hoisting the next load: the bindings may alias). The
// interior keeps the raw input blocks of the next PF steps in registers
// (pa*: img1 or img2, pb*: img2 for img1·img2) and loads the block PF
// steps ahead at every step, so PF loads are in flight while the
// recursion runs; products are formed when a block is used, as before.

@group(0) @binding(0) var<uniform> PJ: array<Params, SSIM2_JOBS>;

// This invocation's job (PJ[workgroup_id.z]), set first thing.
var<private> P: Params;
@group(0) @binding(1) var<uniform> K: Coef;
@group(0) @binding(2) var<storage, read> img1: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> img2: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> o0: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> o1: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> o2: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> o3: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> o4: array<vec4<f32>>;

override WG: u32 = 64u;

// PAIR: the interior takes two steps per iteration and requests the two
// new input blocks of those steps back to back, blocks 2m and 2m + 1 of
// the plane (one 32-byte sector when the row starts on one: width % 8 == 0
// and base % 8 == 0); their two output blocks are stored back to back too.
// A warp's 16-byte access touches 32 rows, i.e. 32 sectors of which it
// uses half; one step at a time, the other half came back by the next
// step only if L1 still held the line. Same operations on the same values
// in the same order as one step at a time: the blurs are the same bits.
override PAIR: bool = false;

// One interior step at block blk (columns 4·(blk − row start) ..): bd is
// the quantity's block n + 4 (the right inputs); ba, bb, bc the blocks
// n − 8, n − 4, n (rotated here); prev, prev2 the recursions' state.
fn step4(q: u32, blk: u32, bd: vec4<f32>, ba: ptr<function, vec4<f32>>, bb: ptr<function, vec4<f32>>,
         bc: ptr<function, vec4<f32>>, prev: ptr<function, vec3<f32>>, prev2: ptr<function, vec3<f32>>) {
  let sv = vec4<f32>((*ba).z, (*ba).w, (*bb).x, (*bb).y) + bd;
  *ba = *bb;
  *bb = *bc;
  *bc = bd;
  var out: array<vec4<f32>, 3>;
  for (var k = 0u; k < 3u; k = k + 1u) {
    let mi = K.mul_in[k];
    var o = vec4<f32>(sv.x) * mi;
    o = fmaf4(vec4<f32>(0.0, mi.x, mi.y, mi.z), vec4<f32>(sv.y), o);
    o = fmaf4(vec4<f32>(0.0, 0.0, mi.x, mi.y), vec4<f32>(sv.z), o);
    o = fmaf4(vec4<f32>(0.0, 0.0, 0.0, mi.x), vec4<f32>(sv.w), o);
    o = fmaf4(K.mul_prev2[k], vec4<f32>((*prev2)[k]), o);
    o = fmaf4(K.mul_prev[k], vec4<f32>((*prev)[k]), o);
    out[k] = o;
  }
  *prev2 = vec3<f32>(out[0].z, out[1].z, out[2].z);
  *prev = vec3<f32>(out[0].w, out[1].w, out[2].w);
  put4(q, blk, out[0] + opq4(out[1] + out[2]));
}

// Quantity q of the aligned block b (elements 4b .. 4b + 3). The products
// go through opq so they are rounded to f32 before the sums that follow
// (libjxl stores them), as in the scalar kernel.
// The raw block b of quantity q's first image (img1 for 0, 2, 4) and
// second image (img2 for 1, 3, 4; unused otherwise).
fn raw_a(q: u32, b: u32) -> vec4<f32> {
  if (q == 1u || q == 3u) {
    return img2[b];
  }
  return img1[b];
}

fn raw_b(q: u32, b: u32) -> vec4<f32> {
  if (q == 4u) {
    return img2[b];
  }
  return vec4<f32>(0.0);
}

// Quantity q from its raw blocks (see raw_a / raw_b).
fn quant4(q: u32, a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
  switch q {
    case 0u, 1u: { return a; }
    case 2u, 3u: { return opq4(a * a); }
    default: { return opq4(a * b); }
  }
}

fn src4(q: u32, b: u32) -> vec4<f32> {
  switch q {
    case 0u: { return img1[b]; }
    case 1u: { return img2[b]; }
    case 2u: { let a = img1[b]; return opq4(a * a); }
    case 3u: { let c = img2[b]; return opq4(c * c); }
    default: { return opq4(img1[b] * img2[b]); }
  }
}

fn src1(q: u32, i: u32) -> f32 {
  let b = i >> 2u;
  let l = i & 3u;
  switch q {
    case 0u: { return img1[b][l]; }
    case 1u: { return img2[b][l]; }
    case 2u: { let a = img1[b][l]; return opq(a * a); }
    case 3u: { let c = img2[b][l]; return opq(c * c); }
    default: { return opq(img1[b][l] * img2[b][l]); }
  }
}

// Element i; every vec4 belongs to one row, so to this thread alone.
fn put1(q: u32, i: u32, v: f32) {
  let b = i >> 2u;
  let l = i & 3u;
  switch q {
    case 0u: { o0[b][l] = v; }
    case 1u: { o1[b][l] = v; }
    case 2u: { o2[b][l] = v; }
    case 3u: { o3[b][l] = v; }
    default: { o4[b][l] = v; }
  }
}

fn put4(q: u32, b: u32, v: vec4<f32>) {
  switch q {
    case 0u: { o0[b] = v; }
    case 1u: { o1[b] = v; }
    case 2u: { o2[b] = v; }
    case 3u: { o3[b] = v; }
    default: { o4[b] = v; }
  }
}

fn at1(q: u32, row: u32, x: i32, w: i32) -> f32 {
  if (x < 0 || x >= w) {
    return 0.0;
  }
  return src1(q, row + u32(x));
}

@compute @workgroup_size(WG, 1, 1)
fn hblur4(@builtin(global_invocation_id) gid: vec3<u32>) {
  P = PJ[gid.z];
  fma_zero = P.pad0;
  let y = gid.x;
  let q = select(gid.y, (P.stride >> (4u * gid.y)) & 15u, P.stride != 0u);
  if (y >= P.height) {
    return;
  }
  let w = i32(P.width);
  let row = P.base + y * P.width; // a multiple of 4 (so is base)
  let in0 = vec3<f32>(K.mul_in[0].x, K.mul_in[1].x, K.mul_in[2].x);
  let pv0 = vec3<f32>(K.mul_prev[0].x, K.mul_prev[1].x, K.mul_prev[2].x);
  let pp0 = vec3<f32>(K.mul_prev2[0].x, K.mul_prev2[1].x, K.mul_prev2[2].x);
  var prev = vec3<f32>(0.0);
  var prev2 = vec3<f32>(0.0);

  var n = -IIR_N + 1;
  let first = min(8i, w);
  for (; n < first; n = n + 1) {
    let s = at1(q, row, n - IIR_N - 1, w) + at1(q, row, n + IIR_N - 1, w);
    var o = vec3<f32>(s) * in0;
    o = fmaf3(pp0, prev2, o);
    prev2 = prev;
    o = fmaf3(pv0, prev, o);
    prev = o;
    if (n >= 0) {
      put1(q, row + u32(n), o.x + opq(o.y + o.z));
    }
  }

  // Interior (runs only when w >= 16, so blocks 0..2 exist): ba, bb, bc
  // are the blocks n - 8, n - 4, n.
  let rb = row >> 2u;
  var ba = vec4<f32>(0.0);
  var bb = vec4<f32>(0.0);
  var bc = vec4<f32>(0.0);
  if (w >= 16) {
    ba = src4(q, rb);
    bb = src4(q, rb + 1u);
    bc = src4(q, rb + 2u);
  }
  // Prefetch ring: blocks blk + 1 .. blk + 8 of the step at n (blk = the
  // block of n), clamped to the row's last block (past it: unused).
  let last = rb + u32(w >> 2) - 1u;
  let b0 = rb + u32(max(n, 0) >> 2u);
  var pa0 = raw_a(q, min(b0 + 1u, last));
  var pa1 = raw_a(q, min(b0 + 2u, last));
  var pa2 = raw_a(q, min(b0 + 3u, last));
  var pa3 = raw_a(q, min(b0 + 4u, last));
  var pa4 = raw_a(q, min(b0 + 5u, last));
  var pa5 = raw_a(q, min(b0 + 6u, last));
  var pa6 = raw_a(q, min(b0 + 7u, last));
  var pa7 = raw_a(q, min(b0 + 8u, last));
  var pb0 = raw_b(q, min(b0 + 1u, last));
  var pb1 = raw_b(q, min(b0 + 2u, last));
  var pb2 = raw_b(q, min(b0 + 3u, last));
  var pb3 = raw_b(q, min(b0 + 4u, last));
  var pb4 = raw_b(q, min(b0 + 5u, last));
  var pb5 = raw_b(q, min(b0 + 6u, last));
  var pb6 = raw_b(q, min(b0 + 7u, last));
  var pb7 = raw_b(q, min(b0 + 8u, last));
  let lim = w - IIR_N + 1 - 3;
  if (PAIR) {
    // A ring one block deeper (blk + 1 .. blk + 9), so that each
    // iteration (blk even when the row starts on a sector) requests the
    // aligned pair blk + 10, blk + 11.
    var pa8 = raw_a(q, min(b0 + 9u, last));
    var pb8 = raw_b(q, min(b0 + 9u, last));
    for (; n + 4 < lim; n = n + 8) {
      let blk = rb + u32(n >> 2u);
      let bd0 = quant4(q, pa0, pb0);
      let bd1 = quant4(q, pa1, pb1);
      let nb0 = min(blk + 10u, last);
      let nb1 = min(blk + 11u, last);
      pa0 = pa2; pa1 = pa3; pa2 = pa4; pa3 = pa5; pa4 = pa6; pa5 = pa7; pa6 = pa8;
      pa7 = raw_a(q, nb0);
      pa8 = raw_a(q, nb1);
      pb0 = pb2; pb1 = pb3; pb2 = pb4; pb3 = pb5; pb4 = pb6; pb5 = pb7; pb6 = pb8;
      pb7 = raw_b(q, nb0);
      pb8 = raw_b(q, nb1);
      step4(q, blk, bd0, &ba, &bb, &bc, &prev, &prev2);
      step4(q, blk + 1u, bd1, &ba, &bb, &bc, &prev, &prev2);
    }
    // The ring's first eight blocks are the one-step loop's below.
  }
  for (; n < lim; n = n + 4) {
    let blk = rb + u32(n >> 2u);
    let bd = quant4(q, pa0, pb0);
    let nb = min(blk + 9u, last);
    pa0 = pa1; pa1 = pa2; pa2 = pa3; pa3 = pa4; pa4 = pa5; pa5 = pa6; pa6 = pa7;
    pa7 = raw_a(q, nb);
    pb0 = pb1; pb1 = pb2; pb2 = pb3; pb3 = pb4; pb4 = pb5; pb5 = pb6; pb6 = pb7;
    pb7 = raw_b(q, nb);
    let sv = vec4<f32>(ba.z, ba.w, bb.x, bb.y) + bd;
    ba = bb;
    bb = bc;
    bc = bd;
    var out: array<vec4<f32>, 3>;
    for (var k = 0u; k < 3u; k = k + 1u) {
      let mi = K.mul_in[k];
      var o = vec4<f32>(sv.x) * mi;
      o = fmaf4(vec4<f32>(0.0, mi.x, mi.y, mi.z), vec4<f32>(sv.y), o);
      o = fmaf4(vec4<f32>(0.0, 0.0, mi.x, mi.y), vec4<f32>(sv.z), o);
      o = fmaf4(vec4<f32>(0.0, 0.0, 0.0, mi.x), vec4<f32>(sv.w), o);
      o = fmaf4(K.mul_prev2[k], vec4<f32>(prev2[k]), o);
      o = fmaf4(K.mul_prev[k], vec4<f32>(prev[k]), o);
      out[k] = o;
    }
    prev2 = vec3<f32>(out[0].z, out[1].z, out[2].z);
    prev = vec3<f32>(out[0].w, out[1].w, out[2].w);
    put4(q, blk, out[0] + opq4(out[1] + out[2]));
  }

  for (; n < w; n = n + 1) {
    let s = at1(q, row, n - IIR_N - 1, w) + at1(q, row, n + IIR_N - 1, w);
    var o = vec3<f32>(s) * in0;
    o = fmaf3(pp0, prev2, o);
    prev2 = prev;
    o = fmaf3(pv0, prev, o);
    prev = o;
    put1(q, row + u32(n), o.x + opq(o.y + o.z));
  }
}

// ---- hblur4t: the same walk, its inputs staged through workgroup memory ----
//
// hblur4's threads each read their own row: a warp's 16-byte load touches
// 32 rows (32 sectors, 32 L1 wavefronts), and the five quantity threads of
// a row load img1 and img2 six times between them (24 bytes per pixel from
// L2, an L1 that thrashes under ~29 warps of 32 streams). Here a workgroup
// takes HT_ROWS rows of one job with all of their quantities (thread
// (slot, r): slot = local_index / HT_ROWS, so on 32-wide subgroups a warp
// is one quantity of 32 rows, as in hblur4) and walks the rows in tiles of
// HT_BLK 4-column blocks:
//
// - the tile's img1 and img2 blocks (2 · HT_ROWS · HT_BLK vec4) are loaded
//   once, by all threads, in row-major order: consecutive threads read
//   consecutive blocks of a row (whole cache lines, 8 bytes per pixel from
//   L2 instead of 24);
// - those loads are issued for tile t + 1 before tile t is walked, into
//   registers (st), and written to workgroup memory after the walk, so the
//   memory latency overlaps the recursion (CUDA's hblur_tiled does the
//   same: BENCHMARKS.md, session 7);
// - each walker takes its row's block of the tile from workgroup memory
//   (a warp's read is 512 bytes over 32 rows: 4 wavefronts, the slot
//   swizzled by the row so that no two rows of a quarter-warp share a
//   bank), forms its quantity and runs step4v — hblur4's interior step,
//   the same operations on the same values in the same order, less the
//   store — and stores its output block to global memory, as hblur4 does
//   (or, with HT_OUT, to workgroup memory).
//
// The warm-up (n < 8) and the tail (the last 4 columns) are hblur4's
// scalar loops, reading global memory. Widths are multiples of 4, so every
// vec4 lies in one row. 2 · 32 · 16 · 16 bytes = 16 KiB of workgroup memory,
// WebGPU's default limit.
//
// HT_OUT (off by default): the walkers' output blocks go to workgroup
// memory too (hout), and after the next barrier all threads store the
// tile's outputs row-major, whole lines again (20 bytes per pixel leave in
// 128-byte lines instead of 16-byte pieces of 32 rows per warp store). It
// needs 5 · HT_ROWS · HT_BLK more vec4: with HT_BLK = 8, 8 + 20 KiB.
//
// Quantity map: a thread's slot s blurs quantity s (P.stride = 0: five
// slots) or the 4-bit field s of P.stride; the slots in use are the fields
// up to the highest non-zero one (0x20: two, 0x431: three). The other
// slots only help to load.

// Rows per workgroup (the workgroup is HT_ROWS · 5 threads).
override HT_ROWS: u32 = 32u;
// 4-column blocks per tile: 8 or 16 (a multiple of 8 for the bank
// swizzle; at most 16 for st).
override HT_BLK: u32 = 16u;
// Stage the outputs too (see above).
override HT_OUT: bool = false;
// st's size: ceil(2 · 16 / 5); hload and hstage use ceil(2 · HT_BLK / 5)
// of it, whatever HT_ROWS is.
const HT_LOADS = 7u;

var<workgroup> htile: array<vec4<f32>, 2u * HT_ROWS * HT_BLK>;
var<workgroup> hout: array<vec4<f32>, select(1u, 5u * HT_ROWS * HT_BLK, HT_OUT)>;

// Slot of image im's block j of tile row r (XOR swizzle: rows r .. r + 7
// read block j from eight different bank groups).
fn hslot(im: u32, r: u32, j: u32) -> u32 {
  return (im * HT_ROWS + r) * HT_BLK + (j ^ (r & 7u));
}

// Issues the loads of tile t (blocks t·HT_BLK .. of rows y0 ..) into st:
// staged element i = li + k · (threads) is image i / (HT_ROWS·HT_BLK), row
// (i / HT_BLK) % HT_ROWS, block i % HT_BLK. Rows past the job's last and
// blocks past the row's end read the last one (valid memory; unused).
fn hload(st: ptr<function, array<vec4<f32>, HT_LOADS>>, li: u32, t: u32, y0: u32, h: u32, wd: u32) {
  let per = HT_ROWS * HT_BLK;
  let nb = wd >> 2u;
  for (var k = 0u; k < (2u * HT_BLK + 4u) / 5u; k = k + 1u) {
    let i = li + k * HT_ROWS * 5u;
    if (i < 2u * per) {
      let rr = (i / HT_BLK) % HT_ROWS;
      let yy = min(y0 + rr, h - 1u);
      let b = ((P.base + yy * wd) >> 2u) + min(t * HT_BLK + i % HT_BLK, nb - 1u);
      if (i < per) {
        (*st)[k] = img1[b];
      } else {
        (*st)[k] = img2[b];
      }
    }
  }
}

// Writes what hload staged into htile.
fn hstage(st: ptr<function, array<vec4<f32>, HT_LOADS>>, li: u32) {
  let per = HT_ROWS * HT_BLK;
  for (var k = 0u; k < (2u * HT_BLK + 4u) / 5u; k = k + 1u) {
    let i = li + k * HT_ROWS * 5u;
    if (i < 2u * per) {
      htile[hslot(i / per, (i / HT_BLK) % HT_ROWS, i % HT_BLK)] = (*st)[k];
    }
  }
}

// HT_OUT: stores the outputs the walk of tile t left in hout (slot s's
// output of input block j of tile row r at hout[hslot(s, r, j)]): element
// i = li + k · (threads) is slot i / (HT_ROWS·HT_BLK), row (i / HT_BLK) %
// HT_ROWS, block i % HT_BLK, so consecutive threads store consecutive
// blocks of a row. Only outputs the walk made are stored: rows of the job,
// slots in use, input blocks 3 .. nb − 1 (output blocks 2 .. nb − 2; the
// scalar loops write the others).
fn hflush(li: u32, t: u32, y0: u32, h: u32, wd: u32, qmap: u32, nq: u32) {
  let per = HT_ROWS * HT_BLK;
  let nb = wd >> 2u;
  for (var k = 0u; k < HT_BLK; k = k + 1u) {
    let i = li + k * HT_ROWS * 5u;
    let s = i / per;
    let rr = (i / HT_BLK) % HT_ROWS;
    let j = i % HT_BLK;
    let b = t * HT_BLK + j;
    let y = y0 + rr;
    if (y < h && s < nq && b >= 3u && b < nb) {
      let q = select(s, (qmap >> (4u * s)) & 15u, qmap != 0u);
      put4(q, ((P.base + y * wd) >> 2u) + b - 1u, hout[hslot(s, rr, j)]);
    }
  }
}

// step4 without the store: the same operations, returning the output
// block (hblur4t stores it itself).
fn step4v(bd: vec4<f32>, ba: ptr<function, vec4<f32>>, bb: ptr<function, vec4<f32>>,
          bc: ptr<function, vec4<f32>>, prev: ptr<function, vec3<f32>>, prev2: ptr<function, vec3<f32>>) -> vec4<f32> {
  let sv = vec4<f32>((*ba).z, (*ba).w, (*bb).x, (*bb).y) + bd;
  *ba = *bb;
  *bb = *bc;
  *bc = bd;
  var out: array<vec4<f32>, 3>;
  for (var k = 0u; k < 3u; k = k + 1u) {
    let mi = K.mul_in[k];
    var o = vec4<f32>(sv.x) * mi;
    o = fmaf4(vec4<f32>(0.0, mi.x, mi.y, mi.z), vec4<f32>(sv.y), o);
    o = fmaf4(vec4<f32>(0.0, 0.0, mi.x, mi.y), vec4<f32>(sv.z), o);
    o = fmaf4(vec4<f32>(0.0, 0.0, 0.0, mi.x), vec4<f32>(sv.w), o);
    o = fmaf4(K.mul_prev2[k], vec4<f32>((*prev2)[k]), o);
    o = fmaf4(K.mul_prev[k], vec4<f32>((*prev)[k]), o);
    out[k] = o;
  }
  *prev2 = vec3<f32>(out[0].z, out[1].z, out[2].z);
  *prev = vec3<f32>(out[0].w, out[1].w, out[2].w);
  return out[0] + opq4(out[1] + out[2]);
}

// Quantity q of block j of tile row r (raw_a / raw_b / quant4 on the
// staged blocks).
fn htq(q: u32, r: u32, j: u32) -> vec4<f32> {
  let a = htile[hslot(select(0u, 1u, q == 1u || q == 3u), r, j)];
  var b = vec4<f32>(0.0);
  if (q == 4u) {
    b = htile[hslot(1u, r, j)];
  }
  return quant4(q, a, b);
}

@compute @workgroup_size(HT_ROWS * 5u, 1, 1)
fn hblur4t(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  P = PJ[wid.z];
  fma_zero = P.pad0;
  // Control flow around the barriers reads the uniform job directly (a
  // private copy is not uniform to WGSL's analysis).
  let h = PJ[wid.z].height;
  let wd = PJ[wid.z].width;
  let y0 = wid.x * HT_ROWS;
  if (y0 >= h) {
    return;
  }
  let slot = li / HT_ROWS;
  let r = li % HT_ROWS;
  let y = y0 + r;
  let qmap = P.stride;
  let nq = select(firstLeadingBit(qmap) / 4u + 1u, 5u, qmap == 0u);
  let q = select(slot, (qmap >> (4u * slot)) & 15u, qmap != 0u);
  let walk = y < h && slot < nq;
  let w = i32(wd);
  let row = P.base + min(y, h - 1u) * wd; // a multiple of 4
  let rb = row >> 2u;
  let in0 = vec3<f32>(K.mul_in[0].x, K.mul_in[1].x, K.mul_in[2].x);
  let pv0 = vec3<f32>(K.mul_prev[0].x, K.mul_prev[1].x, K.mul_prev[2].x);
  let pp0 = vec3<f32>(K.mul_prev2[0].x, K.mul_prev2[1].x, K.mul_prev2[2].x);
  var prev = vec3<f32>(0.0);
  var prev2 = vec3<f32>(0.0);

  var n = -IIR_N + 1;
  let first = min(8i, w);
  if (walk) {
    for (; n < first; n = n + 1) {
      let s = at1(q, row, n - IIR_N - 1, w) + at1(q, row, n + IIR_N - 1, w);
      var o = vec3<f32>(s) * in0;
      o = fmaf3(pp0, prev2, o);
      prev2 = prev;
      o = fmaf3(pv0, prev, o);
      prev = o;
      if (n >= 0) {
        put1(q, row + u32(n), o.x + opq(o.y + o.z));
      }
    }
  }

  // Interior (w >= 16): the step reading input block b (columns 4b ..
  // 4b + 3, b = 3 .. nb − 1) writes output block b − 1; ba, bb, bc are the
  // blocks b − 3, b − 2, b − 1, shifted in from tile 0's first three.
  let nb = wd >> 2u;
  let nt = select(0u, (nb + HT_BLK - 1u) / HT_BLK, wd >= 16u);
  var ba = vec4<f32>(0.0);
  var bb = vec4<f32>(0.0);
  var bc = vec4<f32>(0.0);
  var st: array<vec4<f32>, HT_LOADS>;
  if (nt > 0u) {
    hload(&st, li, 0u, y0, h, wd);
  }
  for (var t = 0u; t < nt; t = t + 1u) {
    workgroupBarrier(); // every walker is done with tile t − 1
    hstage(&st, li);
    if (HT_OUT && t > 0u) {
      hflush(li, t - 1u, y0, h, wd, qmap, nq);
    }
    workgroupBarrier();
    if (t + 1u < nt) {
      hload(&st, li, t + 1u, y0, h, wd); // in flight during the walk
    }
    if (walk) {
      let b0 = t * HT_BLK;
      let b1 = min(b0 + HT_BLK, nb);
      var b = b0;
      if (t == 0u) {
        for (; b < 3u; b = b + 1u) {
          ba = bb;
          bb = bc;
          bc = htq(q, r, b);
        }
      }
      for (; b < b1; b = b + 1u) {
        let v = step4v(htq(q, r, b - b0), &ba, &bb, &bc, &prev, &prev2);
        if (HT_OUT) {
          hout[hslot(slot, r, b - b0)] = v;
        } else {
          put4(q, rb + b - 1u, v);
        }
      }
    }
  }
  if (HT_OUT && nt > 0u) {
    workgroupBarrier();
    hflush(li, nt - 1u, y0, h, wd, qmap, nq);
  }

  if (walk) {
    if (nt > 0u) {
      n = w - 4;
    }
    for (; n < w; n = n + 1) {
      let s = at1(q, row, n - IIR_N - 1, w) + at1(q, row, n + IIR_N - 1, w);
      var o = vec3<f32>(s) * in0;
      o = fmaf3(pp0, prev2, o);
      prev2 = prev;
      o = fmaf3(pv0, prev, o);
      prev = o;
      put1(q, row + u32(n), o.x + opq(o.y + o.z));
    }
  }
}
