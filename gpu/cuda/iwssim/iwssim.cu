// IW-SSIM kernels (piq 0.8.0's information_weighted_ssim, as cpu/iwssim
// reproduces it): the distorted image's half of a score, in double, doing
// the CPU reference's float64 operations in its order. NVRTC runs with
// --fmad=false (no product is fused into a sum) and IEEE division, so a
// plain C expression is the Go expression it is written after, and the
// row sums are the reference's sequential sums: the score comes out as
// cpu/iwssim's bit for bit (on amd64, where Go does not fuse either). The
// one library function the reference calls per pixel, math.Log2, is
// rewritten below (go_log2) with Go's own algorithm and constants rather
// than CUDA's log2, which may round differently.
//
// The distorted image's passes are those of the WGSL kernels
// (wgsl/iwssim_*.wgsl), which do the same in float32:
//
//	unpack   raw 8/16-bit samples -> luminance (v/max·255, rgb2yiq's Y)
//	pyramid  down_x, down_y, up_x, up_y per level: band k, low-pass k+1
//	hpass    per scale: the 11-tap Gaussian and the 3-sums along x of
//	         a, a², a·b (a distorted, b reference)
//	terms    per region row (one block): the Gaussian along y, cs, the
//	         information weight iw, and the row's Σ cs·iw and Σ iw
//
// The reference's (which WebGPU leaves to the CPU) reuse unpack and the
// pyramid, then per scale
//
//	rhpass, rstats  its Gaussian and 3×3 statistics on the region
//	cov             the neighbourhood covariance's sums and the band's
//	                largest |y| per block row (read back; the host
//	                decides flatness and solves the eigenvalue problem)
//	mahal           vᵀC⁻¹v/N per block from the inverse's coefficients
//
// The host prepends the constants (consts.go) as exact hexadecimal
// literals. Planes are row-major doubles; hpass writes three planes of
// h×rw (a, a², a·b) into g and into bx, one after the other.

typedef unsigned char u8;

// Launch geometry; the host uses the same numbers (kernels.go).
#define BX 32  // pixel kernels: block width
#define BY 8   // block height
#define RT 128 // terms: threads per block (one region row), values per round
#define CT 64  // cov: threads per block (one block row, a thread per pair)

// The Gaussian window's radius and the crop that lines the 3×3 blocks up
// with the SSIM maps (cpu/iwssim/params.go: gaussRad, iwCrop).
#define GRAD 5   // region row i is band row i + GRAD
#define IWCROP 4 // a region row's 3×3 block starts at band row i + IWCROP

// ---------------------------------------------------------------------------
// Go's math.Log2 for the finite positive values met here (and its special
// cases), operation for operation: Frexp, then Log (FreeBSD's e_log.c
// algorithm, as both Go's pure Go log and its amd64 assembly evaluate it)
// times 1/Ln2 plus the exponent, exact powers of two exactly.

// go_frexp is math.Frexp for a finite, non-zero x: x = frac·2^exp with
// frac in [½, 1).
__device__ __forceinline__ double go_frexp(double x, int* e) {
    long long b = __double_as_longlong(x);
    int ex = 0;
    if (((b >> 52) & 0x7ff) == 0) { // subnormal: normalise first
        x = x * 0x1p52;
        b = __double_as_longlong(x);
        ex = -52;
    }
    ex += (int)((b >> 52) & 0x7ff) - 1022;
    b = (b & ~(0x7ffLL << 52)) | (1022LL << 52);
    *e = ex;
    return __longlong_as_double(b);
}

// go_log is math.Log for x in [½, 1) (what go_log2 passes it).
__device__ __forceinline__ double go_log(double x) {
    int ki;
    double f1 = go_frexp(x, &ki);
    if (f1 < GO_HSQRT2) {
        f1 = f1 * 2.0;
        ki = ki - 1;
    }
    double f = f1 - 1.0;
    double k = (double)ki;
    double s = f / (2.0 + f);
    double s2 = s * s;
    double s4 = s2 * s2;
    double t1 = s2 * (GO_L1 + s4 * (GO_L3 + s4 * (GO_L5 + s4 * GO_L7)));
    double t2 = s4 * (GO_L2 + s4 * (GO_L4 + s4 * GO_L6));
    double R = t1 + t2;
    double hfsq = 0.5 * f * f;
    return k * GO_LN2HI - ((hfsq - (s * (hfsq + R) + k * GO_LN2LO)) - f);
}

