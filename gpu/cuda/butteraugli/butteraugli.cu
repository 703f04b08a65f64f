// Butteraugli kernels (libjxl v0.12.0's butteraugli, as cpu/butteraugli
// reproduces it): the float32 operations of the CPU reference in its
// order, and double exactly where it uses double (alpha compositing, the
// Malta half-open terms, the mask curves, the sub-level mix, the power
// sums). The pass structure is that of the WGSL kernels
// (wgsl/butteraugli_*.wgsl). Compiled by NVRTC with --fmad=false, so no
// product is fused into a sum (the reference rounds every product).
//
// The host prepends the constants (consts.go): MIXi, GAMMA_MUL, ...,
// OFF_<blur> radii, the taps KF_<blur> (raw) and KH_<blur> (normalised,
// outermost first) as __constant__ tables.
//
// Plane layout: a w×h plane is w*h floats, row-major, each its own
// buffer. The pixel kernels (unpack, subsample, mask_pre, erode, combine)
// run one thread per pixel in 16×16 blocks, and so does the LF blur pair
// (rows_lf: 64×4, cols_lf: 32×8). opsin, the other blurs and the Malta
// kernels compute several outputs per thread, from tiles shaped for it
// (their sections give the geometry); every output is computed by the
// same function, hence the same float operations in the same order, as
// in a one-output-per-thread kernel. reduce_* reduce the map. The grids
// cover w×h. No thread returns before a __syncthreads: the out-of-image
// threads of a block still help fill its tile, then leave. The host
// launches with the same numbers (kernels.go).
//
// Why several outputs per thread (16 MP on an H200; one plane is 64 MiB,
// ~17 µs of HBM at 4 TB/s; an SM serves one 128-byte shared-memory
// wavefront a clock), against the one-output-per-thread kernels these
// replaced (0.95 ms less kernel time a 16 MP score, 5.92 ms to 4.98):
//
//   - Malta in 16×16 blocks is bound by shared-memory bandwidth: 159
//     loads per output (after the compiler merges repeats), and a warp
//     (two rows of 16 in a 24-wide tile) hits 8 banks twice, so every
//     load is 2 wavefronts: 318 per warp, ~0.8 ms a kernel at 132 SMs ×
//     1.98 GHz (measured 1.03-1.07 ms). Here a warp is one tile row of 32
//     (conflict-free) and each thread sums MCR = 4 outputs down its
//     column, so the loads the outputs share are made once (70 per
//     output) and the vertical pair sums two rows apart are added once.
//     The halo (tile samples per output, each three malta_diff with two
//     divisions and double arithmetic) drops from 2.25 to 1.56, and the
//     fill issues all of a thread's loads before its first difference.
//   - A separable blur with one output per thread reads its whole kernel
//     from shared memory per output (33 loads for LF) and keeps few bytes
//     in flight per thread (1.5 loads before the barrier, with at most
//     2048 threads an SM). Here each thread blurs 4 outputs from one
//     register window, rows_* read the window as float4 for 2 rows (9-10
//     loads in flight), and the column tiles are 4× taller (3-24 loads in
//     flight). The LF pair is the exception: written this way it measured
//     slower on the H200 at 16 MP (0.60 + 0.71 ms against 0.53 + 0.62),
//     so it keeps one output per thread.
//   - opsin: see its section.

typedef unsigned char u8;

// The pixel kernels' and the reduction's blocks; the other kernels' tile
// geometry is in their sections.
#define PX 16           // pixel kernels: 16×16 blocks
#define RB 256          // reduce_*: threads per block

// ---------------------------------------------------------------------------
// Shared helpers.

// remove_range: shrink towards zero by w.
__device__ __forceinline__ float remove_range(float w, float x) {
    if (x > w) return x - w;
    if (x < -w) return x + w;
    return 0.0f;
}

// amplify_range: double inside [-w, w], shift by w outside.
__device__ __forceinline__ float amplify_range(float w, float x) {
    if (x > w) return x + w;
    if (x < -w) return x - w;
    return x + x;
}

// maximum_clamp: compress values beyond ±m.
__device__ __forceinline__ float maximum_clamp(float m, float v) {
    if (v >= m) return (v - m) * 0.724216145665f + m;
    if (v < -m) return (v + m) * 0.724216145665f - m;
    return v;
}

__device__ __forceinline__ int px_x() { return blockIdx.x * PX + threadIdx.x; }
__device__ __forceinline__ int px_y() { return blockIdx.y * PX + threadIdx.y; }

// ---------------------------------------------------------------------------
// unpack: raw interleaved 8/16-bit (big-endian) sRGB samples -> linear RGB
// planes through the host's table (lut: 256 or 65536 entries). Gray is
// replicated. With blend, the pixel is composited onto the linear
// background bg as butteraugli_main does: straight alpha mixed on
// sRGB-encoded values with the exact curves (double), then decoded again.

__device__ __forceinline__ int sample_at(const u8* px, int c, int bps) {
    if (bps == 2) return ((int)px[2 * c] << 8) | (int)px[2 * c + 1];
    return (int)px[c];
}

__device__ double linear_to_srgb_exact(double v) {
    if (v <= 0.0) return 0.0;
    if (v >= 1.0) return 1.0;
    if (v <= 0.0031308) return v * 12.92;
    return pow(v, 1.0 / 2.4) * 1.055 - 0.055;
}

__device__ double srgb_to_linear_exact(double v) {
    if (v <= 0.0) return 0.0;
    if (v <= 0.04045) return v / 12.92;
    if (v >= 1.0) return 1.0;
    return pow((v + 0.055) / 1.055, 2.4);
}

__device__ float blend_one(float s, float a, float bgl, float bgs) {
    if (a <= 0.0f) return bgl;
    if (a >= 1.0f) return s;
    float fg = (float)((double)a * linear_to_srgb_exact((double)s));
    float b = (1.0f - a) * bgs;
    return (float)srgb_to_linear_exact((double)(fg + b));
}

extern "C" __global__ void unpack(const u8* raw, const float* lut, int w, int h, int stride, int channels,
                                  int bps, int blend, float bg, float* out_r, float* out_g, float* out_b) {
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    const u8* px = raw + (size_t)y * stride + (size_t)x * channels * bps;
    float r, g, b;
    if (channels <= 2) {
        r = lut[sample_at(px, 0, bps)];
        g = r;
        b = r;
    } else {
        r = lut[sample_at(px, 0, bps)];
        g = lut[sample_at(px, 1, bps)];
        b = lut[sample_at(px, 2, bps)];
    }
    if (blend) {
        float scale = bps == 2 ? 1.0f / 65535.0f : 1.0f / 255.0f;
        float a = (float)sample_at(px, channels - 1, bps) * scale;
        float bgs = (float)linear_to_srgb_exact((double)bg);
        r = blend_one(r, a, bg, bgs);
        g = blend_one(g, a, bg, bgs);
        b = blend_one(b, a, bg, bgs);
    }
    size_t i = (size_t)y * w + x;
    out_r[i] = r;
    out_g[i] = g;
    out_b[i] = b;
}

