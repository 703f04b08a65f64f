// SSIMULACRA2 kernels (libjxl v0.12.0's tools/ssimulacra2.cc), the same
// float32 operations in the same order as the CPU reference (cpu/ssim2)
// and the WGSL kernels. Compiled by NVRTC with --fmad=false: every fused
// multiply-add below is an explicit fmaf, exactly where libjxl's SIMD code
// has one, and no other product is fused.
//
// The host prepends the constants (#define lines with exact float bits):
// RADIUS, N2_k, D1_k, MI_k_j, MP_k_j, MP2_k_j (the recursive Gaussian),
// the opsin matrix, the sRGB curve and the cube-root constants.
//
// Plane layout: a w×h plane is w*h floats, row-major; three channel planes
// follow each other (plane c at c*n).

typedef unsigned char u8;

struct Fmt {
    int w, h, stride;   // pixels, bytes
    int ch, bps;        // channels (1..4), bytes per sample (1, 2)
    int blend;          // composite colour on bg with alpha before decoding
    float bg;
};

__device__ __forceinline__ float srgb_to_linear(float x) {
    bool neg = x < 0.0f;
    if (neg) x = -x;
    float v;
    if (x > SRGB_THRESH) {
        float p = SRGB_P4, q = SRGB_Q4;
        p = fmaf(p, x, SRGB_P3); q = fmaf(q, x, SRGB_Q3);
        p = fmaf(p, x, SRGB_P2); q = fmaf(q, x, SRGB_Q2);
        p = fmaf(p, x, SRGB_P1); q = fmaf(q, x, SRGB_Q1);
        p = fmaf(p, x, SRGB_P0); q = fmaf(q, x, SRGB_Q0);
        v = p / q;
    } else {
        v = x * SRGB_LOWDIVINV;
    }
    return neg ? -v : v;
}

__device__ __forceinline__ float sample(const u8* px, int i, int bps, float scale) {
    int s = bps == 1 ? (int)px[i] : ((int)px[2 * i] << 8 | (int)px[2 * i + 1]);
    return (float)s * scale;
}

// linear_px decodes pixel (x, y) to linear RGB, compositing on the
// background first when asked (on the encoded values, no fused operations,
// as libjxl's scalar code).
__device__ void linear_px(const u8* raw, const Fmt f, int x, int y, float* r, float* g, float* b) {
    const u8* px = raw + (size_t)y * f.stride + (size_t)x * f.ch * f.bps;
    float scale = f.bps == 1 ? SCALE8 : SCALE16;
    bool gray = f.ch <= 2;
    float c0 = sample(px, 0, f.bps, scale);
    float c1 = gray ? c0 : sample(px, 1, f.bps, scale);
    float c2 = gray ? c0 : sample(px, 2, f.bps, scale);
    if (f.blend) {
        float a = sample(px, f.ch - 1, f.bps, scale);
        float ia = (1.0f - a) * f.bg;
        c0 = a * c0 + ia;
        c1 = a * c1 + ia;
        c2 = a * c2 + ia;
    }
    *r = srgb_to_linear(c0);
    *g = gray ? *r : srgb_to_linear(c1);
    *b = gray ? *r : srgb_to_linear(c2);
}

// cube_root_add is libjxl's CubeRootAndAdd: exponent-bit guess of
// x^(-1/3), three Newton steps, a refinement, then x^(-2/3)·x + add.
__device__ __forceinline__ float cube_root_add(float x, float add) {
    float xa3 = CBRT_THIRD * x;
    int m1 = __float_as_int(x);
    int m2 = m1 != 0 ? 0x54800000 - (m1 >> 23) * 0x002AAAAA : 0;
    float r = __int_as_float(m2);
    for (int i = 0; i < 3; i++) {
        float r2 = r * r;
        r = fmaf(-xa3, r2 * r2, CBRT_FOURTHIRD * r);
    }
    float r2 = r * r;
    r = fmaf(CBRT_THIRD, fmaf(-x, r2 * r2, r), r);
    r2 = r * r;
    return fmaf(r2, x, add);
}

__device__ void to_xyb(float r, float g, float b, float* X, float* Y, float* B) {
    float m0 = fmaf(OPSIN_M00, r, fmaf(OPSIN_M01, g, fmaf(OPSIN_M02, b, OPSIN_BIAS)));
    float m1 = fmaf(OPSIN_M10, r, fmaf(OPSIN_M11, g, fmaf(OPSIN_M12, b, OPSIN_BIAS)));
    float m2 = fmaf(OPSIN_M20, r, fmaf(OPSIN_M21, g, fmaf(OPSIN_M22, b, OPSIN_BIAS)));
    if (!(m0 > 0.0f)) m0 = 0.0f;
    if (!(m1 > 0.0f)) m1 = 0.0f;
    if (!(m2 > 0.0f)) m2 = 0.0f;
    m0 = cube_root_add(m0, NEG_BIAS_CBRT);
    m1 = cube_root_add(m1, NEG_BIAS_CBRT);
    m2 = cube_root_add(m2, NEG_BIAS_CBRT);
    float xv = 0.5f * (m0 - m1);
    float yv = 0.5f * (m0 + m1);
    *X = xv * 14.0f + 0.42f;
    *Y = yv + 0.01f;
    *B = (m2 - yv) + 0.55f;
}