// go_log2 is math.Log2.
__device__ double go_log2(double x) {
    if (x != x || x > 0x1.fffffffffffffp1023) return x; // NaN, +Inf
    if (x < 0.0) return __longlong_as_double(0x7ff8000000000001LL); // Go's NaN
    if (x == 0.0) return __longlong_as_double((long long)0xfff0000000000000ULL); // −Inf
    int e;
    double frac = go_frexp(x, &e);
    if (frac == 0.5) return (double)(e - 1);
    return go_log(frac) * GO_INVLN2 + (double)e;
}

// ---------------------------------------------------------------------------
// Luminance.

// sample reads channel c of the pixel at byte offset off (16-bit samples
// are big-endian, as stored).
__device__ __forceinline__ int sample(const u8* raw, size_t off, int c, int bps) {
    if (bps == 2) {
        size_t o = off + 2 * (size_t)c;
        return ((int)raw[o] << 8) | (int)raw[o + 1];
    }
    return raw[off + c];
}

// unpack: rows [y0, y1) of the raw image -> scale 0's plane x (w wide):
// each sample rescaled as v / max · 255, then Y = 0.299 R + 0.587 G +
// 0.114 B for colour (gray as it is; alpha ignored), cpu/iwssim's
// luminance. The grid covers w × (y1 − y0), so that rows are converted as
// their bytes arrive.
extern "C" __global__ void unpack(const u8* raw, int w, int y0, int y1, int stride, int channels, int bps, double* x) {
    int c = blockIdx.x * BX + threadIdx.x;
    int y = y0 + blockIdx.y * BY + threadIdx.y;
    if (c >= w || y >= y1) return;
    size_t off = (size_t)y * (size_t)stride + (size_t)c * (size_t)(channels * bps);
    double maxv = bps == 2 ? 65535.0 : 255.0;
    double r = (double)sample(raw, off, 0, bps) / maxv * DATA_RANGE;
    double v = r;
    if (channels > 2) {
        double g = (double)sample(raw, off, 1, bps) / maxv * DATA_RANGE;
        double b = (double)sample(raw, off, 2, bps) / maxv * DATA_RANGE;
        v = r * LUMA_R + g * LUMA_G + b * LUMA_B;
    }
    x[y * w + c] = v;
}

// ---------------------------------------------------------------------------
// One pyramid step (cpu/iwssim's pyrStep): the plane p (w×h) gives the
// low-pass lo (wl×hl, wl = ⌈w/2⌉) and becomes the band p − up(lo).

// reflect is torch's 'reflect' padding of index i into [0, n) (pads of at
// most 2, signals of at least 11 samples: one reflection).
__device__ __forceinline__ int reflect(int i, int n) {
    if (i < 0) return -i;
    if (i >= n) return 2 * (n - 1) - i;
    return i;
}

// down_x: tmp (wl×h) = p correlated along x with PYR at even columns.
extern "C" __global__ void down_x(const double* p, int w, int h, int wl, double* tmp) {
    int j = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (j >= wl || y >= h) return;
    const double* s = p + (size_t)y * w;
    int c = 2 * j;
    double v;
    if (c >= 2 && c + 2 < w) {
        v = PYR[0] * s[c - 2] + PYR[1] * s[c - 1] + PYR[2] * s[c] + PYR[3] * s[c + 1] + PYR[4] * s[c + 2];
    } else {
        v = 0.0;
        for (int t = 0; t < 5; t++) v += PYR[t] * s[reflect(c + t - 2, w)];
    }
    tmp[(size_t)y * wl + j] = v;
}

