// Package gen writes the WGSL kernels that are generated rather than
// written by hand: kernels whose speed depends on straight-line code
// (every load of a chunk issued before any of them is used, arrays only
// indexed by constants so they live in registers). WGSL has no macros and
// no unroll attribute, and a GPU compiler that keeps a loop keeps one
// memory latency per iteration; so the unrolled text is produced here and
// committed, and wgsl's TestGenerated checks that the committed file is
// this package's output (`go test ./wgsl -run Generated -update` rewrites
// it).
package gen

import (
	"fmt"
	"strings"
)

// VMapsRows is R, the rows of one chunk of the vertical pass: a multiple
// of 5 (each of the five threads of a column evaluates the maps of R/5
// rows). Nothing computed depends on it: thread q always sums the rows
// n with (n - start) mod 5 = q, in increasing order.
const VMapsRows = 20

// iirN is libjxl's radius N for sigma 1.5 (IIR_N in ssim2_iir.wgsl).
const iirN = 5

type writer struct{ strings.Builder }

func (w *writer) f(format string, a ...any) { fmt.Fprintf(&w.Builder, format, a...) }

// SSIM2VMaps returns ssim2_vmaps.wgsl.
func SSIM2VMaps() string {
	const R = VMapsRows
	// The ring holds the input rows y0 - N - 1 .. y0 + R + N - 2 of a chunk
	// starting at row y0: output row n = y0 + r reads rows n - N - 1
	// (ring slot r) and n + N - 1 (slot r + 2N).
	ring := R + 2*iirN
	keep := 2 * iirN // slots the next chunk reuses: R .. ring - 1 → 0 .. keep - 1
	var w writer
	w.f("%s", strings.NewReplacer("$R", fmt.Sprint(R), "$HELPERS", ringHelpers).Replace(vmapsHeader))
	w.f("@compute @workgroup_size(VX, 5, 1)\n")
	w.f("fn vmaps(@builtin(local_invocation_id) lid: vec3<u32>,\n         @builtin(workgroup_id) wid: vec3<u32>) {\n")
	w.f("%s", vmapsProlog)
	// Ring declaration and first fill.
	w.f("  // The ring: w<i> = row y0 - %d + i of this thread's quantity (0 outside\n", iirN+1)
	w.f("  // the image). Filled here for the first chunk; each chunk then loads the\n")
	w.f("  // next chunk's new rows right after its recursion, so those loads are in\n")
	w.f("  // flight during the maps.\n")
	for i := 0; i < ring; i++ {
		w.f("  var w%d = 0.0;\n", i)
	}
	w.f("  if (!kept) {\n")
	ringLoads(&w, "    ", 0, ring, "start", -iirN-1)
	w.f("  }\n")
	w.f("  for (var y0 = start; y0 < bhi; y0 = y0 + %di) {\n", R)
	w.f("    let mb = q * QS + cx;\n")
	w.f("    if (kept) {\n")
	w.f("      // Rows past the image are never summed: clamped loads are fine.\n")
	w.f("      if (q == 0u) {\n")
	keptLoads(&w, "        ", "b0", R)
	w.f("      } else {\n")
	keptLoads(&w, "        ", "b2", R)
	w.f("      }\n")
	w.f("    } else {\n")
	w.f("      if (carry) {\n")
	recursion(&w, "        ", R, true)
	w.f("      } else {\n")
	recursion(&w, "        ", R, false)
	w.f("      }\n")
	w.f("      // Next chunk: slots %d..%d move down, %d new rows are loaded.\n", R, ring-1, ring-keep)
	for i := 0; i < keep; i++ {
		w.f("      w%d = w%d;\n", i, R+i)
	}
	ringLoads(&w, "      ", keep, ring, "y0", R+keep-iirN-1)
	w.f("    }\n")
	pixelLoads(&w, R)
	w.f("    workgroupBarrier();\n")
	maps(&w, "    ", R)
	w.f("    workgroupBarrier();\n")
	w.f("  }\n")
	w.f("%s", vmapsEpilog)
	return w.String()
}