// first_scale: one thread per pixel of scale 1. Decodes the 2×2 source
// pixels (the last row/column repeated for odd sizes), writes their
// positive XYB (scale 0) and their box mean in linear RGB (scale 1), summed
// as libjxl does: row 0's pair, then row 1's two samples. Only scale-1
// rows [oy0, oy1) (a band whose pixels have arrived).
extern "C" __global__ void first_scale(const u8* __restrict__ raw, int w, int h, int stride, int ch, int bps, int blend, float bg,
                                       float* __restrict__ xyb, float* __restrict__ lin1, int w1, int h1, int oy0, int oy1) {
    const Fmt f = {w, h, stride, ch, bps, blend, bg};
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = oy0 + blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= w1 || oy >= oy1) return;
    int x0 = 2 * ox, y0 = 2 * oy;
    int x1 = min(x0 + 1, f.w - 1), y1 = min(y0 + 1, f.h - 1);
    size_t n = (size_t)f.w * f.h;
    float v[4][3];
    int xs[4] = {x0, x1, x0, x1}, ys[4] = {y0, y0, y1, y1};
    for (int k = 0; k < 4; k++) {
        linear_px(raw, f, xs[k], ys[k], &v[k][0], &v[k][1], &v[k][2]);
        bool dup = (k == 1 && x1 == x0) || (k >= 2 && y1 == y0) || (k == 3 && x1 == x0);
        if (!dup) {
            size_t o = (size_t)ys[k] * f.w + xs[k];
            to_xyb(v[k][0], v[k][1], v[k][2], &xyb[o], &xyb[n + o], &xyb[2 * n + o]);
        }
    }
    size_t n1 = (size_t)w1 * h1, o1 = (size_t)oy * w1 + ox;
    for (int c = 0; c < 3; c++) {
        float s = v[0][c] + v[1][c];
        s += v[2][c];
        s += v[3][c];
        lin1[c * n1 + o1] = s * 0.25f;
    }
}

// xyb_planes: linear RGB planes → positive XYB planes (n pixels).
extern "C" __global__ void xyb_planes(const float* __restrict__ lin, float* __restrict__ xyb, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    to_xyb(lin[i], lin[n + i], lin[2 * n + i], &xyb[i], &xyb[n + i], &xyb[2 * n + i]);
}

// downsample: 2×2 box mean of three linear planes (w×h) into (ow×oh).
extern "C" __global__ void downsample(const float* __restrict__ src, int w, int h, float* __restrict__ dst, int ow, int oh) {
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= ow || oy >= oh) return;
    int x0 = 2 * ox, y0 = 2 * oy;
    int x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1);
    size_t n = (size_t)w * h, on = (size_t)ow * oh;
    for (int c = 0; c < 3; c++) {
        const float* s = src + c * n;
        float v = s[(size_t)y0 * w + x0] + s[(size_t)y0 * w + x1];
        v += s[(size_t)y1 * w + x0];
        v += s[(size_t)y1 * w + x1];
        dst[c * on + (size_t)oy * ow + ox] = v * 0.25f;
    }
}

// ---- recursive Gaussian --------------------------------------------------
//
// Each filter step is sequential along its row or column, so a pass has
// only as many independent chains as the image has rows (or columns) per
// channel: 12288 for a 4096² image, less than one warp per SM. With a
// chain reading global memory each step, every load's latency is exposed.
// So the passes are tiled: a block stages a tile of 32 chains in shared
// memory with coalesced loads (all its warps), one warp (the horizontal
// pass) or one warp per blurred signal (vertical) runs the 32 recurrences
// over the tile reading shared memory, and all warps write
// (or, for a score, turn into SSIM and edge terms) the tile's outputs.
// The arithmetic is the same as one chain reading global memory.

#define TB 256                  // threads per tiled block
#define HT 64                   // horizontal tile: outputs per row per tile
#define HW (HT + 2 * RADIUS)    // input columns a tile needs
#define HS (HW | 1)             // odd row stride: no bank conflicts
#define VT 32                   // vertical tile: output rows per tile
#define VR (VT + 2 * RADIUS)    // input rows a tile needs

struct Coefs {
    float mi[3][4], mp[3][4], mp2[3][4], n2[3], d1[3];
};

