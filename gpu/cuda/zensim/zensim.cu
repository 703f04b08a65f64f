// zensim kernels (imazen/zensim 0.2.7, default profile, as cpu/zensim
// reproduces it; that package's doc is the algorithm). The float32
// operations are the CPU reference's in its order, fused (fmaf) exactly
// where it fuses: NVRTC runs with --fmad=false and IEEE division, so plain
// C expressions are its operations. The passes are those of
// wgsl/zensim_*.wgsl; unlike WGSL, CUDA has double, so the sums are the
// reference's own float64 chains in its order (not a tree): the score
// comes out bit for bit rather than close.
//
// The host prepends the constants (consts.go): the opsin matrix and
// biases, the XYB and SSIM constants, 1/11, the alpha quotients (as exact
// hexadecimal literals), the offsets of the tables in tab and the numbers
// of the edge and full feature modes.
//
// Planes: one buffer per scale holds the X, Y, B planes (pw × h floats
// each, plane c at c·pw·h, row-major; pw is zensim's padded width). hb
// holds per channel and pixel the horizontal blur (mu1, mu2, ssq, s12)
// as one float4, channel c at c·pw·h.

typedef unsigned char u8;

// Launch geometry; the host uses the same numbers (kernels.go).
#define BX 32 // xyb, down: block width
#define BY 8  // block height
#define HT 128 // hblur: threads per block (4 warps: all load and store, warp 0 walks)
#define VT 64 // vstats: threads per block (one column each; a multiple of 8)
#define CT 128 // chain: threads per block (all load; the first NQ add)
#define MT 64 // merge: threads (3·NQ of them work)

#define RADIUS 5 // the box blur's radius
#define DIAM 11  // its taps
#define STRIP 16 // zensim's vertical strips (output rows)
#define CHUNK 64 // zensim's XYB chunk (rows)
#define NQ 20    // per-record quantities: 17 sums, then 3 maxima
#define NSUM 17  // the sums of a record

// ---------------------------------------------------------------------------
// Helpers.

// gmax is Go's max for float32 (NaN wins; the values here are never −0).
__device__ __forceinline__ float gmax(float a, float b) {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
}

// max0 is Go's max(v, 0): NaN stays, −0 becomes +0.
__device__ __forceinline__ float max0(float v) {
    if (v != v) return v;
    return v > 0.0f ? v : 0.0f;
}

// clamp01 is cpu/zensim's min(max(v, 0), 1) of a composited colour (never
// NaN or −0 there).
__device__ __forceinline__ float clamp01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// Window indices of a line of n samples (cpu/zensim hAddIdx, remIdx,
// initIdx, vAddIdx): reflected about the ends without repeating them,
// clamped to n − 1.
__device__ __forceinline__ int add_idx(int x, int n) {
    int a = x + RADIUS + 1;
    if (a >= n) {
        a = 2 * (n - 1) - a;
        if (a < 0) a = -a;
    }
    return min(a, n - 1);
}

__device__ __forceinline__ int rem_idx(int x, int n) {
    int a = x - RADIUS;
    if (a < 0) a = -a;
    return min(a, n - 1);
}

__device__ __forceinline__ int init_idx(int i, int n) {
    if (i <= RADIUS) return min(RADIUS - i, n - 1);
    return min(i - RADIUS, n - 1);
}

__device__ __forceinline__ int chan_mode(int modes, int c) { return (modes >> (8 * c)) & 0xff; }

// ---------------------------------------------------------------------------
// XYB.

// sample reads channel c of the pixel at byte offset off (16-bit samples
// are big-endian, as stored).
__device__ __forceinline__ int sample(const u8* raw, size_t off, int c, int bps) {
    if (bps == 2) {
        size_t o = off + 2 * (size_t)c;
        return ((int)raw[o] << 8) | (int)raw[o + 1];
    }
    return raw[off + c];
}

// cbrt_vec is magetypes' cbrt_midp (zensim's 8-wide loop): bit seed, two
// unfused Halley steps y·((y³ + 2x)/(2y³ + x)).
__device__ __forceinline__ float cbrt_vec(float x) {
    if (x == 0.0f) return x;
    float y = __int_as_float((int)((unsigned)__float_as_int(x) / 3u + 0x2a508c2du));
    for (int i = 0; i < 2; i++) {
        float y3 = (y * y) * y;
        float num = y3 + 2.0f * x;
        float den = 2.0f * y3 + x;
        y = y * (num / den);
    }
    return y;
}

