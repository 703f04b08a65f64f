// ColorVideoVDP kernels (pycvvdp 0.5.4 on still images, as cpu/cvvdp
// reproduces it): cpu/cvvdp's float32 operations in its order, its
// powers, logarithms and exponentials evaluated as it evaluates them (in
// double, from the same tables and polynomials, then rounded to float),
// and its float64 sums in its order (each row left to right, the rows top
// to bottom), so that the per-pixel values, the sums and so the scores are
// the CPU's bit for bit. The passes are those of wgsl/cvvdp_*.wgsl, with
// the separable pyramid passes fused: NVRTC runs with --fmad=false (no
// product is fused into a sum) and IEEE division, so plain C expressions
// are the reference's operations.
//
// The host prepends the constants (consts.go): the model's float32
// constants, the float64 constants and tables of the fast math, as exact
// hexadecimal literals. Per display, kb holds the RGB -> DKL matrix, the
// HLG parameters and every band's castleCSF rows (KB_* offsets).
//
// Planes: a level of the Gaussian pyramid is three w×h float planes, one
// after another in one buffer (channel c at c·w·h), and so are the band
// planes (the reference's R·S·gain and S, the distorted image's
// |T_p − R_p| and masker), except that a band's planes may hold a window
// of its rows: rows [y0, y0 + wh) as three w×wh planes (channel c at
// c·w·wh). A whole image passes y0 = 0, wh = h; strips (strip.go) pass
// windows, and the values are the same either way: the per-pixel work
// reads the whole pyramid levels, and the only vertical filter of a band
// (the masker's blur) reads rows within 6 of its own, which a window
// holds around the rows it owns. Pixel kernels run BX×BY blocks over a grid
// covering their plane (grid z: channel where the kernel says so); the
// row kernel one block of RB threads per row; the base-band and sum
// kernels one block of ST threads.

typedef unsigned char u8;
typedef unsigned long long u64;

// Launch geometry; the host uses the same numbers (kernels.go).
#define BX 32  // pixel kernels: block width
#define BY 8   // block height
#define RT 128 // rows: threads computing pixels, values per round
#define RB 160 // rows: threads per block (RT and a summing warp)
#define ST 256 // base_ref, base_dist, band_sums: threads

#define F32_MAX (0x1.fffffep127f)
#define F32_MIN_NORMAL (0x1p-126f)

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }

// ---------------------------------------------------------------------------
// cpu/cvvdp fastmath.go: log2 and exp2 in double from 128-entry tables and
// short polynomials, in its operation order.

__device__ __forceinline__ double log2f64(double x) {
    u64 b = (u64)__double_as_longlong(x);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    int j = (int)((b >> 45) & 127);
    double m = __longlong_as_double((long long)((b & ((1ULL << 52) - 1)) | (1023ULL << 52)));
    double r = m * LOG_INV[j] - 1.0;
    double ln = r * (1.0 + r * (D_NEG_HALF + r * (D_THIRD + r * (-0.25))));
    return ((double)e + LOG_C[j]) + ln * D_LOG2E;
}

// The fallbacks (arguments the model never produces from finite images)
// are CUDA's library functions, kept out of line so that the hot kernels
// carry one copy of them, not one per call site.
__device__ __noinline__ double exp2_slow(double t) { return exp2(t); }
__device__ __noinline__ float pow_slow(float x, float y) { return (float)pow((double)x, (double)y); }
__device__ __noinline__ float log10_slow(float x) { return (float)log10((double)x); }
__device__ __noinline__ double ldexp_slow(double v, int n) { return ldexp(v, n); }

__device__ __forceinline__ double exp2f64(double t) {
    if (!(t > -1000.0 && t < 1000.0)) return exp2_slow(t);
    double v0 = t * 128.0 + D_MAGIC;
    int k = (int)(unsigned)(u64)__double_as_longlong(v0);
    double kf = v0 - D_MAGIC;
    double f = (t - kf / 128.0) * D_LN2;
    int n = k >> 7;
    double p = 1.0 + f * (1.0 + f * (0.5 + f * (D_SIXTH + f * D_24TH)));
    double v = EXP2_T[k & 127] * p;
    if (n < -1022 || n > 1023) return ldexp_slow(v, n);
    return v * __longlong_as_double((long long)((u64)(n + 1023) << 52));
}

