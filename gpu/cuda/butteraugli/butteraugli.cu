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
// buffer. Every kernel but reduce_* runs one thread per pixel of its
// level: blocks of 16×16 (pixel kernels, opsin, malta), 64×4 (rows_*) or
// 32×8 (cols_*), a grid covering w×h. No thread returns before a
// __syncthreads: the out-of-image threads of a block still help fill its
// tile, then leave. butteraugli_fast.cu has faster variants of opsin, the
// blurs and the Malta kernels (several outputs per thread), which the host
// runs unless told otherwise (kernels.go, EnvVariant).

typedef unsigned char u8;

// Tile geometry; the host launches with the same numbers (butteraugli.go).
#define PX 16           // pixel kernels: 16×16 blocks
#define RTX 64          // rows_*: block width
#define RTY 4           // rows_*: block height
#define CTX 32          // cols_*: block width
#define CTY 8           // cols_*: block height
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
// image; the 16×16 tile plus a 2-pixel mirrored halo goes to shared memory,
// blurred along x for every halo row, then along y, grouped as the CPU's
// blurSep5: centre*w0 + (±1 pair)*w1 + (±2 pair)*w2.

#define OHT 20  // tile side with the halo

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
    __shared__ float src[3][OHT * OHT];
    __shared__ float hor[3][OHT * PX];
    int li = threadIdx.y * PX + threadIdx.x;
    int x0 = blockIdx.x * PX - 2, y0 = blockIdx.y * PX - 2;
    for (int i = li; i < OHT * OHT; i += PX * PX) {
        int sx = mirror(x0 + i % OHT, w);
        int sy = mirror(y0 + i / OHT, h);
        size_t j = (size_t)sy * w + sx;
        src[0][i] = lin_r[j];
        src[1][i] = lin_g[j];
        src[2][i] = lin_b[j];
    }
    __syncthreads();
    for (int i = li; i < OHT * PX; i += PX * PX) {
        int b = (i / PX) * OHT + i % PX;
        for (int c = 0; c < 3; c++) hor[c][i] = sep5(src[c], b, 1);
    }
    __syncthreads();
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    int b = threadIdx.y * PX + threadIdx.x;
    float r0 = sep5(hor[0], b, PX) * intensity;
    float g0 = sep5(hor[1], b, PX) * intensity;
    float b0 = sep5(hor[2], b, PX) * intensity;
    int cc = (threadIdx.y + 2) * OHT + threadIdx.x + 2;
    float r1 = src[0][cc] * intensity, g1 = src[1][cc] * intensity, b1 = src[2][cc] * intensity;
    size_t i = (size_t)y * w + x;
    opsin_px(r0, g0, b0, r1, g1, b1, out_x + i, out_y + i, out_b + i);
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
// the image. It is its own function so that the multi-output kernels
// (butteraugli_fast.cu) can run the same arithmetic on a register window.
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

// rows_impl convolves one plane along x: a block of RTX×RTY outputs, each
// row's tile spanning the block's columns plus OFF on either side.
template <class K>
__device__ void rows_impl(const float* src, float* dst, int w, int h) {
    constexpr int RS = RTX + 2 * K::OFF;
    __shared__ float tile[RTY * RS];
    int y = blockIdx.y * RTY + threadIdx.y;
    int x0 = blockIdx.x * RTX - K::OFF;
    bool yin = y < h;
    for (int i = threadIdx.x; i < RS; i += RTX) {
        int xx = x0 + i;
        bool ok = yin && xx >= 0 && xx < w;
        tile[threadIdx.y * RS + i] = ok ? src[(size_t)y * w + xx] : 0.0f;
    }
    __syncthreads();
    int x = blockIdx.x * RTX + threadIdx.x;
    if (x >= w || !yin) return;
    dst[(size_t)y * w + x] = fir<K>(tile, threadIdx.y * RS + threadIdx.x + K::OFF, 1, x, w);
}

extern "C" __global__ void rows_lf(const float* src, float* dst, int w, int h) { rows_impl<KLF>(src, dst, w, h); }
extern "C" __global__ void rows_hf(const float* src, float* dst, int w, int h) { rows_impl<KHF>(src, dst, w, h); }
extern "C" __global__ void rows_uhf(const float* src, float* dst, int w, int h) { rows_impl<KUHF>(src, dst, w, h); }
extern "C" __global__ void rows_mask(const float* src, float* dst, int w, int h) { rows_impl<KMASK>(src, dst, w, h); }

// Column tiles: per plane, CTY + 2·OFF rows of CTX samples.
template <class K>
struct ColTile {
    static constexpr int ROWS = CTY + 2 * K::OFF;
    static constexpr int N = ROWS * CTX;
};

