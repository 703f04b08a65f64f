// DSSIM kernels (kornelski/dssim, dssim-core 3.4.0, as cpu/dssim
// reproduces it): the float32 operations of the CPU reference in its
// order, fused exactly where it fuses (fmaf), and the pooling sums in
// double in its order. The passes are those of the WGSL kernels
// (wgsl/dssim_color.wgsl, dssim_blur.wgsl), which have to force that
// order with opaque barriers and emulated fused multiply-adds; here NVRTC
// runs with --fmad=false (no product is fused into a sum unless the
// source says fmaf) and IEEE division, so plain C expressions are the
// reference's operations.
//
// The host prepends the constants (consts.go): the L*a*b* matrix and
// scales, the SSIM constants, the blur weights and the offsets of the
// decoding tables, all as exact hexadecimal float literals.
//
// Planes: a w×h plane of float4 (16 bytes per pixel), row-major, one
// buffer each: linear light (r, g, b, alpha), L*a*b* (L, a, b, 0), img
// (L, blur(a), blur(b), 0) and mu (blur(img).xyz, sigma²). Maps are w×h
// floats. Pixel and tile kernels run 32×8 blocks over a grid covering
// their plane; the pooling kernels as their comment says.

typedef unsigned char u8;

// Launch geometry; the host uses the same numbers (kernels.go).
#define BX 32  // pixel and tile kernels: block width
#define BY 8   // block height
#define RW 32  // row_sums, row_devs: threads per block (one row each)
#define RC 128 // values each of their rounds loads
#define RS 256 // mean, finish: threads (and rows per round)

// The blur tile: the block's BX×BY outputs, the first pass on them plus a
// 1-pixel apron (MW×MH), its input with a 2-pixel apron (IW×IH).
#define IW (BX + 4)
#define IH (BY + 4)
#define MW (BX + 2)
#define MH (BY + 2)
#define NT (BX * BY)

// ---------------------------------------------------------------------------
// float3 helpers, one float32 operation per component (nothing fused).