// pw is cpu/cvvdp's powf: x^y in float for x > 0 (the double pow
// otherwise, which the model never reaches with finite input).
__device__ __forceinline__ float pw(float x, float y) {
    if (!(x > 0.0f) || x > F32_MAX || x < F32_MIN_NORMAL) return pow_slow(x, y);
    return (float)exp2f64((double)y * log2f64((double)x));
}

// log10_ is cpu/cvvdp's log10fFast.
__device__ __forceinline__ float log10_(float x) {
    if (!(x >= F32_MIN_NORMAL) || x > F32_MAX) return log10_slow(x);
    return (float)(log2f64((double)x) / D_LOG2_10);
}

// exp10_ is cpu/cvvdp's exp10f.
__device__ __forceinline__ float exp10_(float v) { return (float)exp2f64((double)v * D_LOG2_10); }

// csf_log is csfInterp: log10 S from the band's row (32 values along the
// table's uniform log-luminance axis), clamped linear interpolation.
__device__ __forceinline__ float csf_log(const float* row, float logl) {
    float ind = (logl - LOGL0) / (LOGL1 - LOGL0) * 31.0f;
    ind = fminf(fmaxf(ind, 0.0f), 31.0f);
    int i0 = (int)ind;
    float frac = ind - (float)i0;
    int i1 = min(i0 + 1, 31);
    return row[i0] * (1.0f - frac) + row[i1] * frac;
}

// sq_term is safe_pow(d, 2).
__device__ __forceinline__ float sq_term(float d) {
    float t = d + EPS;
    return t * t - EPS * EPS;
}

// heat_pixel is heatPixel: the distortion map's value of one band pixel,
// a 4-norm over the weighted channels divided by the band's factor; ε^4
// and ε^¼ through the same pow as the terms they cancel.
__device__ __forceinline__ float heat_pixel(float d0, float d1, float d2, float w0, float w1, float w2, float mul) {
    float e4 = pw(EPS, 4.0f);
    float s = 0.0f;
    s = s + (pw(d0 * w0 + EPS, 4.0f) - e4);
    s = s + (pw(d1 * w1 + EPS, 4.0f) - e4);
    s = s + (pw(d2 * w2 + EPS, 4.0f) - e4);
    return (pw(s + EPS, 0.25f) - pw(EPS, 0.25f)) / mul;
}

// jod_loss is 10 − met2jod(q), the JOD lost at q.
__device__ __forceinline__ float jod_loss(float q) {
    if (q <= MET_QT) return JOD_LIN * q;
    return JOD_A * pw(q, JOD_EXP);
}

// ---------------------------------------------------------------------------
// Display model: raw samples -> DKL planes of level 0.

__device__ __forceinline__ int sample(const u8* raw, size_t off, int c, int bps) {
    if (bps == 2) {
        size_t o = off + 2 * (size_t)c;
        return ((int)raw[o] << 8) | (int)raw[o + 1];
    }
    return raw[off + c];
}

// hlg_c is hlgPixel's per-channel step for a pixel whose OOTF factor is k.
__device__ __forceinline__ float hlg_c(const float* kb, float c, float k) {
    float v = c * k;
    float span = kb[KB_HLG + 4], black = kb[KB_HLG + 5], refl = kb[KB_HLG + 6], expo = kb[KB_HLG + 7];
    if (expo != 1.0f) return span * fminf(fmaxf(v * expo, 0.0f), 1.0f) + black + refl;
    return span * v + black + refl;
}

__device__ __forceinline__ float hlg_k(const float* kb, float r, float g, float b) {
    float ys = kb[KB_HLG + 1] * r + kb[KB_HLG + 2] * g + kb[KB_HLG + 3] * b;
    return pw(ys, kb[KB_HLG]);
}