// col_load fills one plane's column tile (zeros outside the image).
template <class K>
__device__ __forceinline__ void col_load(float* tile, const float* src, int w, int h) {
    int x = blockIdx.x * CTX + threadIdx.x;
    int y0 = blockIdx.y * CTY - K::OFF;
    bool xin = x < w;
    for (int r = threadIdx.y; r < ColTile<K>::ROWS; r += CTY) {
        int yy = y0 + r;
        bool ok = xin && yy >= 0 && yy < h;
        tile[r * CTX + threadIdx.x] = ok ? src[(size_t)yy * w + x] : 0.0f;
    }
}

// col_fir is the column blur of this thread's output pixel (row y).
template <class K>
__device__ __forceinline__ float col_fir(const float* tile, int y, int h) {
    return fir<K>(tile, (threadIdx.y + K::OFF) * CTX + threadIdx.x, CTX, y, h);
}

// cols_lf: the XYB planes blurred along y (blurred along x into t0..t2)
// give LF; XYB minus LF is written over xyb for the next split. LF is then
// scaled per channel, B after mixing in Y (unscaled).
extern "C" __global__ void cols_lf(const float* t0, const float* t1, const float* t2, float* xyb0, float* xyb1,
                                   float* xyb2, float* lf0, float* lf1, float* lf2, int w, int h) {
    constexpr int N = ColTile<KLF>::N;
    __shared__ float tile[3 * N];
    col_load<KLF>(tile, t0, w, h);
    col_load<KLF>(tile + N, t1, w, h);
    col_load<KLF>(tile + 2 * N, t2, w, h);
    __syncthreads();
    int x = blockIdx.x * CTX + threadIdx.x, y = blockIdx.y * CTY + threadIdx.y;
    if (x >= w || y >= h) return;
    float bx = col_fir<KLF>(tile, y, h);
    float by = col_fir<KLF>(tile + N, y, h);
    float bb = col_fir<KLF>(tile + 2 * N, y, h);
    size_t i = (size_t)y * w + x;
    xyb0[i] = xyb0[i] - bx;
    xyb1[i] = xyb1[i] - by;
    xyb2[i] = xyb2[i] - bb;
    lf0[i] = bx * 33.832837186260f;
    lf1[i] = by * 14.458268100570f;
    lf2[i] = (-0.362267051518f * by + bb) * 49.87984651440f;
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
    int x = blockIdx.x * CTX + threadIdx.x, y = blockIdx.y * CTY + threadIdx.y;
    if (x >= w || y >= h) return;
    float bx = col_fir<KHF>(tile, y, h);
    float by = col_fir<KHF>(tile + N, y, h);
    float bb = col_fir<KHF>(tile + 2 * N, y, h);
    size_t i = (size_t)y * w + x;
    float hx = res0[i] - bx;
    float hy = res1[i] - by;
    mf0[i] = remove_range(0.29f, bx);
    mf1[i] = amplify_range(0.1f, by);
    mf2[i] = bb;
    float s = 46.0f / (hy * hy + 46.0f) * SUPPRESS_OMS + 0.653020556257f;
    res0[i] = s * hx;
    res1[i] = hy;
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
    int x = blockIdx.x * CTX + threadIdx.x, y = blockIdx.y * CTY + threadIdx.y;
    if (x >= w || y >= h) return;
    float bx = col_fir<KUHF>(tile, y, h);
    float by = col_fir<KUHF>(tile + N, y, h);
    size_t i = (size_t)y * w + x;
    float ux = hf0[i] - bx;
    out0[i] = remove_range(1.5f, bx);
    hf0[i] = remove_range(0.04f, ux);
    float hv = maximum_clamp(28.4691806922f, by);
    float uv = maximum_clamp(5.19175294647f, hf1[i] - hv);
    hf1[i] = uv * 2.69313763794f;
    out1[i] = amplify_range(0.132f, hv * 2.155f);
}