__device__ __forceinline__ float3 xyz(float4 v) { return make_float3(v.x, v.y, v.z); }
__device__ __forceinline__ float3 add3(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ __forceinline__ float3 sub3(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
__device__ __forceinline__ float3 mul3(float3 a, float3 b) { return make_float3(a.x * b.x, a.y * b.y, a.z * b.z); }
__device__ __forceinline__ float3 scl3(float3 a, float k) { return make_float3(a.x * k, a.y * k, a.z * k); }
// fma3(a, k, c) is a·k + c rounded once per component.
__device__ __forceinline__ float3 fma3(float3 a, float k, float3 c) {
    return make_float3(fmaf(a.x, k, c.x), fmaf(a.y, k, c.y), fmaf(a.z, k, c.z));
}
// avg3 is dssim-core's channel mean ((l + a) + b) × (1/3 as float32).
__device__ __forceinline__ float avg3(float3 v) { return ((v.x + v.y) + v.z) * THIRD; }
__device__ __forceinline__ int clampi(int v, int lo, int hi) { return min(max(v, lo), hi); }

// ---------------------------------------------------------------------------
// Linear light and L*a*b*.

// sample reads channel c of the pixel at byte offset off (16-bit samples
// are big-endian, as stored).
__device__ __forceinline__ int sample(const u8* raw, size_t off, int c, int bps) {
    if (bps == 2) {
        size_t o = off + 2 * (size_t)c;
        return ((int)raw[o] << 8) | (int)raw[o + 1];
    }
    return raw[off + c];
}

// cbrt_poly is dssim-core's cube root for x in [0, 1]: the seed
// (−0.5x + 1.51)x + 0.2, then two Halley steps y·(y³ + 2x) / (2y³ + x).
__device__ __forceinline__ float cbrt_poly(float x) {
    float y = (CBRT_P2 * x + CBRT_P1) * x + CBRT_P0;
    for (int i = 0; i < 2; i++) {
        float y3 = (y * y) * y;
        y = (y * (y3 + 2.0f * x)) / (2.0f * y3 + x);
    }
    return y;
}

// lab_f is the L*a*b* companding of one XYZ/white component.
__device__ __forceinline__ float lab_f(float v) {
    if (v > LAB_EPS) return cbrt_poly(v) - LAB_OFF;
    return v * LAB_K;
}

// lab_px converts a linear pixel at (x, y) of its scale to (L, a, b, 0).
// With alpha it is first composited onto dssim-core's background pattern:
// 1 − alpha added to R, G, B where bit 16, 8, 32 of (x+11) XOR (y+11) is
// set.
__device__ __forceinline__ float4 lab_px(float4 px, int x, int y, int alpha) {
    float r = px.x, g = px.y, b = px.z;
    if (alpha) {
        float t = 1.0f - px.w;
        int n = (x + 11) ^ (y + 11);
        if (n & 16) r = r + t;
        if (n & 8) g = g + t;
        if (n & 32) b = b + t;
    }
    float fx = fmaf(b, RGB_X2, fmaf(g, RGB_X1, r * RGB_X0));
    float fy = fmaf(b, RGB_Y2, fmaf(g, RGB_Y1, r * RGB_Y0));
    float fz = fmaf(b, RGB_Z2, fmaf(g, RGB_Z1, r * RGB_Z0));
    float X = lab_f(fx), Y = lab_f(fy), Z = lab_f(fz);
    return make_float4(Y * L_SCALE, fmaf(A_SCALE, X - Y, A_OFF), fmaf(B_SCALE, Y - Z, B_OFF), 0.0f);
}

// unpack: raw interleaved 8/16-bit sRGB samples, rows [y0, y1) -> scale
// 0's linear pixels (lin) and their L*a*b* (lab). lut holds the sample ->
// linear tables and the alpha quotient tables (offsets LUT8, LUT16, A8,
// A16). Gray is replicated; with alpha the colours are multiplied by
// a / max (premultiplied), else alpha is 1 and never read. The grid
// covers w × (y1 − y0), so that rows can be converted as their bytes
// arrive. oy is the image row of the plane's row 0 (a strip's crop
// starts there; 0 for a whole image): the alpha background pattern is
// the full image's.
extern "C" __global__ void unpack(const u8* raw, const float* lut, int w, int y0, int y1, int stride, int channels, int bps, int alpha, int oy, float4* lin, float4* lab) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = y0 + blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= y1) return;
    size_t off = (size_t)y * (size_t)stride + (size_t)x * (size_t)(channels * bps);
    const float* t = lut + (bps == 2 ? LUT16 : LUT8);
    float r = t[sample(raw, off, 0, bps)], g = r, b = r;
    if (channels > 2) {
        g = t[sample(raw, off, 1, bps)];
        b = t[sample(raw, off, 2, bps)];
    }
    float a = 1.0f;
    if (alpha) {
        a = lut[(bps == 2 ? A16 : A8) + sample(raw, off, channels - 1, bps)];
        r = r * a;
        g = g * a;
        b = b * a;
    }
    float4 px = make_float4(r, g, b, a);
    int i = y * w + x;
    lin[i] = px;
    lab[i] = lab_px(px, x, y + oy, alpha);
}

// down: the next scale (dw × dh, dw = sw/2) as the mean of each 2×2 block,
// ((p00 + p01) + p10 + p11) × 0.25 per component, alpha included.
extern "C" __global__ void down(const float4* src, int sw, int dw, int dh, float4* dst) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= dw || y >= dh) return;
    int t = 2 * y * sw + 2 * x;
    float4 a = src[t], b = src[t + 1], c = src[t + sw], d = src[t + sw + 1];
    dst[y * dw + x] = make_float4((((a.x + b.x) + c.x) + d.x) * 0.25f, (((a.y + b.y) + c.y) + d.y) * 0.25f,
                                  (((a.z + b.z) + c.z) + d.z) * 0.25f, (((a.w + b.w) + c.w) + d.w) * 0.25f);
}

// lab: a scale's linear pixels (w × h) -> L*a*b* (scales 1.., scale 0's
// is unpack's); oy is the scale's row of the plane's row 0, as unpack's.
extern "C" __global__ void lab(const float4* lin, int w, int h, int alpha, int oy, float4* out) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    out[i] = lab_px(lin[i], x, y + oy, alpha);
}