// unpack: rows [y0, y1) of the raw interleaved samples, whose buffer
// holds the image's rows from ry0 on (0 for a whole image; a strip's
// crop otherwise), the grid covering w × (y1 − y0), so that rows are
// converted as their bytes arrive ->
// level 0's DKL planes (w×h each) in g: each sample through the display's
// table (lut: 8-bit at 0, 16-bit at LUT16), HLG's OOTF per pixel, then
// the matrix; grey puts the luminance in all three channels. Alpha is
// ignored.
extern "C" __global__ void unpack(const u8* raw, const float* lut, const float* kb, int w, int h, int ry0, int y0, int y1, int stride, int channels, int bps, int gray, int hlg, float* g) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = y0 + blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= y1) return;
    size_t off = (size_t)(y - ry0) * (size_t)stride + (size_t)x * (size_t)(channels * bps);
    const float* t = lut + (bps == 2 ? LUT16 : 0);
    size_t n = (size_t)w * (size_t)h, i = (size_t)y * (size_t)w + (size_t)x;
    if (gray) {
        float v = t[sample(raw, off, 0, bps)];
        if (hlg) v = hlg_c(kb, v, hlg_k(kb, v, v, v));
        g[i] = v;
        g[n + i] = v;
        g[2 * n + i] = v;
        return;
    }
    float r = t[sample(raw, off, 0, bps)], gg = t[sample(raw, off, 1, bps)], b = t[sample(raw, off, 2, bps)];
    if (hlg) {
        float k = hlg_k(kb, r, gg, b);
        r = hlg_c(kb, r, k);
        gg = hlg_c(kb, gg, k);
        b = hlg_c(kb, b, k);
    }
    const float* m = kb + KB_DKL;
    g[i] = r * m[0] + gg * m[1] + b * m[2];
    g[n + i] = r * m[3] + gg * m[4] + b * m[5];
    g[2 * n + i] = r * m[6] + gg * m[7] + b * m[8];
}

// ---------------------------------------------------------------------------
// The pyramid (cpu/cvvdp pyramid.go): both separable passes in one kernel,
// the first pass's float values recomputed where the second needs them
// (the same operations, so the same bits as the CPU's intermediate plane).

__device__ __forceinline__ float kr_tap(int k) { return k == 0 ? KR2 : (k == 1 || k == -1) ? KR1 : KR0; }

// red_v is reduce's vertical pass: row i of the next level, column x of
// the plane p (w×h), with the first and last row's corrections (the last
// one following the parity of h).
__device__ __forceinline__ float red_v(const float* p, int w, int h, int i, int x) {
    int c = 2 * i;
    float out = 0.0f;
    for (int k = -2; k <= 2; k++) {
        int r = c + k;
        if (r < 0 || r >= h) continue;
        out = out + kr_tap(k) * p[(size_t)r * w + x];
    }
    if (i == 0) out = out + (p[x] * KR1 + p[(size_t)w + x] * KR0);
    if (i == (h + 1) / 2 - 1) {
        const float* last = p + (size_t)(h - 1) * w;
        if (h % 2 == 1) {
            out = out + (last[x] * KR1 + p[(size_t)(h - 2) * w + x] * KR0);
        } else {
            out = out + last[x] * KR0;
        }
    }
    return out;
}

// reduce: the next level (half(w) × half(h), channel blockIdx.z) of src
// (w×h) into dst. The last column's correction follows the parity of the
// ROWS h, as lpyr_dec.py's does.
extern "C" __global__ void reduce(const float* src, int w, int h, float* dst) {
    int j = blockIdx.x * BX + threadIdx.x;
    int i = blockIdx.y * BY + threadIdx.y;
    int w2 = (w + 1) / 2, h2 = (h + 1) / 2;
    if (j >= w2 || i >= h2) return;
    const float* p = src + (size_t)blockIdx.z * w * h;
    int c = 2 * j;
    float v[5];
    for (int k = -2; k <= 2; k++) {
        int x = c + k;
        v[k + 2] = (x >= 0 && x < w) ? red_v(p, w, h, i, x) : 0.0f;
    }
    float s;
    if (c >= 2 && c + 2 < w) {
        s = KR0 * v[0] + KR1 * v[1] + KR2 * v[2] + KR1 * v[3] + KR0 * v[4];
    } else {
        s = 0.0f;
        for (int k = -2; k <= 2; k++) {
            int x = c + k;
            if (x >= 0 && x < w) s = s + kr_tap(k) * v[k + 2];
        }
    }
    // Columns 0 and 1 are v[2] and v[3] for j = 0; the last column's
    // correction recomputes its two (the same values: v indexed at run
    // time would put v in local memory).
    if (j == 0) s = s + (v[2] * KR1 + v[3] * KR0);
    if (j == w2 - 1) {
        float last = red_v(p, w, h, i, w - 1);
        if (h % 2 == 1) {
            s = s + (last * KR1 + red_v(p, w, h, i, w - 2) * KR0);
        } else {
            s = s + last * KR0;
        }
    }
    dst[(size_t)blockIdx.z * w2 * h2 + (size_t)i * w2 + j] = s;
}