// down_y: lo (wl×hl) = tmp correlated along y with PYR at even rows.
extern "C" __global__ void down_y(const double* tmp, int wl, int h, int hl, double* lo) {
    int j = blockIdx.x * BX + threadIdx.x;
    int i = blockIdx.y * BY + threadIdx.y;
    if (j >= wl || i >= hl) return;
    double r0 = tmp[(size_t)reflect(2 * i - 2, h) * wl + j];
    double r1 = tmp[(size_t)reflect(2 * i - 1, h) * wl + j];
    double r2 = tmp[(size_t)reflect(2 * i, h) * wl + j];
    double r3 = tmp[(size_t)reflect(2 * i + 1, h) * wl + j];
    double r4 = tmp[(size_t)reflect(2 * i + 2, h) * wl + j];
    lo[(size_t)i * wl + j] = PYR[0] * r0 + PYR[1] * r1 + PYR[2] * r2 + PYR[3] * r3 + PYR[4] * r4;
}

// up_x: tmp (w×hl) = lo zero-stuffed along x (2·wl samples), reflected
// and correlated with PYR; the inserted zeros' taps are skipped.
extern "C" __global__ void up_x(const double* lo, int wl, int hl, int w, double* tmp) {
    int j = blockIdx.x * BX + threadIdx.x;
    int i = blockIdx.y * BY + threadIdx.y;
    if (j >= w || i >= hl) return;
    const double* s = lo + (size_t)i * wl;
    int n2 = 2 * wl;
    double v;
    if (j >= 2 && j + 2 < n2) {
        int m = j >> 1;
        if ((j & 1) == 0) {
            v = PYR[0] * s[m - 1] + PYR[2] * s[m] + PYR[4] * s[m + 1];
        } else {
            v = PYR[1] * s[m] + PYR[3] * s[m + 1];
        }
    } else {
        v = 0.0;
        for (int t = 0; t < 5; t++) {
            int q = reflect(j + t - 2, n2);
            if ((q & 1) == 0) v += PYR[t] * s[q >> 1];
        }
    }
    tmp[(size_t)i * w + j] = v;
}

// up_y: p (w×h) −= tmp zero-stuffed along y (2·hl rows), reflected and
// correlated with PYR: the two or three taps that land on even rows.
extern "C" __global__ void up_y(const double* tmp, int w, int h, int hl, double* p) {
    int j = blockIdx.x * BX + threadIdx.x;
    int y = blockIdx.y * BY + threadIdx.y;
    if (j >= w || y >= h) return;
    int m2 = 2 * hl;
    double v = 0.0;
    int n = 0;
    for (int t = 0; t < 5; t++) {
        int q = reflect(y + t - 2, m2);
        if ((q & 1) == 0) {
            double term = PYR[t] * tmp[(size_t)(q >> 1) * w + j];
            v = n == 0 ? term : v + term;
            n++;
        }
    }
    size_t o = (size_t)y * w + j;
    p[o] = p[o] - v;
}

// ---------------------------------------------------------------------------
// Statistics on the region of one scale (cpu/iwssim's stats.go).

// gauss11 is the 11-tap Gaussian at s[0..10], the symmetric taps added
// before they are multiplied (gaussRow, gaussCol).
__device__ __forceinline__ double gauss11(const double* s) {
    return GAUSS[0] * (s[0] + s[10]) + GAUSS[1] * (s[1] + s[9]) + GAUSS[2] * (s[2] + s[8]) + GAUSS[3] * (s[3] + s[7]) +
           GAUSS[4] * (s[4] + s[6]) + GAUSS[5] * s[5];
}

// hpass: for every row r of the w×h band and region column j (rw = w −
// 10 of them), the Gaussian along x of a, a² and a·b at columns j..j+10
// into g's three h×rw planes and, with box, the 3-sums at columns
// j+4..j+6 into bx's (the rows terms reads are 4..h−5; every row is
// written).
extern "C" __global__ void hpass(const double* x, const double* y, int w, int h, int rw, int box, double* g, double* bx) {
    int j = blockIdx.x * BX + threadIdx.x;
    int r = blockIdx.y * BY + threadIdx.y;
    if (j >= rw || r >= h) return;
    const double* xr = x + (size_t)r * w + j;
    const double* yr = y + (size_t)r * w + j;
    double a[11], sq[11], p[11];
    for (int t = 0; t < 11; t++) {
        double v = xr[t];
        a[t] = v;
        sq[t] = v * v;
        p[t] = v * yr[t];
    }
    size_t pl = (size_t)h * rw;
    size_t o = (size_t)r * rw + j;
    g[o] = gauss11(a);
    g[pl + o] = gauss11(sq);
    g[2 * pl + o] = gauss11(p);
    if (box) {
        bx[o] = a[IWCROP] + a[IWCROP + 1] + a[IWCROP + 2];
        bx[pl + o] = sq[IWCROP] + sq[IWCROP + 1] + sq[IWCROP + 2];
        bx[2 * pl + o] = p[IWCROP] + p[IWCROP + 1] + p[IWCROP + 2];
    }
}