// cbrt_tail is zensim's scalar cbrtf_fast (the pixels after the 8-wide
// loop): seed bits/3 + 709958130, two Halley steps with fused x·2 + r and
// r·2 + x.
__device__ __forceinline__ float cbrt_tail(float x) {
    if (x == 0.0f) return 0.0f;
    unsigned ui = (unsigned)__float_as_int(x);
    float t = __int_as_float((int)((ui & 0x80000000u) | ((ui & 0x7fffffffu) / 3u + 709958130u)));
    for (int i = 0; i < 2; i++) {
        float r = (t * t) * t;
        t = t * (fmaf(x, 2.0f, r) / fmaf(r, 2.0f, x));
    }
    return t;
}

__device__ __forceinline__ float mix(float r, float g, float b, float k0, float k1, float k2) {
    return max0(fmaf(k0, r, fmaf(k1, g, fmaf(k2, b, KB0))));
}

// xyb: rows [y0, y1) of the raw crop (w × h pixels, interleaved 8/16-bit
// samples, stride bytes per row) -> scale 0's X, Y, B planes (pw wide, h
// rows) in out. The crop is rows [oy, oy + h) of an image of ih rows (a
// whole image: oy = 0, ih = h): which cube root a pixel takes (zensim's
// 64-row chunks of the image) and its alpha background are functions of
// the image row, so a strip's values are the whole image's bits. Columns
// past w show the column they mirror. With cmp, flag[0] is set when any
// value differs in its bits from ref's (zensim scores identical images
// 100 without computing). The grid covers pw × (y1 − y0), so that rows
// are converted as their bytes arrive.
extern "C" __global__ void xyb(const u8* raw, const float* tab, int w, int pw, int h, int ih, int oy, int y0, int y1, int stride, int channels, int bps, int alpha, int cmp, const float* ref, float* out, int* flag) {
    int px = blockIdx.x * BX + threadIdx.x;
    int gy = y0 + blockIdx.y * BY + threadIdx.y;
    if (px >= pw || gy >= y1) return;
    int iy = oy + gy; // the image row
    int x = px;
    if (x >= w) {
        int period = 2 * (w - 1);
        x = x % period;
        if (x >= w) x = period - x;
    }
    size_t off = (size_t)gy * (size_t)stride + (size_t)x * (size_t)(channels * bps);
    const float* lut = tab + (bps == 2 ? TAB_LUT16 : TAB_LUT8);
    float r = lut[sample(raw, off, 0, bps)], g = r, b = r;
    if (channels > 2) {
        g = lut[sample(raw, off, 1, bps)];
        b = lut[sample(raw, off, 2, bps)];
    }
    bool vec;
    if (bps == 1 && !alpha) {
        // zensim's opaque 8-bit path converts 64-row chunks as one run of
        // pixels; its 8-wide loop leaves the run's last (len mod 8).
        int c0 = iy / CHUNK * CHUNK;
        int c1 = min(c0 + CHUNK, ih);
        int run_end = ((c1 - c0) * w) & ~7;
        vec = (iy - c0) * w + x < run_end;
    } else {
        if (alpha) {
            int a = sample(raw, off, channels - 1, bps);
            int max_a = bps == 2 ? 65535 : 255;
            if (a != max_a) {
                float bg = tab[TAB_BG + (((unsigned)x ^ ((unsigned)iy * 2654435761u)) & 0xfffu)];
                if (a == 0) {
                    r = bg;
                    g = bg;
                    b = bg;
                } else {
                    float al = (float)a * (bps == 2 ? INV65535 : INV255);
                    float inv = bg * (1.0f - al);
                    r = fmaf(r, al, inv);
                    g = fmaf(g, al, inv);
                    b = fmaf(b, al, inv);
                }
            }
        }
        r = clamp01(r);
        g = clamp01(g);
        b = clamp01(b);
        vec = x < (w & ~7);
    }
    float m0 = mix(r, g, b, KM00, KM01, KM02);
    float m1 = mix(r, g, b, KM10, KM11, KM12);
    float m2 = mix(r, g, b, KM20, KM21, KM22);
    float t0, t1, t2;
    if (vec) {
        t0 = cbrt_vec(m0);
        t1 = cbrt_vec(m1);
        t2 = cbrt_vec(m2);
    } else {
        t0 = cbrt_tail(m0);
        t1 = cbrt_tail(m1);
        t2 = cbrt_tail(m2);
    }
    float c0 = t0 + ABS_BIAS;
    float c1 = t1 + ABS_BIAS;
    float xx = 0.5f * (c0 - c1);
    float yy = 0.5f * (c0 + c1);
    size_t n = (size_t)pw * (size_t)h;
    size_t i = (size_t)gy * (size_t)pw + (size_t)px;
    float vx = fmaf(xx, 14.0f, XYB_X_OFF);
    float vy = yy + XYB_Y_OFF;
    float vb = (t2 - yy) + XYB_B_OFF;
    out[i] = vx;
    out[n + i] = vy;
    out[2 * n + i] = vb;
    if (cmp && (__float_as_int(vx) != __float_as_int(ref[i]) || __float_as_int(vy) != __float_as_int(ref[n + i]) ||
                __float_as_int(vb) != __float_as_int(ref[2 * n + i]))) {
        flag[0] = 1; // every writer stores the same value
    }
}