// pixelLoads writes the loads of this thread's pixels of the chunk at y0
// (rows q, q + 5, ...).
func pixelLoads(w *writer, R int) {
	w.f("    // This thread's pixels of the chunk (rows q, q + 5, ...), loaded before\n")
	w.f("    // the barrier so their latency overlaps it.\n")
	for j := 0; j < R/5; j++ {
		w.f("    let ii%d = rix(y0 + i32(q + %du), xc);\n", j, 5*j)
	}
	for j := 0; j < R/5; j++ {
		w.f("    let i1_%d = img1[ii%d];\n    let i2_%d = img2[ii%d];\n", j, j, j, j)
	}
}

// maps writes the maps of this thread's R/5 pixels of the chunk at y0 in
// one straight-line block: every pixel's terms are computed and those
// outside the row window, the band or the width are added as 0 (an exact
// no-op on a compensated sum of non-negative terms), so the compiler can
// interleave the pixels' dependency chains. A branch per pixel, as before
// session 12, kept them one after another: on the H200 vmaps took 0.176 /
// 0.351 / 1.004 ms at 1 / 4 / 16 MP that way and 0.137 / 0.287 / 0.786
// straight-line, with the same sums bit for bit.
func maps(w *writer, ind string, R int) {
	for j := 0; j < R/5; j++ {
		w.f("%slet n%d = y0 + i32(q + %du);\n", ind, j, 5*j)
		w.f("%slet ok%d = inside && n%d >= wlo && n%d < bhi;\n", ind, j, j, j)
		w.f("%slet v%d = terms(q + %du, i1_%d, i2_%d, cx);\n", ind, j, 5*j, j, j)
	}
	for j := 0; j < R/5; j++ {
		for t, f := range []string{"d", "d4", "art", "art4", "det", "det4"} {
			w.f("%sa%d = acc_add(a%d, select(0.0, v%d.%s, ok%d));\n", ind, t, t, j, f, j)
		}
	}
}

// ringLoads writes the loads of ring slots [lo, hi) of the thread's
// quantity: slot i is row (first + i - lo), first given as a format of
// one int. One switch around all of them, so each case is straight-line
// independent loads.
func ringLoads(w *writer, ind string, lo, hi int, base string, first int) {
	w.f("%sswitch q {\n", ind)
	for q := 0; q < 5; q++ {
		if q < 4 {
			w.f("%s  case %du: {\n", ind, q)
		} else {
			w.f("%s  default: {\n", ind)
		}
		for i := lo; i < hi; i++ {
			w.f("%s    w%d = ld%d(%s, xc);\n", ind, i, q, row(base, first+i-lo))
		}
		w.f("%s  }\n", ind)
	}
	w.f("%s}\n", ind)
}

// row is the WGSL expression base + off.
func row(base string, off int) string {
	switch {
	case off > 0:
		return fmt.Sprintf("%s + %d", base, off)
	case off < 0:
		return fmt.Sprintf("%s - %d", base, -off)
	}
	return base
}

func keptLoads(w *writer, ind, buf string, R int) {
	for r := 0; r < R; r++ {
		w.f("%slet k%d = %s[rix(%s, xc)];\n", ind, r, buf, row("y0", r))
	}
	for r := 0; r < R; r++ {
		w.f("%smt[mb + %du * VX] = k%d;\n", ind, r, r)
	}
}

// recursion writes the R steps of the vertical recursion of a chunk, each
// storing its blurred value in workgroup memory; with carry, the state
// after row whi - 1 is kept for the next strip.
func recursion(w *writer, ind string, R int, carry bool) {
	for r := 0; r < R; r++ {
		w.f("%sstep(w%d + w%d, &y1, &y2);\n", ind, r, r+2*iirN)
		w.f("%smt[mb + %du * VX] = y1.x + opq(y1.y + y1.z);\n", ind, r)
		if carry {
			w.f("%sif (%s == whi - 1) { c1 = y1; c2 = y2; }\n", ind, row("y0", r))
		}
	}
}