// ---------------------------------------------------------------------------
// subsample: 2×2 box of the three linear planes (source sw×sh) for the
// half-resolution level (w×h). Each sample times 0.25 is added in row
// order; an odd last column or row is doubled afterwards, as the CPU
// reference does.

extern "C" __global__ void subsample(const float* in_r, const float* in_g, const float* in_b, int sw, int sh,
                                     float* out_r, float* out_g, float* out_b, int w, int h) {
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    float ar = 0.0f, ag = 0.0f, ab = 0.0f;
    for (int dy = 0; dy < 2; dy++) {
        int sy = 2 * y + dy;
        if (sy >= sh) continue;
        for (int dx = 0; dx < 2; dx++) {
            int sx = 2 * x + dx;
            if (sx >= sw) continue;
            size_t j = (size_t)sy * sw + sx;
            ar += 0.25f * in_r[j];
            ag += 0.25f * in_g[j];
            ab += 0.25f * in_b[j];
        }
    }
    if ((sw & 1) != 0 && x == w - 1) {
        ar *= 2.0f;
        ag *= 2.0f;
        ab *= 2.0f;
    }
    if ((sh & 1) != 0 && y == h - 1) {
        ar *= 2.0f;
        ag *= 2.0f;
        ab *= 2.0f;
    }
    size_t i = (size_t)y * w + x;
    out_r[i] = ar;
    out_g[i] = ag;
    out_b[i] = ab;
}

// ---------------------------------------------------------------------------
// opsin: linear RGB -> butteraugli XYB. The sensitivity of each pixel comes
// from the image blurred with the 5-tap Gaussian whose borders mirror the
// image: the block's tile plus a 2-pixel mirrored halo goes to shared
// memory, is blurred along x for every tile row, then along y, grouped as
// the CPU's blurSep5: centre*w0 + (±1 pair)*w1 + (±2 pair)*w2.
//
// Blocks of OTX×OTY threads, each thread 2 outputs (rows 2ty, 2ty+1) of
// the block's OTX×OTH. A warp is one tile row (no bank conflicts: a 16×16
// block's warps span two rows of its 20-wide tile and hit 4 banks twice),
// the halo is 1.41 samples per output instead of 1.56, and the vertical
// pass reads 6 rows for 2 outputs instead of 10.

#define OTX 32               // block width (one warp per tile row)
#define OTY 8                // block height in threads
#define OTH (2 * OTY)        // output rows per block
#define OSW (OTX + 4)        // tile width with the mirrored halo
#define OSH (OTH + 4)        // tile height
#define OSN (OSW * OSH)
#define ONT (OTX * OTY)      // threads per block

__device__ __forceinline__ int mirror(int x, int n) {
    while (x < 0 || x >= n) {
        if (x < 0) {
            x = -x - 1;
        } else {
            x = 2 * n - 1 - x;
        }
    }
    return x;
}

__device__ __forceinline__ float log2_approx(float x) {
    int bits = __float_as_int(x);
    int e = (bits - 0x3f2aaaab) >> 23;
    float m = __int_as_float(bits - (int)((unsigned)e << 23)) - 1.0f;
    float num = (7.4245873327820566e-01f * m + 1.4287160470083755e+00f) * m + -1.8503833400518310e-06f;
    float den = (1.7409343003366853e-01f * m + 1.0096718572241148e+00f) * m + 9.9032814277590719e-01f;
    return num / den + (float)e;
}

__device__ __forceinline__ float gamma_hdr(float v) {
    if (v < 0.0f) v = 0.0f;
    return GAMMA_MUL * log2_approx(v + 9.9710635769299145f) + -23.16046239805755f;
}

__device__ __forceinline__ float sep5(const float* s, int b, int st) {
    return s[b + 2 * st] * OPSIN_W0 + (s[b + st] + s[b + 3 * st]) * OPSIN_W1 + (s[b] + s[b + 4 * st]) * OPSIN_W2;
}

// opsin_px writes one pixel's XYB from its blurred (r0, g0, b0) and own
// (r1, g1, b1) linear values, each already times the intensity.
__device__ __forceinline__ void opsin_px(float r0, float g0, float b0, float r1, float g1, float b1, float* ox,
                                         float* oy, float* ob) {
    float p0 = fmaxf(fmaxf(MIX0 * r0 + (MIX1 * g0 + (MIX2 * b0 + MIX3)), MIX3), 1e-4f);
    float p1 = fmaxf(fmaxf(MIX4 * r0 + (MIX5 * g0 + (MIX6 * b0 + MIX7)), MIX7), 1e-4f);
    float p2 = fmaxf(fmaxf(MIX8 * r0 + (MIX9 * g0 + (MIX10 * b0 + MIX11)), MIX11), 1e-4f);
    float s0 = fmaxf(gamma_hdr(p0) / p0, 1e-4f);
    float s1 = fmaxf(gamma_hdr(p1) / p1, 1e-4f);
    float s2 = fmaxf(gamma_hdr(p2) / p2, 1e-4f);
    float c0 = fmaxf((MIX0 * r1 + (MIX1 * g1 + (MIX2 * b1 + MIX3))) * s0, MIX3);
    float c1 = fmaxf((MIX4 * r1 + (MIX5 * g1 + (MIX6 * b1 + MIX7))) * s1, MIX7);
    float c2 = fmaxf((MIX8 * r1 + (MIX9 * g1 + (MIX10 * b1 + MIX11))) * s2, MIX11);
    *ox = c0 - c1;
    *oy = c0 + c1;
    *ob = c2;
}