__device__ __forceinline__ Coefs coefs() {
    Coefs c = {{{MI_0_0, MI_0_1, MI_0_2, MI_0_3}, {MI_1_0, MI_1_1, MI_1_2, MI_1_3}, {MI_2_0, MI_2_1, MI_2_2, MI_2_3}},
               {{MP_0_0, MP_0_1, MP_0_2, MP_0_3}, {MP_1_0, MP_1_1, MP_1_2, MP_1_3}, {MP_2_0, MP_2_1, MP_2_2, MP_2_3}},
               {{MP2_0_0, MP2_0_1, MP2_0_2, MP2_0_3}, {MP2_1_0, MP2_1_1, MP2_1_2, MP2_1_3}, {MP2_2_0, MP2_2_1, MP2_2_2, MP2_2_3}},
               {N2_0, N2_1, N2_2}, {D1_0, D1_1, D1_2}};
    return c;
}

// hstep is libjxl's single horizontal step (near the borders): input sum
// sum, three filters, output filter 0 + (filter 1 + filter 2).
__device__ __forceinline__ float hstep(const Coefs& g, float* p1, float* p2, float sum) {
    float o[3];
#pragma unroll
    for (int k = 0; k < 3; k++) {
        float v = sum * g.mi[k][0];
        v = fmaf(g.mp2[k][0], p2[k], v);
        v = fmaf(g.mp[k][0], p1[k], v);
        p2[k] = p1[k];
        p1[k] = v;
        o[k] = v;
    }
    return o[0] + (o[1] + o[2]);
}

// hstep4 is libjxl's interior step: four outputs from the input sums
// f0..f3 and the last two outputs, through the powers of the recurrence.
__device__ __forceinline__ void hstep4(const Coefs& g, float* p1, float* p2, float f0, float f1, float f2, float f3, float* out) {
    float q[3][4];
#pragma unroll
    for (int k = 0; k < 3; k++) {
        float a0 = f0 * g.mi[k][0], a1 = f0 * g.mi[k][1], a2 = f0 * g.mi[k][2], a3 = f0 * g.mi[k][3];
        a1 = fmaf(g.mi[k][0], f1, a1);
        a2 = fmaf(g.mi[k][1], f1, a2);
        a3 = fmaf(g.mi[k][2], f1, a3);
        a2 = fmaf(g.mi[k][0], f2, a2);
        a3 = fmaf(g.mi[k][1], f2, a3);
        a3 = fmaf(g.mi[k][0], f3, a3);
        q[k][0] = fmaf(g.mp[k][0], p1[k], fmaf(g.mp2[k][0], p2[k], a0));
        q[k][1] = fmaf(g.mp[k][1], p1[k], fmaf(g.mp2[k][1], p2[k], a1));
        q[k][2] = fmaf(g.mp[k][2], p1[k], fmaf(g.mp2[k][2], p2[k], a2));
        q[k][3] = fmaf(g.mp[k][3], p1[k], fmaf(g.mp2[k][3], p2[k], a3));
        p2[k] = q[k][2];
        p1[k] = q[k][3];
    }
#pragma unroll
    for (int j = 0; j < 4; j++) out[j] = q[0][j] + (q[1][j] + q[2][j]);
}

// The signals blurred: for the reference (NS 2) a and a²; for a score
// (NS 3) b, b² and a·b, a the reference's positive XYB and b the
// distorted image's. Products are rounded to float32 before the blur, as
// the CPU forms them in a row buffer.
template <int NS>
__device__ __forceinline__ float sig(float a, float b, int s) {
    if (NS == 2) return s == 0 ? a : a * a;
    if (s == 0) return b;
    if (s == 1) return b * b;
    return a * b;
}

// hblur: block (row group, channel), the 32 rows from y0 of channel c;
// for each tile of HT output columns (tiles start at multiples of 4 so
// that libjxl's four-lane groups fall inside one tile) the block stages
// the rows' inputs (zero outside the image, which is exactly libjxl's
// border handling), warp 0 runs the filters, and the block stores the
// outputs: plane (NS·c + s).
//
// The loads of the next tile are issued into registers before warp 0
// walks the current one, so that the memory system works while the
// recursion runs (the walk, not the loads, is then what a block waits
// for). The arithmetic is untouched by that: only when values arrive.
template <int NS>
struct HTile {
    static constexpr int TOT = 32 * HW, K = (TOT + TB - 1) / TB;
    float va[K], vb[K];
};

template <int NS>
__device__ __forceinline__ void hfetch(HTile<NS>& t, const float* __restrict__ pa, const float* __restrict__ pb, int w, int y0, int yb, int x0, int tid) {
    const int N = RADIUS;
#pragma unroll
    for (int k = 0; k < HTile<NS>::K; k++) {
        int i = tid + k * TB;
        int rr = i / HW, cc = i % HW;
        int y = y0 + rr, x = x0 - N - 1 + cc;
        bool in = i < HTile<NS>::TOT && y < yb && x >= 0 && x < w;
        size_t o = (size_t)y * w + x;
        t.va[k] = in ? pa[o] : 0.0f;
        if (NS == 3) t.vb[k] = in ? pb[o] : 0.0f;
    }
}