const vmapsHeader = `// GENERATED by wgsl/internal/gen (SSIM2VMaps): do not edit; change the
// generator and run ` + "`go test ./wgsl -run Generated -update`" + `.
//
// SSIMULACRA2 vertical blur pass fused with the error maps, up to
// SSIM2_JOBS (scale, channel) jobs per dispatch. Needs ssim2_color.wgsl and
// ssim2_iir.wgsl prepended.
//
// Jobs: workgroup_id.z picks the job's Params in PJ (its plane starts at
// P.base in every buffer bound: one pyramid layout for the blurs and both
// images). The dispatch is sized for the largest job; a workgroup past its
// job's columns or row bands returns at once. Before, each (scale,
// channel) was its own dispatch behind a full barrier, and small scales
// left the GPU nearly idle; side by side they share it. The job's values
// that steer the chunk loop and its barriers are read into U (a uniform
// load at a uniform index, so the loop stays in uniform control flow); the
// helpers read the same values from the private copy P.
//
// A workgroup covers VX columns; thread (cx, q) runs libjxl's vertical
// recursion (FastGaussianVertical: y = n2 * sum - d1 * y[-1] - y[-2] with
// fused multiply-adds, started N - 1 rows above the image, inputs outside
// the image zero) down column x of quantity q's horizontally blurred plane
// (q: 0 img1, 1 img2, 2 img1², 3 img2², 4 img1·img2), so five threads share
// a column and each warp reads whole row segments (coalesced). The rows go
// in chunks of R: each thread steps the recursion over the chunk and leaves
// mu1, mu2, sigma11, sigma22, sigma12 in workgroup memory; after a barrier
// the 5·VX threads evaluate the SSIM error and the two edge maps of the
// VX × R pixels of the chunk (thread (cx, q) takes rows q, q + 5, ...; R is
// a multiple of 5) and add the six terms to their own compensated sums.
// A thread's R/5 pixels are one straight-line block (pixels outside the
// window, the band or the width add an exact 0 instead of being skipped by
// a branch), so their dependency chains interleave: with one or two warps
// per scheduler, instruction latency costs as much as memory latency.
//
// Why generated: the pass is bound by memory latency, not bandwidth (one
// recursion per column and quantity walks all rows). Its inputs are kept in
// a ring of named registers holding rows y0 - N - 1 .. y0 + R + N - 2: a
// chunk's recursion reads them, then the next chunk's R new rows are loaded
// at once (one switch on q around straight-line loads) and stay in flight
// while this chunk's maps run. A loop over an array would keep one DRAM
// round trip per row (the array indexed at run time lives in local memory
// and each iteration waits for its load); the per-chunk ring halves the
// loads too (each input row serves two outputs: as n + N - 1, then
// 2N rows later as n - N - 1).
//
// Row bands (P.band_rows != 0, whole images): the recursion is sequential
// down a column, so one workgroup per column block would walk all H rows
// with only 5·W threads in flight (the pass was latency bound: its time
// followed the rows, not the pixels). With bands, workgroup (bx, b) takes
// rows [b·band_rows, (b + 1)·band_rows) and starts from the recursion
// state ssim2_vstate.wgsl stored before its first row (same operations,
// same inputs: the very same bits as walking from the top), so the bands
// run side by side.
//
// Each thread keeps six compensated sums (TwoSum: the rounding error of
// every addition is kept); at the end the workgroup adds them pairwise in
// a fixed tree and writes one value per term to ` + "`partials`" + ` at slot
// band · workgroups_x + bx, which ssim2_reduce.wgsl adds in a fixed order.
// Nothing depends on scheduling, so scores are bit-identical run to run.
//
// Cached reference (P.channels != 0): b0 and b2 are not horizontal blurs
// but the reference's finished mu1 and sigma11 planes, made once by
// ssim2_hblur.wgsl's vblur in the same operations as the recursion here;
// threads q = 0 and 2 copy the chunk's rows of them into workgroup memory
// instead of running the recursion, so the maps see the same values bit
// for bit. Not combined with carry (strips recompute all five).
//
// Row window: only rows [win_lo, win_hi) are summed (a strip's interior at
// this scale; the whole height for a full image); chunks starting at or
// past win_hi are not computed.
//
// Strips (carry != 0): the recursion's poles lie on the unit circle, so its
// f32 rounding never decays and a value depends on the whole column above
// it, not on a few rows: a strip cannot restart the recursion in a halo and
// get the full image's values (it moved scores by up to 0.1). Instead the
// state is carried: each thread stores y[win_hi - 1] and y[win_hi - 2] (6
// floats) at partials[carry + k·5·width + q·width + x], and the next strip
// (win_lo > 0) resumes from them at row win_lo, reading its inputs from
// rows win_lo - N - 1 and on, which its crop holds bit for bit. The first
// strip (win_lo = 0, its crop starts at the image's row 0) starts as a
// whole image does. So every strip's blurs are the full image's, bit for
// bit.

@group(0) @binding(0) var<uniform> PJ: array<Params, SSIM2_JOBS>;
@group(0) @binding(1) var<uniform> K: Coef;
@group(0) @binding(2) var<storage, read> b0: array<f32>; // blur(img1) rows
@group(0) @binding(3) var<storage, read> b1: array<f32>; // blur(img2) rows
@group(0) @binding(4) var<storage, read> b2: array<f32>; // blur(img1*img1) rows
@group(0) @binding(5) var<storage, read> b3: array<f32>; // blur(img2*img2) rows
@group(0) @binding(6) var<storage, read> b4: array<f32>; // blur(img1*img2) rows
@group(0) @binding(7) var<storage, read> img1: array<f32>;
@group(0) @binding(8) var<storage, read> img2: array<f32>;
@group(0) @binding(9) var<storage, read_write> partials: array<f32>;

// Columns per workgroup (workgroup size VX × 5), set by the host; nothing
// computed depends on VX.
// This invocation's job (PJ[workgroup_id.z]), for the helpers.
var<private> P: Params;

override VX: u32 = 32u;
const R = $Ru; // rows per chunk (gen.VMapsRows)

const C2 = 0.0009;

// Per chunk: the five blurred quantities, [q][r][cx] at q * QS + r * VX + cx
// (QS padded by 8 so a warp holding several q's stores without bank
// conflicts).
override QS: u32 = R * VX + 8u;
var<workgroup> mt: array<f32, 5u * QS>;

$HELPERS// s + c is the exact sum of a + b.
fn two_sum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

// A compensated sum (sum, error) plus v.
fn acc_add(a: vec2<f32>, v: f32) -> vec2<f32> {
  let rs = two_sum(a.x, v);
  return vec2<f32>(rs.x, a.y + rs.y);
}

struct Terms {
  d: f32,
  d4: f32,
  art: f32,
  art4: f32,
  det: f32,
  det4: f32,
}

// libjxl's SSIMMap and EdgeDiffMap terms of the pixel in chunk row r,
// column cx, from the blurred quantities in workgroup memory and the two
// images' values there, in libjxl's f32 steps (opq keeps products from
// being fused into the following subtraction; libjxl's scalar code has no
// FMA there).
fn terms(r: u32, i1: f32, i2: f32, cx: u32) -> Terms {
  let mu1 = mt[r * VX + cx];
  let mu2 = mt[QS + r * VX + cx];
  let s11 = mt[2u * QS + r * VX + cx];
  let s22 = mt[3u * QS + r * VX + cx];
  let s12 = mt[4u * QS + r * VX + cx];
  let mu11 = opq(mu1 * mu1);
  let mu22 = opq(mu2 * mu2);
  let mu12 = opq(mu1 * mu2);
  let dm = mu1 - mu2;
  let num_m = 1.0 - opq(dm * dm);
  let num_s = 2.0 * opq(s12 - mu12) + C2;
  let den_s = opq(opq(s11 - mu11) + opq(s22 - mu22)) + C2;
  // d = 1 - num_m * num_s / den_s: the f32 quotient correctly rounded as
  // libjxl's (it quantises small errors to steps of 2^-24, and equal images
  // give exactly 1), then 1 - q, exact for q in [0.5, 2].
  let d = max(1.0 - div_rn(opq(num_m * num_s), den_s), 0.0);
  // (1 + |img2 - mu2|) / (1 + |img1 - mu1|) - 1, which libjxl evaluates in
  // double, as one f32 quotient of the difference.
  let e1 = abs(i1 - mu1);
  let e2 = abs(i2 - mu2);
  let d1 = (e2 - e1) / (1.0 + e1);
  let art = max(d1, 0.0);
  let det = max(-d1, 0.0);
  let d2 = d * d;
  let a2 = art * art;
  let l2 = det * det;
  return Terms(d, d2 * d2, art, a2 * a2, det, l2 * l2);
}

`