// down: the next scale (dw × dh, dw = sw/2, dh = sh/2) of the three
// planes, each pixel ((p00 + p01) + p10 + p11) × 0.25.
extern "C" __global__ void down(const float* src, int sw, int sh, int dw, int dh, float* dst) {
    int x = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (x >= dw || y >= dh) return;
    size_t sn = (size_t)sw * (size_t)sh, dn = (size_t)dw * (size_t)dh;
    for (int c = 0; c < 3; c++) {
        size_t a = c * sn + 2 * (size_t)y * (size_t)sw + 2 * (size_t)x;
        float v = ((src[a] + src[a + 1]) + src[a + sw]) + src[a + sw + 1];
        dst[c * dn + (size_t)y * (size_t)dw + (size_t)x] = v * 0.25f;
    }
}

// ---------------------------------------------------------------------------
// The box blur and the features.

// hblur: one thread per plane row y and channel c (blockIdx.y): the
// horizontal running sums of s (reference), d (distorted) and, in full
// mode, s² + d² (fma(s, s, fma(d, d, Σ)), removals fma(−x, x, ·)) and
// s·d, each written × 1/11 to hb as (mu1, mu2, ssq, s12); 0 for the last
// two in edge mode. Channels without blurred features do nothing. The
// sums are serial along the row, as zensim's (their rounding depends on
// the order), so a row is one thread's work from end to end, and the
// only parallelism is rows × channels (12288 rows at 16 MP, 384 warps:
// about 3 per SM of an H200). With so few warps nothing hides memory
// latency but the block's own loads in flight.
//
// So the block (HT threads, HR rows) goes through its rows in tiles of
// HW columns, and its warps split the work: warp 0 walks the rows (one
// per lane) through the current tile in shared memory, while all HT
// threads hold the next tile's samples in registers (HR·HIN/HT = 12 per
// image and thread, issued before the walk and stored to shared memory
// after it, so that their latency overlaps the walk), then store the
// walked tile's outputs row by row. A tile is the samples its steps read
// (columns [x0 − 8, x0 + HW + 8) of each row, clipped to the row: the
// entering sample is at most 6 ahead, the leaving one 5 behind, and near
// the row's ends their mirrors fall inside too). Every global access is
// coalesced (a warp reads 32 consecutive floats of one row, writes 32
// consecutive float4 of one row), and all threads of the walking warp
// are at the same column at once, so the mirrored indices are the same
// across the warp (no divergence). Each thread's additions are exactly
// the CPU's, in its order: only who loads the samples changed.
#define HR 32             // hblur: rows per block (warp 0 walks them)
#define HW 32             // hblur: columns per tile
#define HIN (HW + 16)     // its input tile's columns
#define HIS (HIN + 1)     // the input tile's row stride (odd: no bank conflicts)
#define HOS (HW + 1)      // the output tile's row stride, in float4
#define HLD (HR * HIN / HT) // samples per image each thread loads per tile
#define HST (HR * HW / HT)  // outputs each thread stores per tile
// The walkers are warp 0's lanes, and the tiles split evenly.
static_assert(HR <= 32 && HT % 32 == 0 && (HR * HIN) % HT == 0 && (HR * HW) % HT == 0, "hblur geometry");