template <int NS>
__device__ __forceinline__ void hstage(const HTile<NS>& t, float* ta, float* tb, int tid) {
#pragma unroll
    for (int k = 0; k < HTile<NS>::K; k++) {
        int i = tid + k * TB;
        if (i < HTile<NS>::TOT) {
            int rr = i / HW, cc = i % HW;
            ta[rr * HS + cc] = t.va[k];
            if (NS == 3) tb[rr * HS + cc] = t.vb[k];
        }
    }
}

// hwalk runs the filters of signal S over one staged tile for row r
// (lane r of warp S).
template <int NS, int S>
__device__ __forceinline__ void hwalk(const Coefs& g, float (&p1)[NS][3], float (&p2)[NS][3], const float* ra, const float* rb,
                                      float (*to)[32][HT + 1], int r, int x0, int w) {
    const int N = RADIUS;
    const int firstAligned = (N + 1 + 3) / 4 * 4;
    const int interiorEnd = w - N + 1 - 3;  // a group starting below this is interior
    for (int xx = 0; xx < HT; xx += 4) {
        int x = x0 + xx;
        if (x >= w) break;
        // input index of x−N−1 in the tile is xx.
        if (x >= firstAligned && x < interiorEnd) {
            {
                const int s = S;
                float f[4];
#pragma unroll
                for (int j = 0; j < 4; j++)
                    f[j] = sig<NS>(ra[xx + j], rb[xx + j], s) + sig<NS>(ra[xx + j + 2 * N], rb[xx + j + 2 * N], s);
                float o[4];
                hstep4(g, p1[s], p2[s], f[0], f[1], f[2], f[3], o);
#pragma unroll
                for (int j = 0; j < 4; j++) to[s][r][xx + j] = o[j];
            }
        } else {
            for (int j = 0; j < 4; j++) {
                int xj = x + j;
                if (xj < -N + 1 || xj >= w) continue;
                {
                    const int s = S;
                    float sum = sig<NS>(ra[xx + j], rb[xx + j], s) + sig<NS>(ra[xx + j + 2 * N], rb[xx + j + 2 * N], s);
                    to[s][r][xx + j] = hstep(g, p1[s], p2[s], sum);
                }
            }
        }
    }
}

// hblur_tiled: warp s walks signal s. Measured on the H200 (16 MP, every
// scale, pipelined tiles): 1.05 ms, against 1.12 ms with warp 0 walking
// all three signals with their chains interleaved (before the tiles were
// pipelined, one warp had won, 1.36 against 1.70 ms).
template <int NS>
__device__ void hblur_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int w, int h, int c, int y0, int yb) {
    __shared__ float ta[32 * HS];
    __shared__ float tb[NS == 3 ? 32 * HS : 1];
    __shared__ float to[NS][32][HT + 1];
    const int N = RADIUS;
    const int tid = threadIdx.x, wid = tid >> 5, r = tid & 31;
    const size_t n = (size_t)w * h;
    const float* pa = a + c * n;
    const float* pb = NS == 3 ? b + c * n : nullptr;
    const Coefs g = coefs();
    float p1[NS][3], p2[NS][3];
#pragma unroll
    for (int s = 0; s < NS; s++)
#pragma unroll
        for (int k = 0; k < 3; k++) p1[s][k] = p2[s][k] = 0.0f;
    const int firstAligned = (N + 1 + 3) / 4 * 4;
    HTile<NS> t;
    hfetch<NS>(t, pa, pb, w, y0, yb, -firstAligned, tid);
    for (int x0 = -firstAligned; x0 < w; x0 += HT) {
        // Stage inputs [x0−N−1, x0+HT+N−1) of the 32 rows (fetched the
        // previous round), then fetch the next tile's.
        hstage<NS>(t, ta, tb, tid);
        __syncthreads();
        if (x0 + HT < w) hfetch<NS>(t, pa, pb, w, y0, yb, x0 + HT, tid);
        const float* ra = ta + r * HS;
        const float* rb = NS == 3 ? tb + r * HS : ra;
        if (wid == 0) hwalk<NS, 0>(g, p1, p2, ra, rb, to, r, x0, w);
        else if (wid == 1) hwalk<NS, 1>(g, p1, p2, ra, rb, to, r, x0, w);
        else if constexpr (NS == 3) {
            if (wid == 2) hwalk<NS, 2>(g, p1, p2, ra, rb, to, r, x0, w);
        }
        __syncthreads();
        // No barrier after the stores: the next round's staging writes
        // ta/tb (the walkers are done reading them) and the walkers write
        // `to` only after the next barrier, which every reader of `to` has
        // passed.
        for (int i = tid; i < NS * 32 * HT; i += TB) {
            int s = i / (32 * HT), rr = (i / HT) % 32, cc = i % HT;
            int y = y0 + rr, x = x0 + cc;
            if (y < yb && x >= 0 && x < w) out[(NS * c + s) * n + (size_t)y * w + x] = to[s][rr][cc];
        }
    }
}