// ---------------------------------------------------------------------------
// The blur: dssim-core's 3×3 kernel applied twice, rows and columns clamped
// into the plane. One pass at (x, y) is (P + C) + N, the weighted sums of
// the rows above, at and below: (s[x−1]·ko + s[x]·ki) + s[x+1]·ko, with
// (ko, ki) = (KC, KE) for the outer rows and (KE, KM) for the middle one;
// at the first and last column of the plane dssim-core's edge path
// fma(s[x+1], ko, fma(s[x−1], ko, s[x]·ki)) instead.
//
// Each block does both passes for its BX×BY outputs in shared memory:
// tin holds the input at the clamped positions of the tile and a 2-pixel
// apron, tmid the first pass at the clamped positions of the tile and a
// 1-pixel apron (what the second pass reads there). Blocks start inside
// the plane (the grid covers it with no spare block), so every clamped
// position a pass reads lies in its tile.

__device__ __forceinline__ float3 row_plain(float3 a, float3 b, float3 c, float ko, float ki) {
    return add3(add3(scl3(a, ko), scl3(b, ki)), scl3(c, ko));
}

__device__ __forceinline__ float3 row_fused(float3 a, float3 b, float3 c, float ko, float ki) {
    return fma3(c, ko, fma3(a, ko, scl3(b, ki)));
}

// conv is one pass at one position from tile t: columns c0, c1, c2 and
// row offsets r0, r1, r2 (already multiplied by the tile's width).
__device__ __forceinline__ float3 conv(const float3* t, int c0, int c1, int c2, int r0, int r1, int r2, bool edge) {
    if (edge) {
        return add3(add3(row_fused(t[r0 + c0], t[r0 + c1], t[r0 + c2], KC, KE),
                         row_fused(t[r1 + c0], t[r1 + c1], t[r1 + c2], KE, KM)),
                    row_fused(t[r2 + c0], t[r2 + c1], t[r2 + c2], KC, KE));
    }
    return add3(add3(row_plain(t[r0 + c0], t[r0 + c1], t[r0 + c2], KC, KE),
                     row_plain(t[r1 + c0], t[r1 + c1], t[r1 + c2], KE, KM)),
                row_plain(t[r2 + c0], t[r2 + c1], t[r2 + c2], KC, KE));
}

// in_index is the plane index of input-tile slot k of the block at
// (ox, oy): its position clamped into the plane.
__device__ __forceinline__ int in_index(int ox, int oy, int w, int h, int k) {
    int x = clampi(ox - 2 + k % IW, 0, w - 1);
    int y = clampi(oy - 2 + k / IW, 0, h - 1);
    return y * w + x;
}

// pass1 computes tmid (the first pass on the tile and its 1-pixel apron,
// at clamped positions) from tin, the block's NT threads taking every
// NT-th slot from li.
__device__ __forceinline__ void pass1(const float3* tin, float3* tmid, int ox, int oy, int w, int h, int li) {
    for (int k = li; k < MW * MH; k += NT) {
        int x = clampi(ox - 1 + k % MW, 0, w - 1);
        int y = clampi(oy - 1 + k / MW, 0, h - 1);
        int c0 = max(x - 1, 0) - (ox - 2), c1 = x - (ox - 2), c2 = min(x + 1, w - 1) - (ox - 2);
        int r0 = (max(y - 1, 0) - (oy - 2)) * IW, r1 = (y - (oy - 2)) * IW, r2 = (min(y + 1, h - 1) - (oy - 2)) * IW;
        tmid[k] = conv(tin, c0, c1, c2, r0, r1, r2, x == 0 || x == w - 1);
    }
}

// pass2 is the second pass at plane position (x, y) from tmid.
__device__ __forceinline__ float3 pass2(const float3* tmid, int ox, int oy, int w, int h, int x, int y) {
    int c0 = max(x - 1, 0) - (ox - 1), c1 = x - (ox - 1), c2 = min(x + 1, w - 1) - (ox - 1);
    int r0 = (max(y - 1, 0) - (oy - 1)) * MW, r1 = (y - (oy - 1)) * MW, r2 = (min(y + 1, h - 1) - (oy - 1)) * MW;
    return conv(tmid, c0, c1, c2, r0, r1, r2, x == 0 || x == w - 1);
}

