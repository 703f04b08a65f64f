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
// as libjxl does: row 0's pair, then row 1's two samples.
extern "C" __global__ void first_scale(const u8* __restrict__ raw, int w, int h, int stride, int ch, int bps, int blend, float bg,
                                       float* __restrict__ xyb, float* __restrict__ lin1, int w1, int h1) {
    const Fmt f = {w, h, stride, ch, bps, blend, bg};
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= w1 || oy >= h1) return;
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

// ---- recursive Gaussian, horizontal pass --------------------------------

// The signals blurred: for the reference (MODE 0) a and a²; for a score
// (MODE 1) b, b² and a·b, where a is the reference's positive XYB and b
// the distorted image's. Products are rounded to float32 before the blur,
// as the CPU forms them into a row buffer.
template <int MODE>
__device__ __forceinline__ float sig(const float* a, const float* b, int s, int i) {
    if (MODE == 0) {
        float v = a[i];
        return s == 0 ? v : v * v;
    }
    float v = b[i];
    if (s == 0) return v;
    if (s == 1) return v * v;
    return a[i] * v;
}

// hblur: one thread per (row, channel); libjxl's horizontal filter: single
// steps near the borders, four outputs per step in the interior from the
// powers of the recurrence (MI/MP/MP2), each with libjxl's rounding.
template <int MODE, int NS>
__device__ void hblur_row(const float* a, const float* b, float* out, size_t n, int w) {
    const int N = RADIUS;
    float p1[NS][3], p2[NS][3];
    for (int s = 0; s < NS; s++)
        for (int k = 0; k < 3; k++) p1[s][k] = p2[s][k] = 0.0f;
    const float mi[3][4] = {{MI_0_0, MI_0_1, MI_0_2, MI_0_3}, {MI_1_0, MI_1_1, MI_1_2, MI_1_3}, {MI_2_0, MI_2_1, MI_2_2, MI_2_3}};
    const float mp[3][4] = {{MP_0_0, MP_0_1, MP_0_2, MP_0_3}, {MP_1_0, MP_1_1, MP_1_2, MP_1_3}, {MP_2_0, MP_2_1, MP_2_2, MP_2_3}};
    const float mp2[3][4] = {{MP2_0_0, MP2_0_1, MP2_0_2, MP2_0_3}, {MP2_1_0, MP2_1_1, MP2_1_2, MP2_1_3}, {MP2_2_0, MP2_2_1, MP2_2_2, MP2_2_3}};

    int x = -N + 1;
    const int firstAligned = (N + 1 + 3) / 4 * 4;
    // step: one output at a time, with bounds checks.
    auto step = [&](int nn) {
        int l = nn - N - 1, r = nn + N - 1;
        for (int s = 0; s < NS; s++) {
            float lv = l >= 0 ? sig<MODE>(a, b, s, l) : 0.0f;
            float rv = r < w ? sig<MODE>(a, b, s, r) : 0.0f;
            float sum = lv + rv;
            float o[3];
            for (int k = 0; k < 3; k++) {
                float v = sum * mi[k][0];
                v = fmaf(mp2[k][0], p2[s][k], v);
                v = fmaf(mp[k][0], p1[s][k], v);
                p2[s][k] = p1[s][k];
                p1[s][k] = v;
                o[k] = v;
            }
            if (nn >= 0) out[s * n + nn] = o[0] + (o[1] + o[2]);
        }
    };
    for (int end = min(firstAligned, w); x < end; x++) step(x);
    for (; x < w - N + 1 - 3; x += 4) {
        for (int s = 0; s < NS; s++) {
            float f0 = sig<MODE>(a, b, s, x - N - 1) + sig<MODE>(a, b, s, x + N - 1);
            float f1 = sig<MODE>(a, b, s, x - N) + sig<MODE>(a, b, s, x + N);
            float f2 = sig<MODE>(a, b, s, x - N + 1) + sig<MODE>(a, b, s, x + N + 1);
            float f3 = sig<MODE>(a, b, s, x - N + 2) + sig<MODE>(a, b, s, x + N + 2);
            float q[3][4];
#pragma unroll
            for (int k = 0; k < 3; k++) {
                float a0 = f0 * mi[k][0], a1 = f0 * mi[k][1], a2 = f0 * mi[k][2], a3 = f0 * mi[k][3];
                a1 = fmaf(mi[k][0], f1, a1);
                a2 = fmaf(mi[k][1], f1, a2);
                a3 = fmaf(mi[k][2], f1, a3);
                a2 = fmaf(mi[k][0], f2, a2);
                a3 = fmaf(mi[k][1], f2, a3);
                a3 = fmaf(mi[k][0], f3, a3);
                q[k][0] = fmaf(mp[k][0], p1[s][k], fmaf(mp2[k][0], p2[s][k], a0));
                q[k][1] = fmaf(mp[k][1], p1[s][k], fmaf(mp2[k][1], p2[s][k], a1));
                q[k][2] = fmaf(mp[k][2], p1[s][k], fmaf(mp2[k][2], p2[s][k], a2));
                q[k][3] = fmaf(mp[k][3], p1[s][k], fmaf(mp2[k][3], p2[s][k], a3));
                p2[s][k] = q[k][2];
                p1[s][k] = q[k][3];
            }
            // libjxl adds filter 0 to (filter 1 + filter 2).
#pragma unroll
            for (int j = 0; j < 4; j++) out[s * n + x + j] = q[0][j] + (q[1][j] + q[2][j]);
        }
    }
    for (; x < w; x++) step(x);
}