__device__ __forceinline__ double relu(double v) { return v < 0.0 ? 0.0 : v; }

// column11 gathers rows r..r+10 of column j of a plane rw wide.
__device__ __forceinline__ void column11(const double* plane, int rw, int r, int j, double* s) {
    for (int t = 0; t < 11; t++) s[t] = plane[(size_t)(r + t) * rw + j];
}

// info_weight is cpu/iwssim's infoWeight: Σ_k log2(1 + (q·λ_k + b)/σ²)
// as the logarithm of the product of the factors (λ_k/σ² in lam, b/σ²
// in b), the logarithms summed where the product leaves 2^±1000, zeroed
// below eps.
__device__ double info_weight(double q, double b, const double* lam, int n) {
    double c = 1.0 + b;
    double p = 1.0;
    for (int k = 0; k < n; k++) p *= c + q * lam[k];
    double iw;
    if (p > 0x1p-1000 && p < 0x1p1000) {
        iw = go_log2(p);
    } else {
        iw = 0.0;
        for (int k = 0; k < n; k++) iw += go_log2(c + q * lam[k]);
    }
    if (iw < IW_EPS) return 0.0;
    return iw;
}

// terms: one block per region row i = i0 + blockIdx.x (one block per
// owned row: all rh of them for a whole image, a strip's own for a crop)
// of a scale whose band is h tall and region rw×rh. Each round the threads compute
// RT consecutive columns' terms into shared memory (the Gaussian along y
// of hpass's planes, cs and, with nlam > 0, the information weight against
// the reference's planes mu, vr, bm, bv, ss and λ/σ² at lam[lamOff..]),
// then every thread runs the same sequential sum over them, so that the
// row's sums are the CPU reference's left-to-right sums; thread 0 writes
// sums[2·(rowOff+i)] = Σ cs·iw and [+1] = Σ iw (for a crop rowOff
// includes the crop's first row, so that each row's sums land where the
// whole image's would). With nlam = 0 (the last
// scale) the terms are the full SSIM and [+1] is 0 (bm, bv, ss unread).
extern "C" __global__ void terms(const double* g, const double* bx, const double* mu, const double* vr, const double* bm, const double* bv, const double* ss, const double* lam, int h, int rw, int rh, int nlam, int lamOff, int i0, int rowOff, double* sums) {
    __shared__ double tn[RT];
    __shared__ double td[RT];
    __shared__ double ls[16];
    int i = i0 + blockIdx.x;
    if (i >= rh) return;
    int tid = threadIdx.x;
    if (tid < 16) ls[tid] = tid < nlam ? lam[lamOff + tid] : 0.0;
    __syncthreads();
    size_t pl = (size_t)h * rw;
    double sn = 0.0, sd = 0.0;
    for (int j0 = 0; j0 < rw; j0 += RT) {
        int j = j0 + tid;
        if (j < rw) {
            double s[11];
            column11(g, rw, i, j, s);
            double mx = gauss11(s);
            column11(g + pl, rw, i, j, s);
            double ex2 = gauss11(s);
            column11(g + 2 * pl, rw, i, j, s);
            double exy = gauss11(s);
            size_t o = (size_t)i * rw + j;
            double my = mu[o], vy = vr[o];
            double sxx = relu(ex2 - mx * mx);
            double sxy = exy - mx * my;
            double cs = (2.0 * sxy + C2) / (sxx + vy + C2);
            if (nlam == 0) {
                // piq's last level: the full SSIM (luminance × cs).
                tn[tid] = (2.0 * (mx * my) + C1) / (mx * mx + my * my + C1) * cs;
                td[tid] = 0.0;
            } else {
                // _information_content: the 3×3 statistics, the gain gn and
                // the distortion variance vv of the model x = gn·y + v.
                size_t a0 = (size_t)(i + IWCROP) * rw + j;
                double x0 = bx[a0], x1 = bx[a0 + rw], x2 = bx[a0 + 2 * rw];
                double q0 = bx[pl + a0], q1 = bx[pl + a0 + rw], q2 = bx[pl + a0 + 2 * rw];
                double p0 = bx[2 * pl + a0], p1 = bx[2 * pl + a0 + rw], p2 = bx[2 * pl + a0 + 2 * rw];
                double bmx = BOX * (x0 + x1 + x2);
                double bxx = relu(BOX * (q0 + q1 + q2) - bmx * bmx);
                double bxy = BOX * (p0 + p1 + p2) - bmx * bm[o];
                double byy = bv[o];
                double gn = bxy / (byy + IW_EPS);
                double vv = bxx - gn * bxy;
                if (byy < IW_EPS) {
                    gn = 0.0;
                    vv = bxx;
                }
                if (bxx < IW_EPS) {
                    gn = 0.0;
                    vv = 0.0;
                }
                double iw = info_weight((vv + (1.0 + gn * gn) * NSQ) * ss[o], NSQ * vv * INV_NSQ2, ls, nlam);
                tn[tid] = cs * iw;
                td[tid] = iw;
            }
        }
        __syncthreads();
        int m = min(RT, rw - j0);
        for (int k = 0; k < m; k++) {
            sn += tn[k];
            sd += td[k];
        }
        __syncthreads();
    }
    if (tid == 0) {
        sums[2 * (rowOff + i)] = sn;
        sums[2 * (rowOff + i) + 1] = sd;
    }
}