// chroma: (L, a, b, 0) -> (L, blur(a), blur(b), 0), dssim-core's extra
// blur of the chroma planes before anything else (L is blurred along and
// dropped).
extern "C" __global__ void chroma(const float4* lab, int w, int h, float4* img) {
    __shared__ float3 tin[IW * IH];
    __shared__ float3 tmid[MW * MH];
    int li = threadIdx.y * BX + threadIdx.x;
    int ox = blockIdx.x * BX, oy = blockIdx.y * BY;
    for (int k = li; k < IW * IH; k += NT) tin[k] = xyz(lab[in_index(ox, oy, w, h, k)]);
    __syncthreads();
    pass1(tin, tmid, ox, oy, w, h, li);
    __syncthreads();
    int x = ox + threadIdx.x, y = oy + threadIdx.y;
    if (x < w && y < h) {
        float3 b = pass2(tmid, ox, oy, w, h, x, y);
        int i = y * w + x;
        img[i] = make_float4(lab[i].x, b.y, b.z, 0.0f);
    }
}

// stats: img -> (mu.xyz, sigma²) with mu = blur(img) and sigma² the
// channel mean of blur(img²) − mu², the only form in which dssim-core's
// SSIM uses the squared blur.
extern "C" __global__ void stats(const float4* img, int w, int h, float4* mu) {
    __shared__ float3 tin[IW * IH];
    __shared__ float3 tin2[IW * IH];
    __shared__ float3 tmid[MW * MH];
    __shared__ float3 tmid2[MW * MH];
    int li = threadIdx.y * BX + threadIdx.x;
    int ox = blockIdx.x * BX, oy = blockIdx.y * BY;
    for (int k = li; k < IW * IH; k += NT) {
        float3 v = xyz(img[in_index(ox, oy, w, h, k)]);
        tin[k] = v;
        tin2[k] = mul3(v, v);
    }
    __syncthreads();
    pass1(tin, tmid, ox, oy, w, h, li);
    pass1(tin2, tmid2, ox, oy, w, h, li);
    __syncthreads();
    int x = ox + threadIdx.x, y = oy + threadIdx.y;
    if (x < w && y < h) {
        float3 m = pass2(tmid, ox, oy, w, h, x, y);
        float3 sq = pass2(tmid2, ox, oy, w, h, x, y);
        mu[y * w + x] = make_float4(m.x, m.y, m.z, avg3(sub3(sq, mul3(m, m))));
    }
}

// ssim: the reference's (rimg, rmu) and the distorted image's (dimg, dmu)
// planes -> the SSIM map: the cross blur blur(img1·img2), then
// (2·mu12 + C1)(2·s12 + C2) / ((mu1² + mu2² + C1)(s1 + s2 + C2)) on the
// channel means, evaluated as (n1·n2) / (d1·d2). Only rows [lo, hi) are
// written, row y to row y + row0 of map: a strip writes its interior into
// the full image's map at its place (a whole image: 0, h, 0).
extern "C" __global__ void ssim(const float4* rimg, const float4* rmu, const float4* dimg, const float4* dmu, int w, int h, int lo, int hi, int row0, float* map) {
    __shared__ float3 tin[IW * IH];
    __shared__ float3 tmid[MW * MH];
    int li = threadIdx.y * BX + threadIdx.x;
    int ox = blockIdx.x * BX, oy = blockIdx.y * BY;
    for (int k = li; k < IW * IH; k += NT) {
        int j = in_index(ox, oy, w, h, k);
        tin[k] = mul3(xyz(rimg[j]), xyz(dimg[j]));
    }
    __syncthreads();
    pass1(tin, tmid, ox, oy, w, h, li);
    __syncthreads();
    int x = ox + threadIdx.x, y = oy + threadIdx.y;
    if (x < w && y >= lo && y < hi) {
        float3 cross = pass2(tmid, ox, oy, w, h, x, y);
        int i = y * w + x;
        float4 m1 = rmu[i], m2 = dmu[i];
        float3 mu11 = mul3(xyz(m1), xyz(m1)), mu12 = mul3(xyz(m1), xyz(m2)), mu22 = mul3(xyz(m2), xyz(m2));
        float mu1_sq = avg3(mu11), mu2_sq = avg3(mu22), mu1_mu2 = avg3(mu12);
        float sigma12 = avg3(sub3(cross, mu12));
        float n1 = 2.0f * mu1_mu2 + SSIM_C1;
        float n2 = 2.0f * sigma12 + SSIM_C2;
        float d1 = (mu1_sq + mu2_sq) + SSIM_C1;
        float d2 = (m1.w + m2.w) + SSIM_C2;
        map[(y + row0) * w + x] = (n1 * n2) / (d1 * d2);
    }
}