// hblur_ref / hblur_dist: rows [ya, yb) of w×h planes (a band, or all).
extern "C" __global__ void __launch_bounds__(TB) hblur_ref(const float* __restrict__ a, float* __restrict__ out, int w, int h, int ya, int yb) {
    hblur_tiled<2>(a, nullptr, out, w, h, blockIdx.y, ya + blockIdx.x * 32, yb);
}

extern "C" __global__ void __launch_bounds__(TB) hblur_dist(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int w, int h, int ya, int yb) {
    hblur_tiled<3>(a, b, out, w, h, blockIdx.y, ya + blockIdx.x * 32, yb);
}

// ---- every scale in one launch ----------------------------------------------
//
// A scale's blur chains are as long as its rows (columns) and there are
// only as many as its rows: at scales 1–5 a launch leaves most of the GPU
// idle while its few long chains run. The scales' passes are independent
// once every scale's XYB exists, so one launch covers every scale,
// scale 0's (longest) blocks first. The distorted planes live in pyramid
// buffers: scale k's planes start after the planes of scales < k (3 planes
// per scale for the XYB, 9 for the horizontal blurs), which pyr_scale
// computes from the full size as the host lays them out.

struct PyrScale {
    int w, h;
    size_t off;  // pixels before scale k's planes, per plane
};

__device__ __forceinline__ PyrScale pyr_scale(int w, int h, int k) {
    size_t off = 0;
    for (int j = 0; j < k; j++) {
        off += (size_t)w * h;
        w = (w + 1) / 2;
        h = (h + 1) / 2;
    }
    PyrScale p = {w, h, off};
    return p;
}

// pick_scale maps a linear block index over scales 0..nk−1 (groups of 32
// rows, or columns, each: rows when byRows, then scale 0's from row y0,
// a multiple of 32) to its scale and first row (column).
__device__ __forceinline__ int pick_scale(int w, int h, int y0, int nk, bool byRows, int* first) {
    int b = blockIdx.x;
    for (int k = 0; k < nk; k++) {
        PyrScale p = pyr_scale(w, h, k);
        int skip = byRows && k == 0 ? y0 : 0;
        int g = ((byRows ? p.h : p.w) - skip + 31) / 32;
        if (g < 0) g = 0;
        if (b < g || k == nk - 1) {
            *first = skip + b * 32;
            return k;
        }
        b -= g;
    }
    *first = b * 32;
    return nk - 1;
}

__device__ __forceinline__ const float* pick6(int k, const float* p0, const float* p1, const float* p2, const float* p3, const float* p4, const float* p5) {
    switch (k) {
        case 0: return p0;
        case 1: return p1;
        case 2: return p2;
        case 3: return p3;
        case 4: return p4;
        default: return p5;
    }
}

// hblur_dist_all: hblur_dist over every scale of a w×h image, scale 0's
// from row y0 (the rows before it already done: uploadBands); a0..a5 the
// reference's XYB per scale, img2 and hb the distorted pyramids.
extern "C" __global__ void __launch_bounds__(TB) hblur_dist_all(const float* __restrict__ a0, const float* __restrict__ a1, const float* __restrict__ a2,
                                                                const float* __restrict__ a3, const float* __restrict__ a4, const float* __restrict__ a5,
                                                                const float* __restrict__ img2, float* __restrict__ hb, int w, int h, int y0, int nk) {
    int first;
    int k = pick_scale(w, h, y0, nk, true, &first);
    PyrScale p = pyr_scale(w, h, k);
    if (first >= p.h) return;
    hblur_tiled<3>(pick6(k, a0, a1, a2, a3, a4, a5), img2 + 3 * p.off, hb + 9 * p.off, p.w, p.h, blockIdx.y, first, p.h);
}

// vstep is one step of the plain vertical recurrence: y = n2·sv −
// (d1·y[n−1] + y[n−2]), one rounding per bracket; output filter 0 +
// (filter 1 + filter 2).
__device__ __forceinline__ float vstep(const Coefs& g, float* a, float* b, float sv) {
    float y[3];
#pragma unroll
    for (int k = 0; k < 3; k++) {
        y[k] = fmaf(g.n2[k], sv, -fmaf(g.d1[k], a[k], b[k]));
        b[k] = a[k];
        a[k] = y[k];
    }
    return y[0] + (y[1] + y[2]);
}

__device__ __forceinline__ double quartic(double x) {
    x *= x;
    return x * x;
}