// ---------------------------------------------------------------------------
// The reference's half (cpu/iwssim's Prepare), on the device: its
// pyramid comes from unpack and the pyramid kernels above; then per scale
// rhpass and rstats (refStats), and at the weighted scales cov (the
// neighbourhood covariance's sums per block row, covariance) and, once
// the host has done the 10×10 eigenvalue step, mahal (vᵀC⁻¹v/N,
// mahalanobis).

// rhpass: hpass for the reference alone: the Gaussian along x of b and
// b² into g's first two h×rw planes and, with box, their 3-sums into
// bx's.
extern "C" __global__ void rhpass(const double* y, int w, int h, int rw, int box, double* g, double* bx) {
    int j = blockIdx.x * BX + threadIdx.x;
    int r = blockIdx.y * BY + threadIdx.y;
    if (j >= rw || r >= h) return;
    const double* yr = y + (size_t)r * w + j;
    double a[11], sq[11];
    for (int t = 0; t < 11; t++) {
        double v = yr[t];
        a[t] = v;
        sq[t] = v * v;
    }
    size_t pl = (size_t)h * rw;
    size_t o = (size_t)r * rw + j;
    g[o] = gauss11(a);
    g[pl + o] = gauss11(sq);
    if (box) {
        bx[o] = a[IWCROP] + a[IWCROP + 1] + a[IWCROP + 2];
        bx[pl + o] = sq[IWCROP] + sq[IWCROP + 1] + sq[IWCROP + 2];
    }
}

// rstats: the reference's statistics at region position (i, j): the
// Gaussian mean mu and relu'd variance vr and, with box, the 3×3 mean bm
// and relu'd variance bv (bm, bv unread otherwise).
extern "C" __global__ void rstats(const double* g, const double* bx, int h, int rw, int rh, int box, double* mu, double* vr, double* bm, double* bv) {
    int j = blockIdx.x * BX + threadIdx.x;
    int i = blockIdx.y * BY + threadIdx.y;
    if (j >= rw || i >= rh) return;
    size_t pl = (size_t)h * rw;
    double s[11];
    column11(g, rw, i, j, s);
    double m = gauss11(s);
    column11(g + pl, rw, i, j, s);
    double e2 = gauss11(s);
    size_t o = (size_t)i * rw + j;
    mu[o] = m;
    vr[o] = relu(e2 - m * m);
    if (box) {
        size_t a0 = (size_t)(i + IWCROP) * rw + j;
        double mb = BOX * (bx[a0] + bx[a0 + rw] + bx[a0 + 2 * rw]);
        bm[o] = mb;
        bv[o] = relu(BOX * (bx[pl + a0] + bx[pl + a0 + rw] + bx[pl + a0 + 2 * rw]) - mb * mb);
    }
}