// ---------------------------------------------------------------------------
// Pooling of one scale's map (w × h values), in double and in the CPU
// reference's order: each row summed left to right, the row sums added
// top to bottom, so that the sums are the reference's bit for bit rather
// than merely close. A sequential sum is a chain of dependent additions;
// what keeps it fast is feeding it: the block loads the next RC values
// with coalesced loads into shared memory, then every thread runs the
// same chain over them (the threads of a block agree, one writes).
// row_sums and row_devs run one block of RW threads per row (many rows
// run side by side), mean and finish one block of RS threads.
//
// res holds 8 doubles per scale: the mean, the device's avg = max(mean,
// 0)^expo, the sum of |avg − m|, and the counts of map values below and
// above avg (with which the host moves the sum to its own avg, should its
// pow differ from the device's in the last bit).

// row_sums: rows[y] = the sum of map row y (block y).
extern "C" __global__ void row_sums(const float* map, int w, int h, double* rows) {
    __shared__ float buf[RC];
    int y = blockIdx.x;
    if (y >= h) return;
    const float* p = map + (size_t)y * (size_t)w;
    double s = 0.0;
    for (int x0 = 0; x0 < w; x0 += RC) {
        for (int k = threadIdx.x; k < RC; k += RW) buf[k] = x0 + k < w ? p[x0 + k] : 0.0f;
        __syncthreads();
        int m = min(RC, w - x0);
        for (int k = 0; k < m; k++) s += (double)buf[k];
        __syncthreads();
    }
    if (threadIdx.x == 0) rows[y] = s;
}

// mean: res[8·scale] = (sum of rows[0..h)) / n, res[8·scale + 1] = avg.
extern "C" __global__ void mean(const double* rows, int h, double n, double expo, int scale, double* res) {
    __shared__ double buf[RS];
    double t = 0.0;
    for (int y0 = 0; y0 < h; y0 += RS) {
        int k = threadIdx.x;
        buf[k] = y0 + k < h ? rows[y0 + k] : 0.0;
        __syncthreads();
        int m = min(RS, h - y0);
        for (int j = 0; j < m; j++) t += buf[j];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        double v = t / n;
        res[8 * scale] = v;
        res[8 * scale + 1] = pow(v < 0.0 ? 0.0 : v, expo);
    }
}

// row_devs: rows[y] = the sum over map row y of |avg − m|, cnt[2y] and
// cnt[2y + 1] the values below and above avg (block y).
extern "C" __global__ void row_devs(const float* map, int w, int h, const double* res, int scale, double* rows, int* cnt) {
    __shared__ float buf[RC];
    int y = blockIdx.x;
    if (y >= h) return;
    double avg = res[8 * scale + 1];
    const float* p = map + (size_t)y * (size_t)w;
    double s = 0.0;
    int lt = 0, gt = 0;
    for (int x0 = 0; x0 < w; x0 += RC) {
        for (int k = threadIdx.x; k < RC; k += RW) buf[k] = x0 + k < w ? p[x0 + k] : 0.0f;
        __syncthreads();
        int m = min(RC, w - x0);
        for (int k = 0; k < m; k++) {
            double v = (double)buf[k];
            s += fabs(avg - v);
            lt += v < avg;
            gt += v > avg;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        rows[y] = s;
        cnt[2 * y] = lt;
        cnt[2 * y + 1] = gt;
    }
}

// finish: res[8·scale + 2] = the sum of the row deviations rows[0..h),
// + 3 and + 4 the counts.
extern "C" __global__ void finish(const double* rows, const int* cnt, int h, int scale, double* res) {
    __shared__ double buf[RS];
    __shared__ int cb[2 * RS];
    double d = 0.0;
    long long lt = 0, gt = 0;
    for (int y0 = 0; y0 < h; y0 += RS) {
        int k = threadIdx.x;
        buf[k] = y0 + k < h ? rows[y0 + k] : 0.0;
        cb[2 * k] = y0 + k < h ? cnt[2 * (y0 + k)] : 0;
        cb[2 * k + 1] = y0 + k < h ? cnt[2 * (y0 + k) + 1] : 0;
        __syncthreads();
        int m = min(RS, h - y0);
        for (int j = 0; j < m; j++) {
            d += buf[j];
            lt += cb[2 * j];
            gt += cb[2 * j + 1];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        res[8 * scale + 2] = d;
        res[8 * scale + 3] = (double)lt;
        res[8 * scale + 4] = (double)gt;
    }
}