// exp_v is expand's vertical pass: row r of the finer level, column x of
// the coarser plane p (sw×sh), rows clamped into it.
__device__ __forceinline__ float exp_v(const float* p, int sw, int sh, int r, int x) {
    int m = r / 2;
    if (r % 2 == 0) {
        float a = p[(size_t)clampi(m - 1, 0, sh - 1) * sw + x];
        float b = p[(size_t)clampi(m, 0, sh - 1) * sw + x];
        float c = p[(size_t)clampi(m + 1, 0, sh - 1) * sw + x];
        return KE0 * a + KE2 * b + KE0 * c;
    }
    float a = p[(size_t)clampi(m, 0, sh - 1) * sw + x];
    float b = p[(size_t)clampi(m + 1, 0, sh - 1) * sw + x];
    return KE1 * a + KE1 * b;
}

// expand_at is the coarser plane p (sw×sh) enlarged, at (x, y) of the
// finer level.
__device__ __forceinline__ float expand_at(const float* p, int sw, int sh, int x, int y) {
    int m = x / 2;
    if (x % 2 == 0) {
        return KE0 * exp_v(p, sw, sh, y, clampi(m - 1, 0, sw - 1)) + KE2 * exp_v(p, sw, sh, y, clampi(m, 0, sw - 1)) +
               KE0 * exp_v(p, sw, sh, y, clampi(m + 1, 0, sw - 1));
    }
    return KE1 * exp_v(p, sw, sh, y, clampi(m, 0, sw - 1)) + KE1 * exp_v(p, sw, sh, y, clampi(m + 1, 0, sw - 1));
}

// ---------------------------------------------------------------------------
// Bands below the base band (cpu/cvvdp prepareBand, scoreBand). gb is the
// band's level (w×h), gn the next one (sw×sh): the background is the
// enlarged next level, its achromatic channel clamped at LMIN.

// ref_band (Prepare): S per channel from the band's castleCSF rows (kb,
// band) and the background, and the reference's R·S·gain, into rp and s,
// for the band's rows [y0, y0 + wh) (the grid covers w × wh; rp and s
// hold that window).
extern "C" __global__ void ref_band(const float* gb, const float* gn, const float* kb, int w, int h, int sw, int sh, int band, float mul, int y0, int wh, float* rp, float* s) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = y0 + blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= y0 + wh) return;
    size_t n = (size_t)w * h, sn = (size_t)sw * sh, i = (size_t)y * w + x;
    size_t wn = (size_t)w * wh, wi = (size_t)(y - y0) * w + x;
    float e[3];
    for (int c = 0; c < 3; c++) e[c] = expand_at(gn + c * sn, sw, sh, x, y);
    float lb = fmaxf(e[0], LMIN);
    float logl = log10_(lb);
    const float gain[3] = {GAIN0, GAIN1, GAIN2};
    for (int c = 0; c < 3; c++) {
        float v = csf_log(kb + KB_CSF + (3 * band + c) * 32, logl);
        float sc = exp10_(v) * SENS_CORR;
        float ct = fminf((gb[c * n + i] - e[c]) / lb, CMAX) * mul;
        s[c * wn + wi] = sc;
        rp[c * wn + wi] = ct * sc * gain[c];
    }
}