// lin_index is cpu/iwssim's linearIndex for child position r: the source
// samples and weights of output sample 2r − 1 of an in → out bilinear
// resize (align_corners=False; scale = in / out), in its float64
// operations.
__device__ __forceinline__ void lin_index(double scale, int in, int r, int* a, int* b, double* w0, double* w1) {
    double src = scale * ((double)(2 * r - 1) + 0.5) - 0.5;
    if (src < 0.0) src = 0.0;
    int i0 = (int)src;
    *a = i0;
    *b = i0 < in - 1 ? i0 + 1 : i0;
    double l1 = src - (double)i0;
    *w0 = 1.0 - l1;
    *w1 = l1;
}

// parent_row is child row r of the parent band (wp×hp in the image)
// enlarged to its child's size (_image_enlarge, cpu/iwssim's enlarger):
// the two parent rows and their weights, and the columns' resize scale,
// computed once per row. The weights depend on the image's hp, not a
// crop's, so r is an image row and the parent plane par holds the image's
// parent rows from pro on (0 for a whole image; a strip's crop starts
// there at the parent's scale).
struct parent_row {
    const double* pa;
    const double* pb;
    double h0, h1, cs;
    int wp;
};

__device__ __forceinline__ parent_row parent_row_at(const double* par, int wp, int hp, int pro, int r) {
    parent_row p;
    int r0 = 0, r1 = 0;
    lin_index((double)hp / (double)(4 * hp - 3), hp, r, &r0, &r1, &p.h0, &p.h1);
    p.pa = par + (size_t)(r0 - pro) * wp;
    p.pb = par + (size_t)(r1 - pro) * wp;
    p.cs = (double)wp / (double)(4 * wp - 3);
    p.wp = wp;
    return p;
}

// parent_at is the enlarged parent at child column c ≥ 1 of the row (the
// enlarger's row).
__device__ __forceinline__ double parent_at(const parent_row& p, int c) {
    int c0, c1;
    double v0, v1;
    lin_index(p.cs, p.wp, c, &c0, &c1, &v0, &v1);
    return p.h0 * (v0 * p.pa[c0] + v1 * p.pa[c1]) + p.h1 * (v0 * p.pb[c0] + v1 * p.pb[c1]);
}

// component is component k of the neighbourhood vector centred at (r, c)
// of the w-wide band y: y[r − ny][c − nx] for k = 3(ny+1) + (nx+1), and
// the enlarged parent (row pr) for k = 9.
__device__ __forceinline__ double component(const double* y, int w, const parent_row& pr, int k, int r, int c) {
    if (k == 9) return parent_at(pr, c);
    return y[(size_t)(r + 1 - k / 3) * w + (c + 1 - k % 3)];
}

// row_max_abs is the largest |y| over the w samples at row, as
// cpu/iwssim's isFlatBand looks at them: fabs is exact and a comparison
// rounds nothing, so the host's flatness test on the maximum decides as
// the CPU's does sample by sample (a NaN, never greater, is skipped by
// both).
__device__ __forceinline__ double row_max_abs(const double* row, int w, double m) {
    for (int c = 0; c < w; c++) {
        double v = fabs(row[c]);
        if (v > m) m = v;
    }
    return m;
}