// hblur_fetch issues the loads of the tile at columns [lo, hi) of the
// block's rows into registers (0 where the tile has no sample; never
// stored).
__device__ __forceinline__ void hblur_fetch(const float* s0, const float* d0, int pw, int rows, int lo, int hi, int t, float* rs, float* rd) {
#pragma unroll
    for (int j = 0; j < HLD; j++) {
        int e = t + j * HT, r = e / HIN, k = e % HIN;
        bool in = r < rows && k < hi - lo;
        size_t o = (size_t)r * (size_t)pw + (size_t)(lo + k);
        rs[j] = in ? s0[o] : 0.0f;
        rd[j] = in ? d0[o] : 0.0f;
    }
}

// hblur_put writes the fetched samples to the input tiles.
__device__ __forceinline__ void hblur_put(float* ts, float* td, int t, const float* rs, const float* rd) {
#pragma unroll
    for (int j = 0; j < HLD; j++) {
        int e = t + j * HT, r = e / HIN, k = e % HIN;
        ts[r * HIS + k] = rs[j];
        td[r * HIS + k] = rd[j];
    }
}

extern "C" __global__ void hblur(const float* ref, const float* dist, int pw, int h, int modes, float4* hb) {
    __shared__ float ts[HR * HIS];
    __shared__ float td[HR * HIS];
    __shared__ float4 to[HR * HOS];
    int t = threadIdx.x;
    int y0 = blockIdx.x * HR;
    int c = blockIdx.y;
    int mode = chan_mode(modes, c);
    if (mode < MODE_EDGE) return; // the whole block: the channel is uniform
    bool full = mode == MODE_FULL;
    int rows = min(HR, h - y0);
    bool walker = t < rows; // warp 0's lanes with a row
    size_t plane = (size_t)c * (size_t)pw * (size_t)h;
    const float* s0 = ref + plane + (size_t)y0 * (size_t)pw;
    const float* d0 = dist + plane + (size_t)y0 * (size_t)pw;
    float4* o0 = hb + plane + (size_t)y0 * (size_t)pw;
    float rs[HLD], rd[HLD];
    hblur_fetch(s0, d0, pw, rows, 0, min(HW + 8, pw), t, rs, rd);
    hblur_put(ts, td, t, rs, rd);
    __syncthreads();
    float ss = 0.0f, sd = 0.0f, sq = 0.0f, sp = 0.0f;
    for (int x0 = 0; x0 < pw; x0 += HW) {
        int lo = max(x0 - 8, 0), x1 = min(x0 + HW, pw);
        // The next tile's loads go out before the walk (block-uniform).
        int nx = x0 + HW;
        bool next = nx < pw;
        int nlo = nx - 8, nhi = min(nx + HW + 8, pw);
        if (next) hblur_fetch(s0, d0, pw, rows, nlo, nhi, t, rs, rd);
        if (walker) {
            const float* st = ts + t * HIS;
            const float* dt = td + t * HIS;
            if (x0 == 0) {
                for (int i = 0; i < DIAM; i++) {
                    int k = init_idx(i, pw);
                    float sv = st[k], dv = dt[k];
                    ss = ss + sv;
                    sd = sd + dv;
                    if (full) {
                        sq = fmaf(sv, sv, fmaf(dv, dv, sq));
                        sp = fmaf(sv, dv, sp);
                    }
                }
            }
            float4* ot = to + t * HOS;
            for (int x = x0; x < x1; x++) {
                ot[x - x0] = full ? make_float4(ss * INV_DIAM, sd * INV_DIAM, sq * INV_DIAM, sp * INV_DIAM)
                                  : make_float4(ss * INV_DIAM, sd * INV_DIAM, 0.0f, 0.0f);
                int a = add_idx(x, pw) - lo, m = rem_idx(x, pw) - lo;
                float sa = st[a], da = dt[a], sr = st[m], dr = dt[m];
                ss = (ss + sa) - sr;
                sd = (sd + da) - dr;
                if (full) {
                    sq = fmaf(sa, sa, fmaf(da, da, fmaf(-sr, sr, fmaf(-dr, dr, sq))));
                    sp = fmaf(sa, da, fmaf(-sr, dr, sp));
                }
            }
        }
        __syncthreads(); // the walk is done with ts, td; to is complete
        if (next) hblur_put(ts, td, t, rs, rd);
#pragma unroll
        for (int j = 0; j < HST; j++) {
            int e = t + j * HT, r = e / HW, k = e % HW;
            if (r < rows && k < x1 - x0) o0[(size_t)r * (size_t)pw + (size_t)(x0 + k)] = to[r * HOS + k];
        }
        __syncthreads(); // the next tile is in; to may be overwritten
    }
}