// dist_band (Score): the distorted image's T·S·gain with the reference's
// S, then |T_p − R_p| into du and the mutual masker min(|T_p|, |R_p|)
// into mm, for the band's rows [y0, y0 + wh) (the grid covers w × wh; du
// and mm hold that window). rp and s hold the band's rows [r0, r0 + rh):
// the whole band (a reference resident on the device) or the window (one
// uploaded per window).
extern "C" __global__ void dist_band(const float* gb, const float* gn, const float* rp, const float* s, int w, int h, int sw, int sh, float mul, int y0, int wh, int r0, int rh, float* du, float* mm) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = y0 + blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= y0 + wh) return;
    size_t n = (size_t)w * h, sn = (size_t)sw * sh, i = (size_t)y * w + x;
    size_t wn = (size_t)w * wh, wi = (size_t)(y - y0) * w + x;
    size_t rn = (size_t)w * rh, ri = (size_t)(y - r0) * w + x;
    float e[3];
    for (int c = 0; c < 3; c++) e[c] = expand_at(gn + c * sn, sw, sh, x, y);
    float lb = fmaxf(e[0], LMIN);
    const float gain[3] = {GAIN0, GAIN1, GAIN2};
    for (int c = 0; c < 3; c++) {
        float ct = fminf((gb[c * n + i] - e[c]) / lb, CMAX) * mul;
        float tp = ct * s[c * rn + ri] * gain[c];
        float r = rp[c * rn + ri];
        du[c * wn + wi] = fabsf(tp - r);
        mm[c * wn + wi] = fminf(fabsf(tp), fabsf(r));
    }
}

// reflect maps i into [0, n) as torch's 'reflect' padding does (n > 6).
__device__ __forceinline__ int reflect(int i, int n) {
    if (i < 0) return -i;
    if (i >= n) return 2 * (n - 1) - i;
    return i;
}

// pu13 is the 13-tap phase-uncertainty Gaussian over v[0..12] in
// hblurRow's order (the symmetric taps share a multiply).
__device__ __forceinline__ float pu13(const float* v) {
    return PU6 * v[6] + PU5 * (v[5] + v[7]) + PU4 * (v[4] + v[8]) + PU3 * (v[3] + v[9]) + PU2 * (v[2] + v[10]) +
           PU1 * (v[1] + v[11]) + PU0 * (v[0] + v[12]);
}

// blur_h: the masker mm (w×h, channel blockIdx.z) blurred along x into hb.
extern "C" __global__ void blur_h(const float* mm, int w, int h, float* hb) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= h) return;
    const float* row = mm + (size_t)blockIdx.z * w * h + (size_t)y * w;
    float v[13];
    for (int k = 0; k < 13; k++) v[k] = row[reflect(x + k - 6, w)];
    hb[(size_t)blockIdx.z * w * h + (size_t)y * w + x] = pu13(v);
}

// masked_d is the masking model at pixel (x, y) of a w×h band whose
// planes mb and du hold rows [y0, y0 + wh): the masker (mb, blurred along
// y too when blur, reflected at the band's edges, ×10^mask_c), safe_pow
// of it to q per channel, the cross-channel signal M, D =
// safe_pow(|T_p − R_p|, p) / (1 + M), softly clamped at 10^d_max
// (cpu/cvvdp vblurRow, maskedRow).
__device__ __forceinline__ void masked_d(const float* mb, const float* du, int w, int h, int y0, int wh, int blur, int x, int y, float* d) {
    size_t n = (size_t)w * wh, i = (size_t)(y - y0) * w + x;
    float sp[3], dv[3];
    const float q[3] = {MASK_Q0, MASK_Q1, MASK_Q2}, eq[3] = {EPS_Q0, EPS_Q1, EPS_Q2};
    // Unrolled, so that q and eq stay in registers (a loop indexing them
    // at run time would put them in local memory).
#pragma unroll
    for (int c = 0; c < 3; c++) {
        const float* p = mb + c * n;
        float m;
        if (blur) {
            float v[13];
            for (int k = 0; k < 13; k++) v[k] = p[(size_t)(reflect(y + k - 6, h) - y0) * w + x];
            m = pu13(v) * MASK_C;
        } else {
            m = p[i] * MASK_C;
        }
        sp[c] = pw(m + EPS, q[c]) - eq[c];
        dv[c] = pw(du[c * n + i] + EPS, MASK_P) - EPS_P;
    }
    float u0 = dv[0] / (1.0f + (sp[0] * XCM00 + sp[1] * XCM10 + sp[2] * XCM20));
    float u1 = dv[1] / (1.0f + (sp[0] * XCM01 + sp[1] * XCM11 + sp[2] * XCM21));
    float u2 = dv[2] / (1.0f + (sp[0] * XCM02 + sp[1] * XCM12 + sp[2] * XCM22));
    d[0] = D_MAX * u0 / (D_MAX + u0);
    d[1] = D_MAX * u1 / (D_MAX + u1);
    d[2] = D_MAX * u2 / (D_MAX + u2);
}