// vblur: block (column group, channel), the 32 columns from x0 of channel
// c; for each tile of VT output rows the block stages rows [y0−N−1,
// y0+VT+N−1) of the NS horizontally blurred planes, warps 0..NS−1 run the
// column filters (one signal each) into the tile's outputs, and the block
// then either stores mu and vr = blur(a²) − mu² (the reference, NS 2) or
// computes cpu/ssim2's rowTerms per pixel and adds them to its threads'
// sums (a score, NS 3), which are added per column at the end in a fixed
// order into sums[(c·w + x)·6 + t].
//
// As in hblur, the next tile's inputs are fetched into registers while
// the filters walk the current one, and a score's reference and distorted
// planes for the tile are fetched before the walk, so that their
// latencies overlap it.
//
// With STRIP, it covers one strip of one scale (strip.go says why this
// gives the whole image's values bit for bit): the planes are the strip's
// crop (w × h rows at this scale, crop row 0 = image row r0), the
// recursion runs over crop rows [lo, hi) only (from −N+1 for the first
// strip, as the whole image's does) and resumes from the state the
// previous strip left in st (per channel, column and signal: the three
// filters' last two outputs); outputs are stored, or turned into terms,
// for rows [lo, hi) only. Tiles follow the whole image's grid (image rows
// −N+1 + 32·t), so that every row's terms land in the thread that adds
// them in the whole image, in the same order: the per-thread sums resume
// from accs (per channel, column and warp) and are left there, and the
// per-column sums written to sums after each strip are, after the last
// strip, the whole image's exactly. The whole image is the case r0 = 0,
// lo = −N+1, hi = h, first.
template <int NS>
struct VTile {
    static constexpr int TOT = NS * VR * 32, K = (TOT + TB - 1) / TB;   // scalar loads
    static constexpr int TOT4 = NS * VR * 8, K4 = (TOT4 + TB - 1) / TB; // float4 loads (vec)
    static constexpr int KM = K > 4 * K4 ? K : 4 * K4;
    float v[KM];
};

// vfetch loads a tile's inputs: with vec (w a multiple of 4 and hb
// 16-byte aligned) four columns per load, a quarter of the load
// instructions and of their index arithmetic: measured on the H200 (16 MP,
// every scale) the vertical pass with its terms took 1.14 ms instead of
// 1.30, and a page-locked score 2.94 ms instead of 3.20. (The same in the
// horizontal pass, whose loads are already fewer per output, gained
// nothing measurable: 1.049 ms either way.) ZENMETRICS_CUDA_SSIM2_VEC=off
// (NOVEC) keeps one float per load, to compare.
__device__ __forceinline__ bool aligned16(const void* p) { return !NOVEC && ((size_t)p & 15) == 0; }

template <int NS>
__device__ __forceinline__ void vfetch(VTile<NS>& t, const float* __restrict__ hb, size_t n, int c, int w, int h, int x0, int y0, int tid, bool vec) {
    const int N = RADIUS;
    if (vec) {
#pragma unroll
        for (int k = 0; k < VTile<NS>::K4; k++) {
            int i = tid + k * TB;
            int s = i / (VR * 8), rr = (i / 8) % VR, q = i % 8;
            int y = y0 - N - 1 + rr, xx = x0 + 4 * q;
            float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (i < VTile<NS>::TOT4 && y >= 0 && y < h && xx < w) z = *reinterpret_cast<const float4*>(hb + (NS * c + s) * n + (size_t)y * w + xx);
            t.v[4 * k] = z.x, t.v[4 * k + 1] = z.y, t.v[4 * k + 2] = z.z, t.v[4 * k + 3] = z.w;
        }
        return;
    }
#pragma unroll
    for (int k = 0; k < VTile<NS>::K; k++) {
        int i = tid + k * TB;
        int s = i / (VR * 32), rr = (i / 32) % VR, cc = i % 32;
        int y = y0 - N - 1 + rr, xx = x0 + cc;
        t.v[k] = (i < VTile<NS>::TOT && y >= 0 && y < h && xx < w) ? hb[(NS * c + s) * n + (size_t)y * w + xx] : 0.0f;
    }
}