// feats computes one pixel's record (NQ values, cpu/zensim's order: SSIM
// d, d², d⁴, d⁸, artifact ×4, detail-lost ×4, MSE, (s−mu1)², (d−mu2)²,
// |s−mu1|, |d−mu2|, then d, artifact, detail-lost again for the maxima)
// from its vertical sums (× 1/11 here) and its two samples. Edge mode
// leaves the SSIM values 0.
__device__ __forceinline__ void feats(bool full, float a1, float a2, float aq, float ap, float sv, float dv, float* f) {
    float mu1 = a1 * INV_DIAM;
    float mu2 = a2 * INV_DIAM;
    if (full) {
        float q = aq * INV_DIAM;
        float p = ap * INV_DIAM;
        float md = mu1 - mu2;
        float num_m = fmaf(md, -md, 1.0f);
        float num_s = fmaf(2.0f, fmaf(-mu1, mu2, p), SSIM_C2);
        float den = fmaf(-mu2, mu2, fmaf(-mu1, mu1, q)) + SSIM_C2;
        float sd = max0(1.0f - (num_m * num_s) / den);
        float sd2 = sd * sd;
        float sd4 = sd2 * sd2;
        f[0] = sd;
        f[1] = sd2;
        f[2] = sd4;
        f[3] = sd4 * sd4;
        f[17] = sd;
    } else {
        f[0] = f[1] = f[2] = f[3] = f[17] = 0.0f;
    }
    float hs = sv - mu1, hd = dv - mu2;
    float e1 = fabsf(hs), e2 = fabsf(hd);
    float ed = (1.0f + e2) / (1.0f + e1) - 1.0f;
    float art = max0(ed), det = max0(-ed);
    float a2s = art * art, t2 = det * det;
    float a4 = a2s * a2s, t4 = t2 * t2;
    f[4] = art;
    f[5] = a2s;
    f[6] = a4;
    f[7] = a4 * a4;
    f[8] = det;
    f[9] = t2;
    f[10] = t4;
    f[11] = t4 * t4;
    float pd = sv - dv;
    f[12] = pd * pd;
    f[13] = hs * hs;
    f[14] = hd * hd;
    f[15] = e1;
    f[16] = e2;
    f[18] = art;
    f[19] = det;
}

// vstats: one thread per plane column (blockIdx.x·VT + threadIdx.x),
// one block row per strip (blockIdx.y) and channel (blockIdx.z). The
// planes (h rows) are rows [oy, oy + h) of the scale's gh image rows (a
// whole image: oy = 0, gh = h), and the launch's strips are the image's
// strips k0, k0 + 1, ... (gridDim.y of them). Strip k covers output rows
// [16k, min(16k + 16, gh)) of the image and reads rows [16k − 5, end + 5)
// clipped to the image, mirrored at the strip's own ends: the vertical
// sums restart at every strip, as zensim's, so a strip's values depend on
// those rows alone, which the host's crops hold (a band's strips are the
// whole image's bit for bit). Each output row's
// values go through shared memory to the records of zensim's column
// units: pw/8 groups of 8 columns (its vector loop), whose record sums
// the 8 lanes in magetypes' reduce order ((l0+l4)+(l1+l5))+((l2+l6)+
// (l3+l7)) and takes their maxima, then pw mod 8 single columns (its
// scalar tail), whose record is the column's values. Records go to lanes
// at [c][launch strip][unit][row][NQ], the order in which chain adds them. One
// column per thread keeps the warp's loads of hb, s and d coalesced.
#define VQS (VT + 1) // the shared values' stride per quantity