const vmapsProlog = `  let U = PJ[wid.z];
  P = U;
  // Workgroups past this job's columns or bands (the dispatch is sized for
  // the largest job) have nothing to do.
  if (wid.x * VX >= U.width || (U.band_rows == 0u && wid.y > 0u) || wid.y * U.band_rows >= U.height) {
    return;
  }
  fma_zero = U.pad0; // 0, opaque to the compiler (see ssim2_color.wgsl)
  let cx = lid.x;
  let q = lid.y;
  let x = wid.x * VX + cx;
  let inside = x < U.width;
  let xc = min(x, U.width - 1u); // columns past the edge compute, unused
  var y1 = vec3<f32>(0.0); // y[n-1] of the three filters
  var y2 = vec3<f32>(0.0); // y[n-2]
  let wlo = i32(U.win_lo);
  let whi = i32(U.win_hi);
  let carry = U.carry != 0u;
  let cw = 5u * U.width;
  let ci = U.carry + q * U.width + xc;
  let kept = U.channels != 0u && (q == 0u || q == 2u);
  // Row band of this workgroup (wid.y): rows [blo, bhi); one band when
  // U.band_rows is 0.
  var blo = 0i;
  var bhi = whi;
  if (U.band_rows != 0u) {
    blo = i32(wid.y * U.band_rows);
    bhi = min(blo + i32(U.band_rows), whi);
  }
  var start = blo;
  if (carry && wlo > 0) {
    y1 = vec3<f32>(partials[ci], partials[ci + cw], partials[ci + 2u * cw]);
    y2 = vec3<f32>(partials[ci + 3u * cw], partials[ci + 4u * cw], partials[ci + 5u * cw]);
    start = wlo;
  } else if (blo > 0) {
    if (!kept) { // the state ssim2_vstate.wgsl left before row blo
      let bi = U.band_base + (wid.y - 1u) * 6u * cw + q * U.width + xc;
      y1 = vec3<f32>(partials[bi], partials[bi + cw], partials[bi + 2u * cw]);
      y2 = vec3<f32>(partials[bi + 3u * cw], partials[bi + 4u * cw], partials[bi + 5u * cw]);
    }
  } else if (!kept) { // kept: mu1 / sigma11 come finished, no state
    for (var n = -IIR_N + 1; n < 0; n = n + 1) {
      step(row_val(q, n - IIR_N - 1, xc) + row_val(q, n + IIR_N - 1, xc), &y1, &y2);
    }
  }
  var c1 = y1; // the state after row whi - 1 (strips)
  var c2 = y2;
  // (sum, error) of the six terms
  var a0 = vec2<f32>(0.0);
  var a1 = vec2<f32>(0.0);
  var a2 = vec2<f32>(0.0);
  var a3 = vec2<f32>(0.0);
  var a4 = vec2<f32>(0.0);
  var a5 = vec2<f32>(0.0);
`