template <int NS, bool STRIP>
__device__ void vblur_tiled(const float* __restrict__ hb, float* __restrict__ mu, float* __restrict__ vr,
                            const float* __restrict__ img1, const float* __restrict__ mu1, const float* __restrict__ vr1,
                            const float* __restrict__ img2, double* __restrict__ sums, float* __restrict__ st,
                            double* __restrict__ accs, int w, int h, int c, int x0, int r0, int lo, int hi, int first) {
    __shared__ float ti[NS][VR][32];
    __shared__ float to[NS][VT][32];
    __shared__ double red[NS == 3 ? TB / 32 : 1][32][6];
    const int N = RADIUS;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5;
    const size_t n = (size_t)w * h;
    const Coefs g = coefs();
    const int x = x0 + lane;
    const int rs = first ? -N + 1 : lo;  // the recursion's first row
    // Warp s filters signal s of the 32 columns (lane = column).
    float sa[3] = {0.0f, 0.0f, 0.0f}, sb[3] = {0.0f, 0.0f, 0.0f};
    double acc[6] = {0, 0, 0, 0, 0, 0};
    float* sp = STRIP ? st + (((size_t)c * w + x) * NS + wid) * 6 : nullptr;
    double* ap = STRIP && NS == 3 ? accs + (((size_t)c * w + x) * (TB / 32) + wid) * 6 : nullptr;
    if (STRIP && !first && x < w) {
        if (wid < NS)
            for (int k = 0; k < 3; k++) sa[k] = sp[k], sb[k] = sp[3 + k];
        if (NS == 3)
            for (int t = 0; t < 6; t++) acc[t] = ap[t];
    }
    // The whole image's tile containing crop row rs: image row r0 + rs.
    const int g0 = r0 + rs + N - 1;  // ≥ 0
    int y0 = g0 / VT * VT - N + 1 - r0;
    VTile<NS> t;
    const bool vec = w % 4 == 0 && aligned16(hb);
    if (y0 < hi) vfetch<NS>(t, hb, n, c, w, h, x0, y0, tid, vec);
    for (; y0 < hi; y0 += VT) {
        float* tl = &ti[0][0][0];
        if (vec) {
            // float4 i holds floats 4i..4i+3 of the tile, in ti's order.
#pragma unroll
            for (int k = 0; k < VTile<NS>::K4; k++) {
                int i = tid + k * TB;
                if (i < VTile<NS>::TOT4)
#pragma unroll
                    for (int j = 0; j < 4; j++) tl[4 * i + j] = t.v[4 * k + j];
            }
        } else {
#pragma unroll
            for (int k = 0; k < VTile<NS>::K; k++) {
                int i = tid + k * TB;
                if (i < VTile<NS>::TOT) tl[i] = t.v[k];
            }
        }
        __syncthreads();
        if (y0 + VT < hi) vfetch<NS>(t, hb, n, c, w, h, x0, y0 + VT, tid, vec);
        constexpr int J = VT / (TB / 32);  // rows per warp per tile
        float pm1[J], pv1[J], pi1[J], pi2[J];
        if (NS == 3) {
#pragma unroll
            for (int q = 0; q < J; q++) {
                int y = y0 + wid + q * (TB / 32);
                bool ok = y >= lo && y >= 0 && y < hi && x < w;
                size_t o = c * n + (size_t)y * w + x;
                pm1[q] = ok ? mu1[o] : 0.0f;
                pv1[q] = ok ? vr1[o] : 0.0f;
                pi1[q] = ok ? img1[o] : 0.0f;
                pi2[q] = ok ? img2[o] : 0.0f;
            }
        }
        if (wid < NS) {
            if (STRIP) {
                for (int j = 0; j < VT; j++) {
                    int y = y0 + j;
                    if (y < rs || y >= hi) continue;
                    to[wid][j][lane] = vstep(g, sa, sb, ti[wid][j][lane] + ti[wid][j + 2 * N][lane]);
                }
            } else {
#pragma unroll 8
                for (int j = 0; j < VT; j++) to[wid][j][lane] = vstep(g, sa, sb, ti[wid][j][lane] + ti[wid][j + 2 * N][lane]);
            }
        }
        __syncthreads();
        // No barrier after the outputs: the next round's staging writes ti
        // (the filters are done with it) and the filters write `to` only
        // after the next barrier, which every reader of `to` has passed.
#pragma unroll
        for (int q = 0; q < J; q++) {
            int j = wid + q * (TB / 32);
            int y = y0 + j;
            if (y < lo || y < 0 || y >= hi || x >= w) continue;
            size_t o = c * n + (size_t)y * w + x;
            if (NS == 2) {
                float m = to[0][j][lane];
                mu[o] = m;
                vr[o] = to[1][j][lane] - m * m;
            } else {
                float mu2 = to[0][j][lane], s22 = to[1][j][lane], s12 = to[2][j][lane];
                float m1 = pm1[q];
                float diff = m1 - mu2;
                float numM = 1.0f - diff * diff;
                float numS = 2.0f * (s12 - m1 * mu2) + SSIM_C2;
                float denS = (pv1[q] + (s22 - mu2 * mu2)) + SSIM_C2;
                double d = 1.0 - (double)((numM * numS) / denS);
                d = fmax(d, 0.0);
                acc[0] += d;
                acc[1] += quartic(d);
                double e2 = (double)fabsf(pi2[q] - mu2);
                double e1 = (double)fabsf(pi1[q] - m1);
                double d1 = (1.0 + e2) / (1.0 + e1) - 1.0;
                double ar = fmax(d1, 0.0), lw = fmax(-d1, 0.0);
                acc[2] += ar;
                acc[3] += quartic(ar);
                acc[4] += lw;
                acc[5] += quartic(lw);
            }
        }
    }
    if (STRIP && x < w) {
        if (wid < NS)
            for (int k = 0; k < 3; k++) sp[k] = sa[k], sp[3 + k] = sb[k];
        if (NS == 3)
            for (int t = 0; t < 6; t++) ap[t] = acc[t];
    }
    if (NS == 3) {
#pragma unroll
        for (int t = 0; t < 6; t++) red[wid][lane][t] = acc[t];
        __syncthreads();
        if (tid < 32 && x < w) {
            double* out = sums + ((size_t)c * w + x) * 6;
#pragma unroll
            for (int t = 0; t < 6; t++) {
                double v = 0.0;
                for (int k = 0; k < TB / 32; k++) v += red[k][lane][t];
                out[t] = v;
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(TB) vblur_ref(const float* __restrict__ hb, float* __restrict__ mu, float* __restrict__ vr, int w, int h) {
    vblur_tiled<2, false>(hb, mu, vr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, w, h, blockIdx.y, blockIdx.x * 32, 0, -RADIUS + 1, h, 1);
}

extern "C" __global__ void __launch_bounds__(TB) vblur_terms(const float* __restrict__ hb, const float* __restrict__ img1,
                                                             const float* __restrict__ mu1, const float* __restrict__ vr1,
                                                             const float* __restrict__ img2, double* __restrict__ sums, int w, int h) {
    vblur_tiled<3, false>(hb, nullptr, nullptr, img1, mu1, vr1, img2, sums, nullptr, nullptr, w, h, blockIdx.y, blockIdx.x * 32, 0, -RADIUS + 1, h, 1);
}

// vblur_terms_all: vblur_terms over scales 0..nk−1 (column groups, scale
// 0's first); i_k, m_k, v_k the reference's XYB, blur and variance per
// scale, img2 and hb the distorted pyramids, scale k's column sums at
// sums + k·sum_step.
extern "C" __global__ void __launch_bounds__(TB) vblur_terms_all(const float* __restrict__ hb, const float* __restrict__ img2, double* __restrict__ sums,
                                                                 int w, int h, int nk, int sum_step,
                                                                 const float* i0, const float* i1, const float* i2, const float* i3, const float* i4, const float* i5,
                                                                 const float* m0, const float* m1, const float* m2, const float* m3, const float* m4, const float* m5,
                                                                 const float* v0, const float* v1, const float* v2, const float* v3, const float* v4, const float* v5) {
    int first;
    int k = pick_scale(w, h, 0, nk, false, &first);
    PyrScale p = pyr_scale(w, h, k);
    if (first >= p.w) return;
    vblur_tiled<3, false>(hb + 9 * p.off, nullptr, nullptr, pick6(k, i0, i1, i2, i3, i4, i5), pick6(k, m0, m1, m2, m3, m4, m5), pick6(k, v0, v1, v2, v3, v4, v5),
                          img2 + 3 * p.off, sums + (size_t)k * sum_step, nullptr, nullptr, p.w, p.h, blockIdx.y, first, 0, -RADIUS + 1, p.h, 1);
}

// reduce_sums: block (t, c, k) adds term t of channel c over the w_k
// columns of scale k (sums at k·stride), in a fixed tree, into
// tot[(k·3 + c)·6 + t]. Deterministic: the same order every run.
extern "C" __global__ void reduce_sums(const double* __restrict__ sums, double* __restrict__ tot, int w0, int stride) {
    __shared__ double part[256];
    int t = blockIdx.x, c = blockIdx.y, k = blockIdx.z;
    int w = w0;
    for (int i = 0; i < k; i++) w = (w + 1) / 2;
    const double* s = sums + (size_t)k * stride + (size_t)c * w * 6 + t;
    double acc = 0.0;
    for (int x = threadIdx.x; x < w; x += 256) acc += s[(size_t)x * 6];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int m = 128; m > 0; m >>= 1) {
        if (threadIdx.x < m) part[threadIdx.x] += part[threadIdx.x + m];
        __syncthreads();
    }
    if (threadIdx.x == 0) tot[(k * 3 + c) * 6 + t] = part[0];
}

// ---- strips (ModeStrip) ----------------------------------------------------
//
// vblur_ref_strip / vblur_terms_strip: vblur_ref and vblur_terms over one
// strip's crop (vblur_tiled with STRIP). st holds 3·w·NS·6 floats, acc
// (the terms' only) 3·w·8·6 doubles.
extern "C" __global__ void __launch_bounds__(TB) vblur_ref_strip(const float* __restrict__ hb, float* __restrict__ mu, float* __restrict__ vr, float* __restrict__ st, int w, int h, int r0, int lo, int hi, int first) {
    vblur_tiled<2, true>(hb, mu, vr, nullptr, nullptr, nullptr, nullptr, nullptr, st, nullptr, w, h, blockIdx.y, blockIdx.x * 32, r0, lo, hi, first);
}

extern "C" __global__ void __launch_bounds__(TB) vblur_terms_strip(const float* __restrict__ hb, const float* __restrict__ img1, const float* __restrict__ mu1, const float* __restrict__ vr1, const float* __restrict__ img2, double* __restrict__ sums, float* __restrict__ st, double* __restrict__ acc, int w, int h, int r0, int lo, int hi, int first) {
    vblur_tiled<3, true>(hb, nullptr, nullptr, img1, mu1, vr1, img2, sums, st, acc, w, h, blockIdx.y, blockIdx.x * 32, r0, lo, hi, first);
}