extern "C" __global__ void vstats(const float* ref, const float* dist, const float4* hb, int pw, int h, int gh, int oy, int k0, int modes, float* lanes) {
    __shared__ float sv[NQ * VQS];
    int t = threadIdx.x;
    int bx = blockIdx.x * VT;
    int x = bx + t;
    int j = blockIdx.y, k = k0 + j;
    int c = blockIdx.z;
    int mode = chan_mode(modes, c);
    if (mode < MODE_EDGE) return; // the whole block: the channel is uniform
    bool full = mode == MODE_FULL;
    bool on = x < pw;
    int g = pw / 8, units = g + pw % 8, ns = gridDim.y;
    int y = k * STRIP;
    int end = min(y + STRIP, gh);
    int top = max(y - RADIUS, 0);
    int hs = min(end + RADIUS, gh) - top;
    int in0 = y - top, in1 = end - top;
    size_t pl = (size_t)c * (size_t)pw * (size_t)h + (size_t)(top - oy) * (size_t)pw + (size_t)min(x, pw - 1);
    const float* s = ref + pl;
    const float* d = dist + pl;
    const float4* hr = hb + pl;
    float* recs = lanes + ((size_t)c * ns + j) * (size_t)units * (STRIP * NQ);
    float a1 = 0.0f, a2 = 0.0f, aq = 0.0f, ap = 0.0f;
    if (on) {
        for (int i = 0; i < DIAM; i++) {
            float4 v = hr[(size_t)init_idx(i, hs) * pw];
            a1 = a1 + v.x;
            a2 = a2 + v.y;
            if (full) {
                aq = aq + v.z;
                ap = ap + v.w;
            }
        }
    }
    // The block's tail columns are [tb, te) (none when tb >= te).
    int tb = max(8 * g, bx), te = min(pw, bx + VT);
    // Each iteration's global loads (the slide's two blurred rows, the
    // next output row's samples) go out at its start, so that their
    // latency overlaps the current row's values, barriers and records
    // instead of stalling the next row; sc, dc are row yy's samples.
    float sc = 0.0f, dc = 0.0f;
    if (on && in0 == 0) {
        sc = s[0];
        dc = d[0];
    }
    for (int yy = 0; yy < in1; yy++) {
        bool slide = yy + 1 < in1; // the remaining slides feed no output row
        float4 va = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vr = va;
        float sn = 0.0f, dn = 0.0f;
        if (on && slide) {
            va = hr[(size_t)add_idx(yy, hs) * pw];
            vr = hr[(size_t)rem_idx(yy, hs) * pw];
            if (yy + 1 >= in0) {
                sn = s[(size_t)(yy + 1) * pw];
                dn = d[(size_t)(yy + 1) * pw];
            }
        }
        if (yy >= in0) {
            float f[NQ];
            if (on) {
                feats(full, a1, a2, aq, ap, sc, dc, f);
            } else {
#pragma unroll
                for (int q = 0; q < NQ; q++) f[q] = 0.0f;
            }
#pragma unroll
            for (int q = 0; q < NQ; q++) sv[q * VQS + t] = f[q];
            __syncthreads();
            int r = yy - in0;
            // The block's groups: 8-column units starting before 8g.
            for (int i = t; i < (VT / 8) * NQ; i += VT) {
                int j = i / NQ, q = i % NQ, col = bx + 8 * j;
                if (col >= 8 * g) continue;
                const float* l = sv + q * VQS + 8 * j;
                float v;
                if (q < NSUM) {
                    v = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
                } else {
                    v = l[0];
                    for (int m = 1; m < 8; m++) v = gmax(v, l[m]);
                }
                recs[((size_t)(col / 8) * STRIP + r) * NQ + q] = v;
            }
            for (int i = t; i < (te - tb) * NQ; i += VT) {
                int col = tb + i / NQ, q = i % NQ;
                recs[((size_t)(g + col - 8 * g) * STRIP + r) * NQ + q] = sv[q * VQS + col - bx];
            }
            __syncthreads();
        }
        if (!slide) break;
        if (on) {
            a1 = (a1 + va.x) - vr.x;
            a2 = (a2 + va.y) - vr.y;
            if (full) {
                aq = (aq + va.z) - vr.z;
                ap = (ap + va.w) - vr.w;
            }
        }
        sc = sn;
        dc = dn;
    }
}