const vmapsEpilog = `  // One sum per workgroup and term: the 5·VX threads' compensated sums
  // added pairwise in workgroup memory (a fixed tree, padded with zeros to
  // a power of two), so the reduce kernel reads a few slots per workgroup
  // instead of one per column and quantity.
  let li = q * VX + cx;
  let nt = 5u * VX;
  let p2 = 1u << (32u - countLeadingZeros(nt - 1u));
  mt[li] = a0.x;
  mt[p2 + li] = a1.x;
  mt[2u * p2 + li] = a2.x;
  mt[3u * p2 + li] = a3.x;
  mt[4u * p2 + li] = a4.x;
  mt[5u * p2 + li] = a5.x;
  mt[6u * p2 + li] = a0.y;
  mt[7u * p2 + li] = a1.y;
  mt[8u * p2 + li] = a2.y;
  mt[9u * p2 + li] = a3.y;
  mt[10u * p2 + li] = a4.y;
  mt[11u * p2 + li] = a5.y;
  if (li + nt < p2) {
    for (var t = 0u; t < 12u; t = t + 1u) {
      mt[t * p2 + li + nt] = 0.0;
    }
  }
  for (var k = p2 / 2u; k > 0u; k = k / 2u) {
    workgroupBarrier();
    if (li < k) {
      for (var t = 0u; t < 6u; t = t + 1u) {
        let a = t * p2 + li;
        let e = (6u + t) * p2 + li;
        let rs = two_sum(mt[a], mt[a + k]);
        mt[a] = rs.x;
        mt[e] = (mt[e] + mt[e + k]) + rs.y;
      }
    }
  }
  if (li == 0u) {
    // Slot band · workgroups across this job's width + bx.
    let pb = U.partial_base + wid.y * ((U.width + VX - 1u) / VX) + wid.x;
    for (var t = 0u; t < 6u; t = t + 1u) {
      partials[pb + t * U.partial_count] = mt[t * p2] + mt[(6u + t) * p2];
    }
  }
  if (inside && carry) {
    partials[ci] = c1.x;
    partials[ci + cw] = c1.y;
    partials[ci + 2u * cw] = c1.z;
    partials[ci + 3u * cw] = c2.x;
    partials[ci + 4u * cw] = c2.y;
    partials[ci + 5u * cw] = c2.z;
  }
}
`