// hblur_ref: rows × 3 channels; out holds per channel c the planes
// blur_h(a) and blur_h(a²) at (2c+s)·n.
extern "C" __global__ void hblur_ref(const float* __restrict__ a, float* __restrict__ out, int w, int h) {
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (y >= h) return;
    size_t n = (size_t)w * h, o = (size_t)y * w;
    hblur_row<0, 2>(a + c * n + o, nullptr, out + 2 * c * n + o, n, w);
}

// hblur_dist: as hblur_ref for b, b², a·b at (3c+s)·n.
extern "C" __global__ void hblur_dist(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int w, int h) {
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (y >= h) return;
    size_t n = (size_t)w * h, o = (size_t)y * w;
    hblur_row<1, 3>(a + c * n + o, b + c * n + o, out + 3 * c * n + o, n, w);
}

// ---- recursive Gaussian, vertical pass ----------------------------------

// One column step of the plain recurrence for one signal: the input sum
// sv of the samples at distance RADIUS above and below, three filters, y
// = n2·sv − (d1·y[n−1] + y[n−2]) with one rounding per bracket.
struct VState { float a[3], b[3]; };

__device__ __forceinline__ float vstep(VState& st, float sv) {
    const float n2[3] = {N2_0, N2_1, N2_2}, d1[3] = {D1_0, D1_1, D1_2};
    float y[3];
    for (int k = 0; k < 3; k++) {
        y[k] = fmaf(n2[k], sv, -fmaf(d1[k], st.a[k], st.b[k]));
        st.b[k] = st.a[k];
        st.a[k] = y[k];
    }
    return y[0] + (y[1] + y[2]);
}

// vblur_ref: one thread per (column, channel): mu = blur(a) and
// vr = blur(a²) − mu² for the reference.
extern "C" __global__ void vblur_ref(const float* __restrict__ hb, float* __restrict__ mu, float* __restrict__ vr, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (x >= w) return;
    const int N = RADIUS;
    size_t n = (size_t)w * h;
    const float* h0 = hb + 2 * c * n + x;
    const float* h1 = h0 + n;
    float* m = mu + c * n + x;
    float* v = vr + c * n + x;
    VState s0 = {}, s1 = {};
    for (int y = -N + 1; y < h; y++) {
        int top = y - N - 1, bot = y + N - 1;
        float t0 = top >= 0 ? h0[(size_t)top * w] : 0.0f, b0 = bot < h ? h0[(size_t)bot * w] : 0.0f;
        float t1 = top >= 0 ? h1[(size_t)top * w] : 0.0f, b1 = bot < h ? h1[(size_t)bot * w] : 0.0f;
        float o0 = vstep(s0, t0 + b0);
        float o1 = vstep(s1, t1 + b1);
        if (y >= 0) {
            m[(size_t)y * w] = o0;
            v[(size_t)y * w] = o1 - o0 * o0;
        }
    }
}

__device__ __forceinline__ double quartic(double x) {
    x *= x;
    return x * x;
}

// vblur_terms: one thread per (column, channel) of a score: the vertical
// pass of b, b², a·b and, per pixel, the SSIM error and the edge maps
// (cpu/ssim2's rowTerms: float32 where libjxl uses float, double where it
// uses double), summed per column into sums[(c·w + x)·6 + t].
extern "C" __global__ void vblur_terms(const float* __restrict__ hb, const float* __restrict__ img1,
                                       const float* __restrict__ mu1, const float* __restrict__ vr1,
                                       const float* __restrict__ img2, double* __restrict__ sums, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int c = blockIdx.y;
    if (x >= w) return;
    const int N = RADIUS;
    size_t n = (size_t)w * h;
    const float* h0 = hb + 3 * c * n + x;
    const float* h1 = h0 + n;
    const float* h2 = h1 + n;
    const float* i1 = img1 + c * n + x;
    const float* m1p = mu1 + c * n + x;
    const float* v1p = vr1 + c * n + x;
    const float* i2 = img2 + c * n + x;
    VState s0 = {}, s1 = {}, s2 = {};
    double ssim = 0, ssim4 = 0, art = 0, art4 = 0, det = 0, det4 = 0;
    for (int y = -N + 1; y < h; y++) {
        int top = y - N - 1, bot = y + N - 1;
        bool ht = top >= 0, hbm = bot < h;
        size_t ot = (size_t)top * w, ob = (size_t)bot * w;
        float sv0 = (ht ? h0[ot] : 0.0f) + (hbm ? h0[ob] : 0.0f);
        float sv1 = (ht ? h1[ot] : 0.0f) + (hbm ? h1[ob] : 0.0f);
        float sv2 = (ht ? h2[ot] : 0.0f) + (hbm ? h2[ob] : 0.0f);
        float mu2 = vstep(s0, sv0);
        float s22 = vstep(s1, sv1);
        float s12 = vstep(s2, sv2);
        if (y < 0) continue;
        size_t o = (size_t)y * w;
        float m1 = m1p[o];
        float diff = m1 - mu2;
        float numM = 1.0f - diff * diff;
        float numS = 2.0f * (s12 - m1 * mu2) + SSIM_C2;
        float denS = (v1p[o] + (s22 - mu2 * mu2)) + SSIM_C2;
        double d = 1.0 - (double)((numM * numS) / denS);
        d = fmax(d, 0.0);
        ssim += d;
        ssim4 += quartic(d);
        double e2 = (double)fabsf(i2[o] - mu2);
        double e1 = (double)fabsf(i1[o] - m1);
        double d1 = (1.0 + e2) / (1.0 + e1) - 1.0;
        double ar = fmax(d1, 0.0), lo = fmax(-d1, 0.0);
        art += ar;
        art4 += quartic(ar);
        det += lo;
        det4 += quartic(lo);
    }
    double* out = sums + ((size_t)c * w + x) * 6;
    out[0] = ssim; out[1] = ssim4; out[2] = art; out[3] = art4; out[4] = det; out[5] = det4;
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