// chain: one block per strip (blockIdx.x: the image's strip k0 +
// blockIdx.x of a scale of gh rows, its records at vstats' launch strip
// blockIdx.x) and channel (blockIdx.y); the first NQ threads each form
// one quantity's strip sum as cpu/zensim forms it, a float64 chain over
// the units in order and each unit's output rows in order (its maxima:
// the largest value), into sums[c][k][q], the image's slot of the strip
// (a band fills its strips' slots, merge adds them all in order). A chain of dependent additions is serial by nature;
// the strips and channels run side by side (768 blocks at 16 MP), and
// what keeps each chain fed is the block's loads in flight: the strip's
// records (contiguous: [unit][row][NQ]) come in batches of CU units,
// all CT threads loading the next batch coalesced into registers (CLD
// floats each) while the first NQ add the current one from shared
// memory, where a warp's NQ threads read one record's consecutive words
// (no bank conflicts). Channels without features get 0.
#define CU 16                  // chain: units per batch
#define CBF (CU * STRIP * NQ)  // a batch's floats
#define CLD (CBF / CT)         // the floats each thread loads per batch
static_assert(CBF % CT == 0 && CT >= NQ, "chain geometry");

// chain_fetch loads batch u0's floats of the strip's n into registers
// (0 past n; never added).
__device__ __forceinline__ void chain_fetch(const float* p, size_t n, int u0, int t, float* v) {
    size_t b = (size_t)u0 * (STRIP * NQ);
#pragma unroll
    for (int j = 0; j < CLD; j++) {
        size_t i = b + (size_t)(t + j * CT);
        v[j] = i < n ? p[i] : 0.0f;
    }
}

extern "C" __global__ void chain(const float* lanes, int pw, int gh, int k0, int modes, double* sums) {
    __shared__ float cb[CBF];
    int j = blockIdx.x, k = k0 + j, c = blockIdx.y, t = threadIdx.x;
    int units = pw / 8 + pw % 8, ns = (gh + STRIP - 1) / STRIP, nl = gridDim.x;
    int rows = min(STRIP, gh - k * STRIP);
    double tot = 0.0;
    float m = 0.0f;
    bool sum = t < NSUM;
    if (chan_mode(modes, c) >= MODE_EDGE) { // the whole block: the channel is uniform
        size_t n = (size_t)units * (STRIP * NQ);
        const float* p = lanes + ((size_t)c * nl + j) * n;
        float v[CLD];
        chain_fetch(p, n, 0, t, v);
#pragma unroll
        for (int j = 0; j < CLD; j++) cb[t + j * CT] = v[j];
        __syncthreads();
        for (int u0 = 0; u0 < units; u0 += CU) {
            bool next = u0 + CU < units; // block-uniform
            if (next) chain_fetch(p, n, u0 + CU, t, v);
            if (t < NQ) {
                int nu = min(CU, units - u0);
                for (int u = 0; u < nu; u++) {
                    for (int r = 0; r < rows; r++) {
                        float x = cb[(u * STRIP + r) * NQ + t];
                        if (sum) tot = tot + (double)x;
                        else m = gmax(m, x);
                    }
                }
            }
            __syncthreads(); // the adds are done with cb
            if (next) {
#pragma unroll
                for (int j = 0; j < CLD; j++) cb[t + j * CT] = v[j];
            }
            __syncthreads(); // the next batch is in
        }
    }
    if (t < NQ) sums[((size_t)c * ns + k) * NQ + t] = sum ? tot : (double)m;
}

// merge: the strips' sums of one scale in strip order (cpu/zensim merges
// them so), into res[scale][c][q]; thread c·NQ + q. The strips' values
// come in batches of MB, loaded together before they are added in
// order, so that the chain waits for one load latency per batch rather
// than per strip.
#define MB 32 // merge: strips per batch

extern "C" __global__ void merge(const double* sums, int h, int scale, double* res) {
    int i = threadIdx.x;
    if (i >= 3 * NQ) return;
    int c = i / NQ, q = i % NQ, ns = (h + STRIP - 1) / STRIP;
    const double* p = sums + (size_t)c * ns * NQ + q;
    double t = 0.0;
    float m = 0.0f;
    for (int k0 = 0; k0 < ns; k0 += MB) {
        double v[MB];
#pragma unroll
        for (int j = 0; j < MB; j++) v[j] = k0 + j < ns ? p[(size_t)(k0 + j) * NQ] : 0.0;
#pragma unroll
        for (int j = 0; j < MB; j++) {
            if (k0 + j < ns) {
                if (q < NSUM) t = t + v[j];
                else m = gmax(m, (float)v[j]);
            }
        }
    }
    res[(scale * 3 + c) * NQ + q] = q < NSUM ? t : (double)m;
}