// ringHelpers are the loads and the recursion step shared by vmaps and
// vstate (both bind b0..b4 and read them down columns).
const ringHelpers = `fn row_val(q: u32, y: i32, x: u32) -> f32 {
  if (y < 0 || y >= i32(P.height)) {
    return 0.0;
  }
  let i = P.base + u32(y) * P.width + x;
  switch q {
    case 0u: { return b0[i]; }
    case 1u: { return b1[i]; }
    case 2u: { return b2[i]; }
    case 3u: { return b3[i]; }
    default: { return b4[i]; }
  }
}

// Index of row y (clamped into the image) at column x, and whether y is
// inside; loads through it are unconditional (branch-free).
fn rix(y: i32, x: u32) -> u32 {
  return P.base + u32(clamp(y, 0, i32(P.height) - 1)) * P.width + x;
}

fn rin(y: i32) -> bool {
  return y >= 0 && y < i32(P.height);
}

// Row y of quantity q at column x, zero outside the image.
fn ld0(y: i32, x: u32) -> f32 { return select(0.0, b0[rix(y, x)], rin(y)); }
fn ld1(y: i32, x: u32) -> f32 { return select(0.0, b1[rix(y, x)], rin(y)); }
fn ld2(y: i32, x: u32) -> f32 { return select(0.0, b2[rix(y, x)], rin(y)); }
fn ld3(y: i32, x: u32) -> f32 { return select(0.0, b3[rix(y, x)], rin(y)); }
fn ld4(y: i32, x: u32) -> f32 { return select(0.0, b4[rix(y, x)], rin(y)); }

// One step of the three recursions from the input sum s.
fn step(s: f32, y1: ptr<function, vec3<f32>>, y2: ptr<function, vec3<f32>>) {
  let y = fmaf3(K.n2.xyz, vec3<f32>(s), fmaf3(-K.d1.xyz, *y1, -*y2));
  *y2 = *y1;
  *y1 = y;
}

`