// cols_mask: the masking activity's column blur, no pointwise step.
extern "C" __global__ void cols_mask(const float* t0, float* dst, int w, int h) {
    constexpr int N = ColTile<KMASK>::N;
    __shared__ float tile[N];
    col_load<KMASK>(tile, t0, w, h);
    __syncthreads();
    int x = blockIdx.x * CTX + threadIdx.x, y = blockIdx.y * CTY + threadIdx.y;
    if (x >= w || y >= h) return;
    dst[(size_t)y * w + x] = col_fir<KMASK>(tile, y, h);
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
// Malta filters. A 16×16 output tile with a 4-pixel halo of the three
// weighted difference images (UHF, HF, MF of one channel) is built in
// shared memory (outside the image the difference is 0). Each output sums
// the squared sums of 16 line segments through its pixel: 7 to 9
// contiguous samples on the UHF difference (malta_hf), 5 samples at every
// other pixel on the HF and MF differences (malta_lf), grouped as the CPU
// reference groups them.

#define MT 24          // tile side with the halo
#define MT_N (MT * MT)

// The filters read the tile through S with the tile's row stride ST (a
// template parameter: the 16×16 kernels' tiles are MT wide, the column
// kernels' of butteraugli_fast.cu wider).
#define S(r, c) t[(r) * ST + (c)]

__device__ __forceinline__ float sum5(float a, float b, float c, float d, float e) { return (a + b) + (c + (d + e)); }

__device__ __forceinline__ float sum7(float a, float b, float c, float d, float e, float f, float g) {
    return (a + b) + (c + ((d + e) + (f + g)));
}

__device__ __forceinline__ float sum9(float a, float b, float c, float d, float e, float f, float g, float h, float i) {
    return ((a + b) + (c + d)) + ((e + f) + (g + h)) + i;
}

// malta_lf: t points at the top-left sample of the 9×9 neighbourhood.
template <int ST>
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
template <int ST>
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

// malta_tile fills the three difference tiles (UHF, HF, MF) of this block
// from reference (…0) and distorted (…1) planes, with channel weights W.
#define MALTA_TILE(mt, u0, u1, h0, h1, m0, m1, W)                                          \
    do {                                                                                   \
        int li_ = threadIdx.y * PX + threadIdx.x;                                          \
        int bx_ = blockIdx.x * PX - 4, by_ = blockIdx.y * PX - 4;                          \
        for (int k = li_; k < MT_N; k += PX * PX) {                                        \
            int xx = bx_ + k % MT, yy = by_ + k / MT;                                      \
            float du = 0.0f, dh = 0.0f, dm = 0.0f;                                         \
            if (xx >= 0 && xx < w && yy >= 0 && yy < h) {                                  \
                size_t j = (size_t)yy * w + xx;                                            \
                du = malta_diff(u0[j], u1[j], MW_UHF_##W##_N, MW_UHF_##W##_GT, MW_UHF_##W##_LT); \
                dh = malta_diff(h0[j], h1[j], MW_HF_##W##_N, MW_HF_##W##_GT, MW_HF_##W##_LT);    \
                dm = malta_diff(m0[j], m1[j], MW_MF_##W##_N, MW_MF_##W##_GT, MW_MF_##W##_LT);    \
            }                                                                              \
            mt[k] = du;                                                                    \
            mt[MT_N + k] = dh;                                                             \
            mt[2 * MT_N + k] = dm;                                                         \
        }                                                                                  \
    } while (0)

// malta_x: the AC terms of channel X (Malta sums, asymmetric HF term, MF
// term) into ac0 and the MF term of B into ac2.
extern "C" __global__ void malta_x(const float* u0, const float* u1, const float* h0, const float* h1,
                                   const float* m0, const float* m1, const float* mb0, const float* mb1,
                                   float* ac0, float* ac2, int w, int h) {
    __shared__ float mt[3 * MT_N];
    MALTA_TILE(mt, u0, u1, h0, h1, m0, m1, X);
    __syncthreads();
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    int b = threadIdx.y * MT + threadIdx.x;
    float ms = malta_hf<MT>(mt + b) + malta_lf<MT>(mt + MT_N + b) + malta_lf<MT>(mt + 2 * MT_N + b);
    size_t i = (size_t)y * w + x;
    float a = asym_l2(h0[i], h1[i], ASYM_X, ASYM_X, ms);
    float d = m0[i] - m1[i];
    ac0[i] = d * d * L2MF_X + a;
    d = mb0[i] - mb1[i];
    ac2[i] = d * d * L2MF_B;
}

// malta_y: the AC terms of channel Y (Malta sums, asymmetric HF term, MF
// term) plus the masking-activity term, into ac1.
extern "C" __global__ void malta_y(const float* u0, const float* u1, const float* h0, const float* h1,
                                   const float* m0, const float* m1, const float* act0, const float* act1,
                                   float* ac1, int w, int h) {
    __shared__ float mt[3 * MT_N];
    MALTA_TILE(mt, u0, u1, h0, h1, m0, m1, Y);
    __syncthreads();
    int x = px_x(), y = px_y();
    if (x >= w || y >= h) return;
    int b = threadIdx.y * MT + threadIdx.x;
    float ms = malta_hf<MT>(mt + b) + malta_lf<MT>(mt + MT_N + b) + malta_lf<MT>(mt + 2 * MT_N + b);
    size_t i = (size_t)y * w + x;
    float a = asym_l2(h0[i], h1[i], ASYM_Y, ASYM_Y, ms);
    float d = m0[i] - m1[i];
    float v = d * d * L2MF_Y + a;
    d = act0[i] - act1[i];
    v += 10.0f * d * d;
    ac1[i] = v;
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