// rows: one block per row y = o0 + blockIdx.x of a w×h band whose planes
// mb and du hold rows [y0, y0 + wh) (the rows it owns, with the blur's 6
// rows of context either side where the band has them): the masking
// model per pixel, RT pixels at a time by the block's first RT threads
// (into shared memory), and the row's sums of safe_pow(D, 2) per channel
// in double left to right, added by the first thread of an extra warp
// (RB = RT + 32 threads) one chunk behind the others, so that the
// sequential sum overlaps the next chunk's arithmetic; into
// out[3·(off + y) + c]. With heat not null also the distortion map's
// values (hw: channel weights, mul: the band's factor) into heat (the
// whole band, w×h).
extern "C" __global__ void rows(const float* mb, const float* du, int w, int h, int y0, int wh, int o0, int blur, int off, float mul, float hw0, float hw1, float hw2, double* out, float* heat) {
    __shared__ float sq[2 * 3 * RT];
    int y = o0 + blockIdx.x;
    if (y >= h) return;
    int t = threadIdx.x;
    int chunks = (w + RT - 1) / RT;
    double a0 = 0.0, a1 = 0.0, a2 = 0.0;
    for (int k = 0; k <= chunks; k++) {
        if (t < RT) {
            int x = k * RT + t;
            if (k < chunks && x < w) {
                float d[3];
                masked_d(mb, du, w, h, y0, wh, blur, x, y, d);
                float* q = sq + (k & 1) * 3 * RT;
                for (int c = 0; c < 3; c++) q[c * RT + t] = sq_term(d[c]);
                if (heat) heat[(size_t)y * w + x] = heat_pixel(d[0], d[1], d[2], hw0, hw1, hw2, mul);
            }
        } else if (t == RT && k > 0) {
            const float* q = sq + ((k - 1) & 1) * 3 * RT;
            int m = min(RT, w - (k - 1) * RT);
            for (int j = 0; j < m; j++) {
                a0 += (double)q[j];
                a1 += (double)q[RT + j];
                a2 += (double)q[2 * RT + j];
            }
        }
        __syncthreads();
    }
    if (t == RT) {
        out[3 * (size_t)(off + y)] = a0;
        out[3 * (size_t)(off + y) + 1] = a1;
        out[3 * (size_t)(off + y) + 2] = a2;
    }
}

// band_sums: block b adds band b's row sums (rows from off_b = the rows of
// the bands before it; band heights halve from h0, rounding up) top to
// bottom into res[3b + c].
extern "C" __global__ void band_sums(const double* rows, int h0, double* res) {
    __shared__ double buf[3 * ST];
    int b = blockIdx.x;
    int off = 0, hb = h0;
    for (int k = 0; k < b; k++) {
        off += hb;
        hb = (hb + 1) / 2;
    }
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    for (int y0 = 0; y0 < hb; y0 += ST) {
        int m = min(ST, hb - y0);
        for (int k = threadIdx.x; k < 3 * m; k += ST) buf[k] = rows[3 * (size_t)(off + y0) + k];
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 0; k < m; k++) {
                s0 += buf[3 * k];
                s1 += buf[3 * k + 1];
                s2 += buf[3 * k + 2];
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        res[3 * b] = s0;
        res[3 * b + 1] = s1;
        res[3 * b + 2] = s2;
    }
}

// ---------------------------------------------------------------------------
// The base band (one block): the background is the mean of the achromatic
// channel clamped at LMIN, summed in double in pixel order (basebandBkg),
// the contrast min(g / background, CMAX).