// cov: the block rows centred on band rows r = r0 + blockIdx.x (n of
// them, one block each, CT threads) of a w×h band (a whole image's, or a
// strip's crop whose row 0 is the image's row ro, in an image whose band
// has himg rows) with nn components (10 with a parent, wp wide, hpi rows
// in the image, its plane par hp rows from the image's row pro; else 9).
// Block row i = r + ro − 1 of the image: thread p < np takes the p-th
// pair (a ≤ b, in the upper triangle's row order) and writes Σ_c v_a·v_b
// over the row's centres c = 1..w−2 to sums[off + i·(np+1) + p], summed
// as cpu/iwssim's dot does (four interleaved partial sums, added pairwise
// at the end). Thread np (one of the spare threads: np ≤ 55 < CT) writes
// the largest |y| of band row r (and of the image's row 0 in its first
// block row, of its last row in its last, so that the block rows cover
// every sample once) to sums[off + i·(np+1) + np]: the host takes the
// band's maximum from them and decides whether the band is flat
// (cpu/iwssim.FlatBandLimit), which zeroes its model. The sums go where
// the whole image's would, so strips that own disjoint centre rows fill
// the image's table and the host adds it in the same order.
extern "C" __global__ void cov(const double* y, const double* par, int w, int h, int wp, int hp, int hpi, int nn, int r0, int n, int ro, int himg, int pro, int off, double* sums) {
    int b0 = blockIdx.x;
    int p = threadIdx.x;
    int np = nn * (nn + 1) / 2;
    if (b0 >= n || p > np) return;
    int r = r0 + b0;
    int i = r + ro - 1;
    size_t o = (size_t)off + (size_t)i * (np + 1) + p;
    if (p == np) {
        double m = row_max_abs(y + (size_t)r * w, w, 0.0);
        if (i == 0) m = row_max_abs(y + (size_t)(r - 1) * w, w, m);
        if (i == himg - 3) m = row_max_abs(y + (size_t)(r + 1) * w, w, m);
        sums[o] = m;
        return;
    }
    int a = 0, q = p;
    while (q >= nn - a) {
        q -= nn - a;
        a++;
    }
    int b = a + q;
    int nc = w - 2;
    parent_row pr = {};
    if (nn == 10) pr = parent_row_at(par, wp, hpi, pro, r + ro);
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int j = 0;
    for (; j + 4 <= nc; j += 4) {
        s0 += component(y, w, pr, a, r, 1 + j) * component(y, w, pr, b, r, 1 + j);
        s1 += component(y, w, pr, a, r, 2 + j) * component(y, w, pr, b, r, 2 + j);
        s2 += component(y, w, pr, a, r, 3 + j) * component(y, w, pr, b, r, 3 + j);
        s3 += component(y, w, pr, a, r, 4 + j) * component(y, w, pr, b, r, 4 + j);
    }
    for (; j < nc; j++) s0 += component(y, w, pr, a, r, 1 + j) * component(y, w, pr, b, r, 1 + j);
    sums[o] = (s0 + s1) + (s2 + s3);
}

// mahal: ss = vᵀC⁻¹v/N at region position (i, j) (centre (i+5, j+5)) of a
// w×h band with nn components, for the n region rows from i0 on (all of
// them for a whole image, a strip's own for a crop whose row 0 is the
// image's row ro; the parent as in cov), from the quadratic form's
// coefficients at quad[qOff..] (the upper triangle, off-diagonal entries
// doubled): Σ_a v_a · (Σ_{b≥a} quad_ab · v_b), then / nn, in
// mahalanobis' order.
extern "C" __global__ void mahal(const double* y, const double* par, const double* quad, int w, int h, int wp, int hp, int hpi, int nn, int i0, int n, int ro, int pro, int qOff, double* ss) {
    int j = blockIdx.x * BX + threadIdx.x;
    int i = i0 + blockIdx.y * BY + threadIdx.y;
    int rw = w - 2 * GRAD, rh = h - 2 * GRAD;
    if (j >= rw || i >= rh || i >= i0 + n) return;
    int r = i + GRAD, c = j + GRAD;
    parent_row pr = {};
    if (nn == 10) pr = parent_row_at(par, wp, hpi, pro, r + ro);
    double v[10];
    for (int k = 0; k < nn; k++) v[k] = component(y, w, pr, k, r, c);
    const double* qd = quad + qOff;
    double out = 0.0;
    int kq = 0;
    for (int a = 0; a < nn; a++) {
        double acc = qd[kq] * v[a];
        kq++;
        for (int b = a + 1; b < nn; b++) {
            acc += qd[kq] * v[b];
            kq++;
        }
        out += acc * v[a];
    }
    ss[(size_t)i * rw + j] = out / (double)nn;
}