extern "C" __global__ void opsin(const float* lin_r, const float* lin_g, const float* lin_b, int w, int h,
                                 float intensity, float* out_x, float* out_y, float* out_b) {
    __shared__ float src[3][OSN];
    __shared__ float hor[3][OSH * OTX];
    int li = threadIdx.y * OTX + threadIdx.x;
    int x0 = blockIdx.x * OTX - 2, y0 = blockIdx.y * OTH - 2;
#pragma unroll
    for (int k = 0; k < (OSN + ONT - 1) / ONT; k++) {
        int i = li + k * ONT;
        if (i < OSN) {
            int sx = mirror(x0 + i % OSW, w);
            int sy = mirror(y0 + i / OSW, h);
            size_t j = (size_t)sy * w + sx;
            src[0][i] = lin_r[j];
            src[1][i] = lin_g[j];
            src[2][i] = lin_b[j];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < (OSH * OTX + ONT - 1) / ONT; k++) {
        int i = li + k * ONT;
        if (i < OSH * OTX) {
            int b = (i / OTX) * OSW + i % OTX;
            for (int c = 0; c < 3; c++) hor[c][i] = sep5(src[c], b, 1);
        }
    }
    __syncthreads();
    int x = blockIdx.x * OTX + threadIdx.x, y = blockIdx.y * OTH + 2 * threadIdx.y;
    if (x >= w || y >= h) return;
    // The vertical pass from a window of the column's 6 rows.
    float v[3][6];
#pragma unroll
    for (int c = 0; c < 3; c++) {
#pragma unroll
        for (int k = 0; k < 6; k++) v[c][k] = hor[c][(2 * threadIdx.y + k) * OTX + threadIdx.x];
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (y + r >= h) break;
        float r0 = sep5(v[0], r, 1) * intensity;
        float g0 = sep5(v[1], r, 1) * intensity;
        float b0 = sep5(v[2], r, 1) * intensity;
        int cc = (2 * threadIdx.y + r + 2) * OSW + threadIdx.x + 2;
        float r1 = src[0][cc] * intensity, g1 = src[1][cc] * intensity, b1 = src[2][cc] * intensity;
        size_t i = (size_t)(y + r) * w + x;
        opsin_px(r0, g0, b0, r1, g1, b1, out_x + i, out_y + i, out_b + i);
    }
}

// ---------------------------------------------------------------------------
// Blurs: truncated-Gaussian FIRs, rows then columns, over tiles in shared
// memory. Where the whole kernel fits inside the image the taps are added
// in pairs (p-i, p+i) into four partial sums (pair i into sum i mod 4) and
// the result is centre + sum0 + sum1 + sum2 + sum3, the grouping of the CPU
// reference (and libjxl). Near the borders the kernel is cut off at the
// image edge and renormalised by the sum of the taps that remain, added in
// order. Samples outside the image are never read there (the tile holds 0).

struct KLF {
    static constexpr int OFF = OFF_LF;
    __device__ static float full(int i) { return KF_LF[i]; }
    __device__ static float half(int i) { return KH_LF[i]; }
};
struct KHF {
    static constexpr int OFF = OFF_HF;
    __device__ static float full(int i) { return KF_HF[i]; }
    __device__ static float half(int i) { return KH_HF[i]; }
};
struct KUHF {
    static constexpr int OFF = OFF_UHF;
    __device__ static float full(int i) { return KF_UHF[i]; }
    __device__ static float half(int i) { return KH_UHF[i]; }
};
struct KMASK {
    static constexpr int OFF = OFF_MASK;
    __device__ static float full(int i) { return KF_MASK[i]; }
    __device__ static float half(int i) { return KH_MASK[i]; }
};

// fir_in is the blur of the tile sample at index c along one axis (st is
// the index step between neighbours) where the whole kernel lies inside
// the image. It is its own function so that the multi-output kernels can
// run the same arithmetic on a register window.
template <class K>
__device__ __forceinline__ float fir_in(const float* t, int c, int st) {
    const int off = K::OFF;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
#pragma unroll
    for (int i = 0; i < off; i += 4) {
        int d = (off - i) * st;
        a0 = a0 + (t[c - d] + t[c + d]) * K::half(i);
        if (i + 1 < off) {
            d -= st;
            a1 = a1 + (t[c - d] + t[c + d]) * K::half(i + 1);
        }
        if (i + 2 < off) {
            d -= st;
            a2 = a2 + (t[c - d] + t[c + d]) * K::half(i + 2);
        }
        if (i + 3 < off) {
            d -= st;
            a3 = a3 + (t[c - d] + t[c + d]) * K::half(i + 3);
        }
    }
    return t[c] * K::half(off) + a0 + a1 + a2 + a3;
}

// fir_edge is the blur of a sample whose kernel is cut off by the image
// edge: p is the coordinate on the axis, n the extent.
template <class K>
__device__ float fir_edge(const float* t, int c, int st, int p, int n) {
    const int off = K::OFF;
    int lo = max(0, p - off);
    int hi = min(n - 1, p + off);
    float ws = 0.0f;
    for (int j = lo; j <= hi; j++) ws = ws + K::full(j - p + off);
    float scale = 1.0f / ws;
    float s = 0.0f;
    for (int j = lo; j <= hi; j++) s = s + t[c + (j - p) * st] * K::full(j - p + off);
    return s * scale;
}

// fir blurs the tile sample at index c along one axis: st is the index
// step between neighbours, p the coordinate on that axis, n the extent.
template <class K>
__device__ float fir(const float* t, int c, int st, int p, int n) {
    if (p >= K::OFF && p < n - K::OFF) return fir_in<K>(t, c, st);
    return fir_edge<K>(t, c, st, p, n);
}

// fir_call is fir as a call: the border blocks' path, kept out of line so
// that the unrolled outputs do not copy it (the code of the interior path
// stays small).
template <class K>
__device__ __noinline__ float fir_call(const float* t, int c, int st, int p, int n) {
    return fir<K>(t, c, st, p, n);
}

// ---------------------------------------------------------------------------
// The LF pair, one output per thread: rows_lf in blocks of LRX×LRY, each
// row's tile spanning the block's columns plus OFF on either side;
// cols_lf in blocks of LCX×LCY over tiles of LCY + 2·OFF rows of LCX
// samples per plane.

#define LRX 64          // rows_lf: block width
#define LRY 4           // rows_lf: block height
#define LCX 32          // cols_lf: block width
#define LCY 8           // cols_lf: block height

// rows_lf convolves one plane along x.
extern "C" __global__ void rows_lf(const float* src, float* dst, int w, int h) {
    constexpr int RS = LRX + 2 * KLF::OFF;
    __shared__ float tile[LRY * RS];
    int y = blockIdx.y * LRY + threadIdx.y;
    int x0 = blockIdx.x * LRX - KLF::OFF;
    bool yin = y < h;
    for (int i = threadIdx.x; i < RS; i += LRX) {
        int xx = x0 + i;
        bool ok = yin && xx >= 0 && xx < w;
        tile[threadIdx.y * RS + i] = ok ? src[(size_t)y * w + xx] : 0.0f;
    }
    __syncthreads();
    int x = blockIdx.x * LRX + threadIdx.x;
    if (x >= w || !yin) return;
    dst[(size_t)y * w + x] = fir<KLF>(tile, threadIdx.y * RS + threadIdx.x + KLF::OFF, 1, x, w);
}

// LF_ROWS and LF_N are cols_lf's tile rows and samples per plane.
#define LF_ROWS (LCY + 2 * KLF::OFF)
#define LF_N (LF_ROWS * LCX)

// lf_col_load fills one plane's cols_lf tile (zeros outside the image).
__device__ __forceinline__ void lf_col_load(float* tile, const float* src, int w, int h) {
    int x = blockIdx.x * LCX + threadIdx.x;
    int y0 = blockIdx.y * LCY - KLF::OFF;
    bool xin = x < w;
    for (int r = threadIdx.y; r < LF_ROWS; r += LCY) {
        int yy = y0 + r;
        bool ok = xin && yy >= 0 && yy < h;
        tile[r * LCX + threadIdx.x] = ok ? src[(size_t)yy * w + x] : 0.0f;
    }
}

// lf_col_fir is the column blur of this thread's output pixel (row y).
__device__ __forceinline__ float lf_col_fir(const float* tile, int y, int h) {
    return fir<KLF>(tile, (threadIdx.y + KLF::OFF) * LCX + threadIdx.x, LCX, y, h);
}

// cols_lf: the XYB planes blurred along y (blurred along x into t0..t2)
// give LF; XYB minus LF is written over xyb for the next split. LF is then
// scaled per channel, B after mixing in Y (unscaled).
extern "C" __global__ void cols_lf(const float* t0, const float* t1, const float* t2, float* xyb0, float* xyb1,
                                   float* xyb2, float* lf0, float* lf1, float* lf2, int w, int h) {
    constexpr int N = LF_N;
    __shared__ float tile[3 * N];
    lf_col_load(tile, t0, w, h);
    lf_col_load(tile + N, t1, w, h);
    lf_col_load(tile + 2 * N, t2, w, h);
    __syncthreads();
    int x = blockIdx.x * LCX + threadIdx.x, y = blockIdx.y * LCY + threadIdx.y;
    if (x >= w || y >= h) return;
    float bx = lf_col_fir(tile, y, h);
    float by = lf_col_fir(tile + N, y, h);
    float bb = lf_col_fir(tile + 2 * N, y, h);
    size_t i = (size_t)y * w + x;
    xyb0[i] = xyb0[i] - bx;
    xyb1[i] = xyb1[i] - by;
    xyb2[i] = xyb2[i] - bb;
    lf0[i] = bx * 33.832837186260f;
    lf1[i] = by * 14.458268100570f;
    lf2[i] = (-0.362267051518f * by + bb) * 49.87984651440f;
}

// ---------------------------------------------------------------------------
// The other row blurs (rows_hf, rows_uhf, rows_mask), 4 outputs per thread
// and row: blocks of RTX×RTY threads, thread tx of row ty blurs pixels
// 4tx…4tx+3 of the block's RTW columns in rows ty and ty+RTY (RTR rows:
// twice the loads in flight per thread before the barrier). The tile row
// starts P ≥ OFF columns left of the block (P a multiple of 4, so each
// thread's window is whole float4s: NV of them from tile column 4tx).

#define RTX 64           // block width in threads
#define RTY 4            // block height in threads
#define RTR 2            // image rows per thread row: ty, ty+RTY, …
#define RTQ 4            // outputs per thread and row, along x (one float4)
#define RTW (RTX * RTQ)  // outputs per block row
#define RTH (RTY * RTR)  // image rows per block

template <class K>
struct RowTile {
    static constexpr int P = (K::OFF + 3) & ~3;           // tile columns left of the block
    static constexpr int TW = RTW + 2 * P;                 // tile row width
    static constexpr int NV = (P + K::OFF + RTQ + 3) / 4;  // float4 in a thread's window
    static_assert(4 * (RTX - 1) + 4 * NV <= TW, "a window runs past its tile row");
};

// row_out blurs the thread's RTQ outputs of one tile row (image row y,
// first output column x) into dst.
template <class K>
__device__ __forceinline__ void row_out(const float* row, float* dst, int x, int y, int w) {
    using G = RowTile<K>;
    size_t i = (size_t)y * w + x;
    if (x >= K::OFF && x + RTQ - 1 < w - K::OFF) {
        float v[4 * G::NV];
        const float4* r4 = (const float4*)row + threadIdx.x;
#pragma unroll
        for (int k = 0; k < G::NV; k++) {
            float4 q = r4[k];
            v[4 * k] = q.x;
            v[4 * k + 1] = q.y;
            v[4 * k + 2] = q.z;
            v[4 * k + 3] = q.w;
        }
        float o[RTQ];
#pragma unroll
        for (int j = 0; j < RTQ; j++) o[j] = fir_in<K>(v, G::P + j, 1);
        if ((reinterpret_cast<size_t>(dst + i) & 15) == 0) {
            *(float4*)(dst + i) = make_float4(o[0], o[1], o[2], o[3]);
        } else {
#pragma unroll
            for (int j = 0; j < RTQ; j++) dst[i + j] = o[j];
        }
        return;
    }
    int c = G::P + threadIdx.x * RTQ;
#pragma unroll 1
    for (int j = 0; j < RTQ; j++) {
        if (x + j < w) dst[i + j] = fir<K>(row, c + j, 1, x + j, w);
    }
}

template <class K>
__device__ void rows_impl(const float* src, float* dst, int w, int h) {
    using G = RowTile<K>;
    __shared__ float4 tile4[RTH * G::TW / 4];
    float* tile = (float*)tile4;
    int x0 = blockIdx.x * RTW - G::P;
#pragma unroll
    for (int r = 0; r < RTR; r++) {
        int ty = threadIdx.y + r * RTY;
        int y = blockIdx.y * RTH + ty;
#pragma unroll
        for (int k = 0; k < (G::TW + RTX - 1) / RTX; k++) {
            int i = threadIdx.x + k * RTX;
            if (i < G::TW) {
                int xx = x0 + i;
                bool ok = y < h && xx >= 0 && xx < w;
                tile[ty * G::TW + i] = ok ? src[(size_t)y * w + xx] : 0.0f;
            }
        }
    }
    __syncthreads();
    int x = blockIdx.x * RTW + threadIdx.x * RTQ;
    if (x >= w) return;
#pragma unroll
    for (int r = 0; r < RTR; r++) {
        int ty = threadIdx.y + r * RTY;
        int y = blockIdx.y * RTH + ty;
        if (y < h) row_out<K>(tile + ty * G::TW, dst, x, y, w);
    }
}

extern "C" __global__ void rows_hf(const float* src, float* dst, int w, int h) { rows_impl<KHF>(src, dst, w, h); }
extern "C" __global__ void rows_uhf(const float* src, float* dst, int w, int h) { rows_impl<KUHF>(src, dst, w, h); }
extern "C" __global__ void rows_mask(const float* src, float* dst, int w, int h) { rows_impl<KMASK>(src, dst, w, h); }

// ---------------------------------------------------------------------------
// The other column blurs (cols_mf, cols_uhf, cols_mask), 4 outputs per
// thread: blocks of CTX×CTY threads, thread (tx, ty) blurs rows
// 4ty…4ty+3 of the block's CTH rows at column tx. The tile holds the
// block's columns over CTH + 2·OFF rows per plane.

#define CTX 32           // block width (one warp per tile row)
#define CTY 8            // block height in threads
#define CTR 4            // outputs per thread, down its column
#define CTH (CTY * CTR)  // output rows per block

template <class K>
struct ColTile {
    static constexpr int ROWS = CTH + 2 * K::OFF;
    static constexpr int N = ROWS * CTX;
};

// col_load fills one plane's column tile (zeros outside the image).
template <class K>
__device__ __forceinline__ void col_load(float* tile, const float* src, int w, int h) {
    int x = blockIdx.x * CTX + threadIdx.x;
    int y0 = blockIdx.y * CTH - K::OFF;
    bool xin = x < w;
#pragma unroll
    for (int k = 0; k < (ColTile<K>::ROWS + CTY - 1) / CTY; k++) {
        int r = threadIdx.y + k * CTY;
        if (r < ColTile<K>::ROWS) {
            int yy = y0 + r;
            bool ok = xin && yy >= 0 && yy < h;
            tile[r * CTX + threadIdx.x] = ok ? src[(size_t)yy * w + x] : 0.0f;
        }
    }
}

// col_fir blurs this thread's CTR outputs (rows y0…) into o: from a
// register window of the column when every kernel lies inside the image,
// else each by fir on the tile (an output below the image is 0, unused).
template <class K>
__device__ __forceinline__ void col_fir(const float* tile, int y0, int h, float* o) {
    int c = (threadIdx.y * CTR + K::OFF) * CTX + threadIdx.x;
    if (y0 >= K::OFF && y0 + CTR - 1 < h - K::OFF) {
        float v[CTR + 2 * K::OFF];
#pragma unroll
        for (int k = 0; k < CTR + 2 * K::OFF; k++) v[k] = tile[c + (k - K::OFF) * CTX];
#pragma unroll
        for (int j = 0; j < CTR; j++) o[j] = fir_in<K>(v, K::OFF + j, 1);
        return;
    }
#pragma unroll
    for (int j = 0; j < CTR; j++) o[j] = y0 + j < h ? fir_call<K>(tile, c + j * CTX, CTX, y0 + j, h) : 0.0f;
}

// cols_mf: the LF residual blurred along y (along x into t0..t2) is MF; the
// rest of X and Y (written over res0, res1) is HF. MF X loses its small
// values, MF Y gets them amplified, MF B is the blur itself; HF X is
// suppressed where HF Y is large.
extern "C" __global__ void cols_mf(const float* t0, const float* t1, const float* t2, float* res0, float* res1,
                                   float* mf0, float* mf1, float* mf2, int w, int h) {
    constexpr int N = ColTile<KHF>::N;
    __shared__ float tile[3 * N];
    col_load<KHF>(tile, t0, w, h);
    col_load<KHF>(tile + N, t1, w, h);
    col_load<KHF>(tile + 2 * N, t2, w, h);
    __syncthreads();
    int x = blockIdx.x * CTX + threadIdx.x, y0 = blockIdx.y * CTH + threadIdx.y * CTR;
    if (x >= w || y0 >= h) return;
    float bx[CTR], by[CTR], bb[CTR];
    col_fir<KHF>(tile, y0, h, bx);
    col_fir<KHF>(tile + N, y0, h, by);
    col_fir<KHF>(tile + 2 * N, y0, h, bb);
#pragma unroll
    for (int j = 0; j < CTR; j++) {
        if (y0 + j >= h) break;
        size_t i = (size_t)(y0 + j) * w + x;
        float hx = res0[i] - bx[j];
        float hy = res1[i] - by[j];
        mf0[i] = remove_range(0.29f, bx[j]);
        mf1[i] = amplify_range(0.1f, by[j]);
        mf2[i] = bb[j];
        float s = 46.0f / (hy * hy + 46.0f) * SUPPRESS_OMS + 0.653020556257f;
        res0[i] = s * hx;
        res1[i] = hy;
    }
}

// cols_uhf: HF blurred along y (along x into t0, t1) is the new HF (out0,
// out1); the rest (written over hf0, hf1) is UHF. X: both shrink towards
// zero. Y: both are clamped, then scaled (HF also amplified near zero).
extern "C" __global__ void cols_uhf(const float* t0, const float* t1, float* hf0, float* hf1, float* out0,
                                    float* out1, int w, int h) {
    constexpr int N = ColTile<KUHF>::N;
    __shared__ float tile[2 * N];
    col_load<KUHF>(tile, t0, w, h);
    col_load<KUHF>(tile + N, t1, w, h);
    __syncthreads();
    int x = blockIdx.x * CTX + threadIdx.x, y0 = blockIdx.y * CTH + threadIdx.y * CTR;
    if (x >= w || y0 >= h) return;
    float bx[CTR], by[CTR];
    col_fir<KUHF>(tile, y0, h, bx);
    col_fir<KUHF>(tile + N, y0, h, by);
#pragma unroll
    for (int j = 0; j < CTR; j++) {
        if (y0 + j >= h) break;
        size_t i = (size_t)(y0 + j) * w + x;
        float ux = hf0[i] - bx[j];
        out0[i] = remove_range(1.5f, bx[j]);
        hf0[i] = remove_range(0.04f, ux);
        float hv = maximum_clamp(28.4691806922f, by[j]);
        float uv = maximum_clamp(5.19175294647f, hf1[i] - hv);
        hf1[i] = uv * 2.69313763794f;
        out1[i] = amplify_range(0.132f, hv * 2.155f);
    }
}

// cols_mask: the masking activity's column blur, no pointwise step.
extern "C" __global__ void cols_mask(const float* t0, float* dst, int w, int h) {
    constexpr int N = ColTile<KMASK>::N;
    __shared__ float tile[N];
    col_load<KMASK>(tile, t0, w, h);
    __syncthreads();
    int x = blockIdx.x * CTX + threadIdx.x, y0 = blockIdx.y * CTH + threadIdx.y * CTR;
    if (x >= w || y0 >= h) return;
    float o[CTR];
    col_fir<KMASK>(tile, y0, h, o);
#pragma unroll
    for (int j = 0; j < CTR; j++) {
        if (y0 + j >= h) break;
        dst[(size_t)(y0 + j) * w + x] = o[j];
    }
}

// ---------------------------------------------------------------------------
// Visual masking.

// mask_pre: the companded high-frequency activity of one image (HF X, HF Y,
// UHF X, UHF Y), blurred afterwards by rows_mask + cols_mask.
extern "C" __global__ void mask_pre(const float* hfx, const float* hfy, const float* uhfx, const float* uhfy,
                                    float* out, int w, int h) {
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    size_t i = (size_t)y * w + x;
    float xd = (uhfx[i] + hfx[i]) * 2.5f;
    float yd = uhfy[i] * 0.4f + hfy[i] * 0.4f;
    float m = sqrtf(xd * xd + yd * yd);
    out[i] = sqrtf(6.19424080439f * fabsf(m) + MASK_BIAS) - MASK_SQRT_BIAS;
}

// store_min3 keeps the three smallest values seen, in order.
__device__ __forceinline__ void store_min3(float v, float& m0, float& m1, float& m2) {
    if (v < m2) {
        if (v < m0) {
            m2 = m1;
            m1 = m0;
            m0 = v;
        } else if (v < m1) {
            m2 = m1;
            m1 = v;
        } else {
            m2 = v;
        }
    }
}

__device__ __forceinline__ double mask_y(double d) {
    double c = 2.5485944793 / (0.451936922203 * d + 0.829591754942);
    double r = GLOBAL_SCALE * (1.0 + c);
    return r * r;
}

__device__ __forceinline__ double mask_dc_y(double d) {
    double c = 0.505054525019 / (3.87449418804 * d + 0.20025578522);
    double r = GLOBAL_SCALE * (1.0 + c);
    return r * r;
}

// erode (reference only): fuzzy erosion of the blurred activity (a mix of
// the three smallest among the pixel and its eight neighbours at distance
// 3), turned into the weights of the AC and DC error terms.
extern "C" __global__ void erode(const float* act, float* mac, float* mdc, int w, int h) {
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    size_t i = (size_t)y * w + x;
    size_t s3 = 3 * (size_t)w;
    float m0 = act[i];
    float m1 = 2.0f * m0;
    float m2 = m1;
    bool up = y >= 3, down = y + 3 < h;
    if (x >= 3) {
        store_min3(act[i - 3], m0, m1, m2);
        if (up) store_min3(act[i - s3 - 3], m0, m1, m2);
        if (down) store_min3(act[i + s3 - 3], m0, m1, m2);
    }
    if (x + 3 < w) {
        store_min3(act[i + 3], m0, m1, m2);
        if (up) store_min3(act[i - s3 + 3], m0, m1, m2);
        if (down) store_min3(act[i + s3 + 3], m0, m1, m2);
    }
    if (up) store_min3(act[i - s3], m0, m1, m2);
    if (down) store_min3(act[i + s3], m0, m1, m2);
    float e = 0.45f * m0 + 0.3f * m1 + 0.25f * m2;
    mac[i] = (float)mask_y((double)e);
    mdc[i] = (float)mask_dc_y((double)e);
}

// ---------------------------------------------------------------------------
// Malta filters. Each output sums the squared sums of 16 line segments
// through its pixel on three weighted difference images of one channel
// (outside the image the difference is 0): 7 to 9 contiguous samples on
// the UHF difference (malta_hf), 5 samples at every other pixel on the HF
// and MF differences (malta_lf), grouped as the CPU reference groups them.
//
// By columns: blocks of MCW×MCH threads, each thread MCR outputs down its
// column; the block's tile of each difference image (with the 4-pixel
// halo) is MCTW×MCTH in shared memory.

#define MCW 32                 // block width: one warp per tile row
#define MCH 8                  // block height in threads
#define MCR 4                  // outputs per thread, down its column
#define MCTW (MCW + 8)         // tile width with the halo
#define MCTH (MCH * MCR + 8)   // tile height with the halo
#define MCTN (MCTW * MCTH)

// The filters read the tile through S.
#define S(r, c) t[(r) * MCTW + (c)]

__device__ __forceinline__ float sum5(float a, float b, float c, float d, float e) { return (a + b) + (c + (d + e)); }

__device__ __forceinline__ float sum7(float a, float b, float c, float d, float e, float f, float g) {
    return (a + b) + (c + ((d + e) + (f + g)));
}

__device__ __forceinline__ float sum9(float a, float b, float c, float d, float e, float f, float g, float h, float i) {
    return ((a + b) + (c + d)) + ((e + f) + (g + h)) + i;
}

// malta_lf: t points at the top-left sample of the 9×9 neighbourhood.
__device__ __forceinline__ float malta_lf(const float* t) {
    float c = S(4, 4);
    float s = sum5(S(4, 0), S(4, 2), c, S(4, 6), S(4, 8));
    float r = s * s;
    s = sum5(S(0, 4), S(2, 4), c, S(6, 4), S(8, 4));
    r += s * s;
    s = sum5(S(1, 1), S(2, 2), c, S(6, 6), S(7, 7));
    r += s * s;
    s = sum5(S(1, 7), S(2, 6), c, S(6, 2), S(7, 1));
    r += s * s;
    s = sum5(S(0, 5), S(2, 5), c, S(6, 3), S(8, 3));
    r += s * s;
    s = sum5(S(0, 3), S(2, 3), c, S(6, 5), S(8, 5));
    r += s * s;
    s = sum5(S(3, 0), S(3, 2), c, S(5, 6), S(5, 8));
    r += s * s;
    s = sum5(S(5, 0), S(5, 2), c, S(3, 6), S(3, 8));
    r += s * s;
    s = sum5(S(1, 2), S(2, 3), c, S(6, 5), S(7, 6));
    r += s * s;
    s = sum5(S(1, 6), S(2, 5), c, S(6, 3), S(7, 2));
    r += s * s;
    s = sum5(S(2, 1), S(3, 2), c, S(5, 6), S(6, 7));
    r += s * s;
    s = sum5(S(2, 7), S(3, 6), c, S(5, 2), S(6, 1));
    r += s * s;
    s = sum5(S(6, 0), S(5, 2), c, S(3, 6), S(2, 8));
    r += s * s;
    s = sum5(S(2, 0), S(3, 2), c, S(5, 6), S(6, 8));
    r += s * s;
    s = sum5(S(0, 2), S(2, 3), c, S(6, 5), S(8, 6));
    r += s * s;
    s = sum5(S(0, 6), S(2, 5), c, S(6, 3), S(8, 2));
    r += s * s;
    return r;
}

// malta_hf: the dense filter; four segments are counted twice, the second
// time at the end, in the reference's order.
__device__ __forceinline__ float malta_hf(const float* t) {
    float c = S(4, 4);
    float s = sum9(S(4, 0), S(4, 1), S(4, 2), S(4, 3), c, S(4, 5), S(4, 6), S(4, 7), S(4, 8));
    float r = s * s;
    s = sum9(S(0, 4), S(1, 4), S(2, 4), S(3, 4), c, S(5, 4), S(6, 4), S(7, 4), S(8, 4));
    r += s * s;
    s = sum7(S(1, 1), S(2, 2), S(3, 3), c, S(5, 5), S(6, 6), S(7, 7));
    r += s * s;
    s = sum7(S(1, 7), S(2, 6), S(3, 5), c, S(5, 3), S(6, 2), S(7, 1));
    r += s * s;
    float a = sum9(S(0, 5), S(1, 5), S(2, 5), S(3, 4), c, S(5, 4), S(6, 3), S(7, 3), S(8, 3));
    r += a * a;
    float b = sum9(S(0, 3), S(1, 3), S(2, 3), S(3, 4), c, S(5, 4), S(6, 5), S(7, 5), S(8, 5));
    r += b * b;
    float e = sum9(S(3, 0), S(3, 1), S(3, 2), S(4, 3), c, S(4, 5), S(5, 6), S(5, 7), S(5, 8));
    r += e * e;
    float f = sum9(S(5, 0), S(5, 1), S(5, 2), S(4, 3), c, S(4, 5), S(3, 6), S(3, 7), S(3, 8));
    r += f * f;
    s = sum7(S(1, 2), S(2, 3), S(3, 3), c, S(5, 5), S(6, 5), S(7, 6));
    r += s * s;
    s = sum7(S(1, 6), S(2, 5), S(3, 5), c, S(5, 3), S(6, 3), S(7, 2));
    r += s * s;
    s = sum7(S(2, 1), S(3, 2), S(3, 3), c, S(5, 5), S(5, 6), S(6, 7));
    r += s * s;
    s = sum7(S(2, 7), S(3, 6), S(3, 5), c, S(5, 3), S(5, 2), S(6, 1));
    r += s * s;
    r += f * f;
    r += e * e;
    r += b * b;
    r += a * a;
    return r;
}

#undef S

// malta_diff is the weighted, asymmetric difference the filters read
// (norm1, weight of the symmetric term, weight of the half-open terms),
// the half-open terms in double as in the reference.
__device__ float malta_diff(float v0, float v1, float n1, float gt, float lt) {
    float absval = 0.5f * (fabsf(v0) + fabsf(v1));
    float den = n1 + absval;
    float d = gt / den * (v0 - v1);
    double s2 = (double)(lt / den);
    double f0 = (double)fabsf(v0);
    double small = 0.55 * f0;
    double big = 1.05 * f0;
    double w1 = (double)v1;
    if (v0 < 0.0f) {
        if (w1 > -small) {
            d = (float)((double)d - s2 * (w1 + small));
        } else if (w1 < -big) {
            d = (float)((double)d + s2 * (-w1 - big));
        }
    } else {
        if (w1 < small) {
            d = (float)((double)d + s2 * (small - w1));
        } else if (w1 > big) {
            d = (float)((double)d - s2 * (w1 - big));
        }
    }
    return d;
}

// asym_l2 adds to prev the weighted squared HF difference plus half-open
// penalties for a distorted value that shrank towards zero or overshot.
__device__ __forceinline__ float asym_l2(float v0, float v1, float wgt, float wlt, float prev) {
    float dd = v0 - v1;
    float total = dd * dd * wgt + prev;
    float f0 = fabsf(v0);
    float small = 0.4f * f0;
    float big = f0;
    float v = 0.0f;
    if (v0 < 0.0f) {
        if (v1 > -small) {
            v = v1 + small;
        } else if (v1 < -big) {
            v = -v1 - big;
        }
    } else {
        if (v1 < small) {
            v = small - v1;
        } else if (v1 > big) {
            v = v1 - big;
        }
    }
    return wlt * (v * v) + total;
}

// At most 80 registers a thread, so that 3 blocks fit an SM (their 60 KB
// of tiles too): 24 warps to hide the fill's loads and the sync. One
// macro, for the emulator's one-argument __launch_bounds__.
#define MALTA_BOUNDS MCW * MCH, 3

// MaltaW is one channel's weights of the three difference images
// (malta_diff's norm1, symmetric and half-open weights for UHF, HF, MF).
struct MaltaW {
    float un, ugt, ult, hn, hgt, hlt, mn, mgt, mlt;
};
#define MALTA_W(W)                                                                          \
    MaltaW {                                                                                \
        MW_UHF_##W##_N, MW_UHF_##W##_GT, MW_UHF_##W##_LT, MW_HF_##W##_N, MW_HF_##W##_GT,   \
            MW_HF_##W##_LT, MW_MF_##W##_N, MW_MF_##W##_GT, MW_MF_##W##_LT                  \
    }

// MCNI is the tile samples each thread fills.
#define MCNI ((MCTN + MCW * MCH - 1) / (MCW * MCH))

// malta_fill fills the three difference tiles (UHF, HF, MF; 0 outside the
// image) of the block whose tile starts at pixel (bx, by). Every load of
// the thread's MCNI samples is issued before the first difference is
// computed: one memory round trip per block instead of one per sample
// (the fill's registers are free: the sums need more).
__device__ __forceinline__ void malta_fill(float* mt, int bx, int by, int w, int h, const float* u0,
                                           const float* u1, const float* h0, const float* h1, const float* m0,
                                           const float* m1, MaltaW c) {
    int li = threadIdx.y * MCW + threadIdx.x;
    float r[MCNI][6];
    bool in[MCNI];
#pragma unroll
    for (int it = 0; it < MCNI; it++) {
        int k = li + it * (MCW * MCH);
        int xx = bx + k % MCTW, yy = by + k / MCTW;
        in[it] = k < MCTN && xx >= 0 && xx < w && yy >= 0 && yy < h;
#pragma unroll
        for (int q = 0; q < 6; q++) r[it][q] = 0.0f;
        if (in[it]) {
            size_t j = (size_t)yy * w + xx;
            r[it][0] = u0[j];
            r[it][1] = u1[j];
            r[it][2] = h0[j];
            r[it][3] = h1[j];
            r[it][4] = m0[j];
            r[it][5] = m1[j];
        }
    }
#pragma unroll
    for (int it = 0; it < MCNI; it++) {
        int k = li + it * (MCW * MCH);
        if (k >= MCTN) break;
        float du = 0.0f, dh = 0.0f, dm = 0.0f;
        if (in[it]) {
            du = malta_diff(r[it][0], r[it][1], c.un, c.ugt, c.ult);
            dh = malta_diff(r[it][2], r[it][3], c.hn, c.hgt, c.hlt);
            dm = malta_diff(r[it][4], r[it][5], c.mn, c.mgt, c.mlt);
        }
        mt[k] = du;
        mt[MCTN + k] = dh;
        mt[2 * MCTN + k] = dm;
    }
}

// malta_col sums the Malta filters of this thread's MCR outputs (b: the
// tile index of the first one's neighbourhood) into ms, each as
// malta_hf + malta_lf + malta_lf in that order.
__device__ __forceinline__ void malta_col(const float* mt, int b, float* ms) {
#pragma unroll
    for (int j = 0; j < MCR; j++) ms[j] = malta_hf(mt + b + j * MCTW);
#pragma unroll
    for (int j = 0; j < MCR; j++) ms[j] = ms[j] + malta_lf(mt + MCTN + b + j * MCTW);
#pragma unroll
    for (int j = 0; j < MCR; j++) ms[j] = ms[j] + malta_lf(mt + 2 * MCTN + b + j * MCTW);
}

// malta_x: the AC terms of channel X (Malta sums, asymmetric HF term, MF
// term) into ac0 and the MF term of B into ac2.
extern "C" __global__ void __launch_bounds__(MALTA_BOUNDS) malta_x(const float* u0, const float* u1, const float* h0,
                                                                   const float* h1, const float* m0, const float* m1,
                                                                   const float* mb0, const float* mb1, float* ac0,
                                                                   float* ac2, int w, int h) {
    __shared__ float mt[3 * MCTN];
    int bx = blockIdx.x * MCW, by = blockIdx.y * (MCH * MCR);
    malta_fill(mt, bx - 4, by - 4, w, h, u0, u1, h0, h1, m0, m1, MALTA_W(X));
    __syncthreads();
    int x = bx + threadIdx.x, y0 = by + threadIdx.y * MCR;
    if (x >= w || y0 >= h) return;
    float ms[MCR];
    malta_col(mt, threadIdx.y * MCR * MCTW + threadIdx.x, ms);
#pragma unroll
    for (int j = 0; j < MCR; j++) {
        if (y0 + j >= h) break;
        size_t i = (size_t)(y0 + j) * w + x;
        float a = asym_l2(h0[i], h1[i], ASYM_X, ASYM_X, ms[j]);
        float d = m0[i] - m1[i];
        ac0[i] = d * d * L2MF_X + a;
        d = mb0[i] - mb1[i];
        ac2[i] = d * d * L2MF_B;
    }
}

// malta_y: the AC terms of channel Y (Malta sums, asymmetric HF term, MF
// term) plus the masking-activity term, into ac1.
extern "C" __global__ void __launch_bounds__(MALTA_BOUNDS) malta_y(const float* u0, const float* u1, const float* h0,
                                                                   const float* h1, const float* m0, const float* m1,
                                                                   const float* act0, const float* act1, float* ac1,
                                                                   int w, int h) {
    __shared__ float mt[3 * MCTN];
    int bx = blockIdx.x * MCW, by = blockIdx.y * (MCH * MCR);
    malta_fill(mt, bx - 4, by - 4, w, h, u0, u1, h0, h1, m0, m1, MALTA_W(Y));
    __syncthreads();
    int x = bx + threadIdx.x, y0 = by + threadIdx.y * MCR;
    if (x >= w || y0 >= h) return;
    float ms[MCR];
    malta_col(mt, threadIdx.y * MCR * MCTW + threadIdx.x, ms);
#pragma unroll
    for (int j = 0; j < MCR; j++) {
        if (y0 + j >= h) break;
        size_t i = (size_t)(y0 + j) * w + x;
        float a = asym_l2(h0[i], h1[i], ASYM_Y, ASYM_Y, ms[j]);
        float d = m0[i] - m1[i];
        float v = d * d * L2MF_Y + a;
        d = act0[i] - act1[i];
        v += 10.0f * d * d;
        ac1[i] = v;
    }
}

// ---------------------------------------------------------------------------
// combine: the DC terms (squared LF differences, weighted, masked by the
// reference's DC weight) and the masked AC terms under a square root. With
// mode bit 0 (full resolution with a half level) the half-resolution map
// (sw wide) is blended in; with bit 1 (second alpha background) the map
// keeps the larger of this and the value already in dm.
extern "C" __global__ void combine(const float* ac0, const float* ac1, const float* ac2, const float* l0x,
                                   const float* l0y, const float* l0b, const float* l1x, const float* l1y,
                                   const float* l1b, const float* mdc, const float* mac, const float* sub,
                                   float* dm, int w, int h, int sw, int mode) {
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    size_t i = (size_t)y * w + x;
    float d = l0x[i] - l1x[i];
    float d0 = d * d * L2LF_X;
    d = l0y[i] - l1y[i];
    float d1 = d * d * L2LF_Y;
    d = l0b[i] - l1b[i];
    float d2 = d * d * L2LF_B;
    float md = mdc[i];
    float m = mac[i];
    float v = (d0 * md + d1 * md + d2 * md) + (ac0[i] * m + ac1[i] * m + ac2[i] * m);
    float out = sqrtf(v);
    if ((mode & 1) != 0) {
        out = (float)((double)out * SUPMIX) + 0.5f * sub[(size_t)(y >> 1) * sw + (x >> 1)];
    }
    if ((mode & 2) != 0) out = fmaxf(dm[i], out);
    dm[i] = out;
}

// ---------------------------------------------------------------------------
// Reduction of the map to its maximum and the power sums of libjxl's
// ComputeDistanceP, in double like the CPU reference: d^3, d^6, d^12 and,
// with p > 0, d^p, d^2p, d^4p (cube: p is 3, taken as d·d·d as the
// reference does). reduce_map: block g covers items [g·RB·per,
// (g+1)·RB·per), thread t the items t, t+RB, … of it, in that order, then
// a fixed tree over the block; one record of 8 doubles per block (max, the
// three cube sums, the three p sums, 0). reduce_partials: one block adds
// the records the same way. Nothing depends on scheduling: scores are
// bit-identical run to run.

__device__ void reduce_tree(double (*red)[RB], int li) {
    for (int st = RB / 2; st > 0; st >>= 1) {
        __syncthreads();
        if (li < st) {
            red[0][li] = fmax(red[0][li], red[0][li + st]);
            for (int q = 1; q < 7; q++) red[q][li] = red[q][li] + red[q][li + st];
        }
    }
    __syncthreads();
}

extern "C" __global__ void reduce_map(const float* dm, int n, int per, double p, int cube, double* part) {
    __shared__ double red[7][RB];
    int li = threadIdx.x;
    double r[7] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    size_t base = (size_t)blockIdx.x * RB * per;
    for (int k = 0; k < per; k++) {
        size_t idx = base + (size_t)k * RB + li;
        if (idx >= (size_t)n) break;
        double d = (double)dm[idx];
        r[0] = fmax(r[0], d);
        double e = d * (d * d);
        r[1] += e;
        e = e * e;
        r[2] += e;
        e = e * e;
        r[3] += e;
        if (p > 0.0) {
            double q = cube ? d * (d * d) : (d > 0.0 ? pow(d, p) : 0.0);
            r[4] += q;
            q = q * q;
            r[5] += q;
            q = q * q;
            r[6] += q;
        }
    }
    for (int q = 0; q < 7; q++) red[q][li] = r[q];
    reduce_tree(red, li);
    if (li == 0) {
        for (int q = 0; q < 7; q++) part[(size_t)blockIdx.x * 8 + q] = red[q][0];
        part[(size_t)blockIdx.x * 8 + 7] = 0.0;
    }
}

extern "C" __global__ void reduce_partials(const double* part, int groups, double* out) {
    __shared__ double red[7][RB];
    int li = threadIdx.x;
    double r[7] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int g = li; g < groups; g += RB) {
        r[0] = fmax(r[0], part[(size_t)g * 8]);
        for (int q = 1; q < 7; q++) r[q] += part[(size_t)g * 8 + q];
    }
    for (int q = 0; q < 7; q++) red[q][li] = r[q];
    reduce_tree(red, li);
    if (li == 0) {
        for (int q = 0; q < 7; q++) out[q] = red[q][0];
        out[7] = 0.0;
    }
}