// background returns the base band's background to every thread.
__device__ float background(const float* g, int n, float* buf, float* lbs) {
    double s = 0.0;
    for (int i0 = 0; i0 < n; i0 += ST) {
        int i = i0 + threadIdx.x;
        buf[threadIdx.x] = i < n ? fmaxf(g[i], LMIN) : 0.0f;
        __syncthreads();
        if (threadIdx.x == 0) {
            int m = min(ST, n - i0);
            for (int k = 0; k < m; k++) s += (double)buf[k];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) *lbs = (float)(s / (double)n);
    __syncthreads();
    return *lbs;
}

// base_ref (Prepare): the reference's S per channel into rb[0..2] (the
// CSF at the band's row for the background) and its contrast R into
// rb[4 + c·n + i].
extern "C" __global__ void base_ref(const float* g, const float* kb, int w, int h, int band, float* rb) {
    __shared__ float buf[ST];
    __shared__ float lbs;
    int n = w * h;
    float lb = background(g, n, buf, &lbs);
    if (threadIdx.x < 3) {
        float logl = log10_(lb);
        rb[threadIdx.x] = exp10_(csf_log(kb + KB_CSF + (3 * band + threadIdx.x) * 32, logl)) * SENS_CORR;
    }
    if (threadIdx.x == 3) rb[3] = 0.0f;
    for (int i = threadIdx.x; i < n; i += ST) {
        for (int c = 0; c < 3; c++) rb[4 + (size_t)c * n + i] = fminf(g[(size_t)c * n + i] / lb, CMAX);
    }
}

// base_dist (Score): D = |T − R|·S per channel; each row's sums of
// safe_pow(D, 2) in double left to right, the rows added top to bottom
// into res[3·band + c]; with heat not null the distortion map's values
// (hw, mul) into heat.
extern "C" __global__ void base_dist(const float* g, const float* rb, int w, int h, int band, float mul, float hw0, float hw1, float hw2, double* res, float* heat) {
    __shared__ float buf[3 * ST];
    __shared__ float lbs;
    int n = w * h;
    float lb = background(g, n, buf, &lbs);
    double t0 = 0.0, t1 = 0.0, t2 = 0.0;
    for (int y = 0; y < h; y++) {
        double a0 = 0.0, a1 = 0.0, a2 = 0.0;
        for (int x0 = 0; x0 < w; x0 += ST) {
            int x = x0 + threadIdx.x;
            if (x < w) {
                int i = y * w + x;
                float d[3];
                for (int c = 0; c < 3; c++) {
                    float t = fminf(g[(size_t)c * n + i] / lb, CMAX);
                    d[c] = fabsf(t - rb[4 + (size_t)c * n + i]) * rb[c];
                    buf[c * ST + threadIdx.x] = sq_term(d[c]);
                }
                if (heat) heat[i] = heat_pixel(d[0], d[1], d[2], hw0, hw1, hw2, mul);
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                int m = min(ST, w - x0);
                for (int k = 0; k < m; k++) {
                    a0 += (double)buf[k];
                    a1 += (double)buf[ST + k];
                    a2 += (double)buf[2 * ST + k];
                }
            }
            __syncthreads();
        }
        t0 += a0;
        t1 += a1;
        t2 += a2;
    }
    if (threadIdx.x == 0) {
        res[3 * band] = t0;
        res[3 * band + 1] = t1;
        res[3 * band + 2] = t2;
    }
}

// ---------------------------------------------------------------------------
// The distortion map (cpu/cvvdp heatmap): from the base band up, each
// level is the coarser one enlarged plus the level's own band values.

// heat_add: fine (w×h) += the coarser level (cw×ch) enlarged, in place.
extern "C" __global__ void heat_add(const float* coarse, int cw, int ch, int w, int h, float* fine) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= h) return;
    size_t i = (size_t)y * w + x;
    fine[i] = expand_at(coarse, cw, ch, x, y) + fine[i];
}

// heat_final: the finest level (fine plus the coarser level enlarged, or
// fine alone when coarse is null: a one-level pyramid) mapped to
// pycvvdp's raw heatmap 1 − met2jod(v)/10, written as jod_loss(v)/10
// (the formulation the WebGPU kernels need against a contracting
// compiler; it differs from the CPU's by the rounding of 10 − loss, at
// most ulp(10)/20 ≈ 5e-8), into out.
extern "C" __global__ void heat_final(const float* coarse, const float* fine, int cw, int ch, int w, int h, float* out) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= h) return;
    size_t i = (size_t)y * w + x;
    float v = fine[i];
    if (coarse) v = expand_at(coarse, cw, ch, x, y) + v;
    out[i] = jod_loss(v) / 10.0f;
}
