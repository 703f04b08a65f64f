// Butteraugli kernels, the faster variants (issue #17), compiled after
// butteraugli.cu (they use its helpers). Each computes every output with
// the same function, hence the same float operations in the same order,
// as the kernel it replaces; only which thread computes what, the tiles
// and the launch geometry differ. The host picks one family or the other
// (kernels.go: ZENMETRICS_CUDA_BA_NEW), so that one binary can time both.
//
// Why they are faster (16 MP on an H200; one plane is 64 MiB, ~17 µs of
// HBM at 4 TB/s; an SM serves one 128-byte shared-memory wavefront a
// clock):
//
//   - The 16×16 Malta kernels are bound by shared-memory bandwidth: 159
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
//   - The separable blurs read their whole kernel from shared memory per
//     output (33 loads for LF) and keep few bytes in flight per thread
//     (1.5 loads before the barrier, with at most 2048 threads an SM).
//     Here each thread blurs 4 outputs from one register window (36 loads
//     for 4 LF outputs), rows_* read the window as float4 for 2 rows (9-10
//     loads in flight), and the column tiles are 4× taller (3-24 loads in
//     flight; the column halo is re-read from L2 2× instead of 5× for LF).
//   - opsin: see opsin_v2.

// ---------------------------------------------------------------------------
// opsin by columns: blocks of OVX×OVY threads, each thread 2 outputs (rows
// 2ty, 2ty+1) of the block's OVX×OVH. A warp is one tile row (no bank
// conflicts: the 16×16 kernel's warps span two rows of its 20-wide tile
// and hit 4 banks twice), the halo is 1.41 samples per output instead of
// 1.56, and the vertical pass reads 6 rows for 2 outputs instead of 10.

#define OVX 32               // block width (one warp per tile row)
#define OVY 8                // block height in threads
#define OVH (2 * OVY)        // output rows per block
#define OVTW (OVX + 4)       // tile width with the mirrored halo
#define OVTH (OVH + 4)       // tile height
#define OVTN (OVTW * OVTH)
#define OVNT (OVX * OVY)

extern "C" __global__ void opsin_v2(const float* lin_r, const float* lin_g, const float* lin_b, int w, int h,
                                    float intensity, float* out_x, float* out_y, float* out_b) {
    __shared__ float src[3][OVTN];
    __shared__ float hor[3][OVTH * OVX];
    int li = threadIdx.y * OVX + threadIdx.x;
    int x0 = blockIdx.x * OVX - 2, y0 = blockIdx.y * OVH - 2;
#pragma unroll
    for (int k = 0; k < (OVTN + OVNT - 1) / OVNT; k++) {
        int i = li + k * OVNT;
        if (i < OVTN) {
            int sx = mirror(x0 + i % OVTW, w);
            int sy = mirror(y0 + i / OVTW, h);
            size_t j = (size_t)sy * w + sx;
            src[0][i] = lin_r[j];
            src[1][i] = lin_g[j];
            src[2][i] = lin_b[j];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < (OVTH * OVX + OVNT - 1) / OVNT; k++) {
        int i = li + k * OVNT;
        if (i < OVTH * OVX) {
            int b = (i / OVX) * OVTW + i % OVX;
            for (int c = 0; c < 3; c++) hor[c][i] = sep5(src[c], b, 1);
        }
    }
    __syncthreads();
    int x = blockIdx.x * OVX + threadIdx.x, y = blockIdx.y * OVH + 2 * threadIdx.y;
    if (x >= w || y >= h) return;
    // The vertical pass from a window of the column's 6 rows.
    float v[3][6];
#pragma unroll
    for (int c = 0; c < 3; c++) {
#pragma unroll
        for (int k = 0; k < 6; k++) v[c][k] = hor[c][(2 * threadIdx.y + k) * OVX + threadIdx.x];
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (y + r >= h) break;
        float r0 = sep5(v[0], r, 1) * intensity;
        float g0 = sep5(v[1], r, 1) * intensity;
        float b0 = sep5(v[2], r, 1) * intensity;
        int cc = (2 * threadIdx.y + r + 2) * OVTW + threadIdx.x + 2;
        float r1 = src[0][cc] * intensity, g1 = src[1][cc] * intensity, b1 = src[2][cc] * intensity;
        size_t i = (size_t)(y + r) * w + x;
        opsin_px(r0, g0, b0, r1, g1, b1, out_x + i, out_y + i, out_b + i);
    }
}

// ---------------------------------------------------------------------------
// Malta, by columns: blocks of MCW×MCH threads, each thread MCR outputs
// down its column; the tile (with the 4-pixel halo) is MCTW×MCTH per
// difference image.

#define MCW 32                 // block width: one warp per tile row
#define MCH 8                  // block height in threads
#define MCR 4                  // outputs per thread, down its column
#define MCTW (MCW + 8)         // tile width with the halo
#define MCTH (MCH * MCR + 8)   // tile height with the halo
#define MCTN (MCTW * MCTH)
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
// image) of the block whose tile starts at pixel (bx, by), as MALTA_TILE
// does, but every load of the thread's MCNI samples is issued before the
// first difference is computed: one memory round trip per block instead
// of one per sample (the fill's registers are free: the sums need more).
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
// malta_hf + malta_lf + malta_lf in that order (the 16×16 kernels' sum).
__device__ __forceinline__ void malta_col(const float* mt, int b, float* ms) {
#pragma unroll
    for (int j = 0; j < MCR; j++) ms[j] = malta_hf<MCTW>(mt + b + j * MCTW);
#pragma unroll
    for (int j = 0; j < MCR; j++) ms[j] = ms[j] + malta_lf<MCTW>(mt + MCTN + b + j * MCTW);
#pragma unroll
    for (int j = 0; j < MCR; j++) ms[j] = ms[j] + malta_lf<MCTW>(mt + 2 * MCTN + b + j * MCTW);
}

// malta_x_v2 is malta_x by columns.
extern "C" __global__ void __launch_bounds__(MALTA_BOUNDS) malta_x_v2(const float* u0, const float* u1, const float* h0, const float* h1,
                                      const float* m0, const float* m1, const float* mb0, const float* mb1,
                                      float* ac0, float* ac2, int w, int h) {
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

// malta_y_v2 is malta_y by columns.
extern "C" __global__ void __launch_bounds__(MALTA_BOUNDS) malta_y_v2(const float* u0, const float* u1, const float* h0, const float* h1,
                                      const float* m0, const float* m1, const float* act0, const float* act1,
                                      float* ac1, int w, int h) {
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
// Row blurs, 4 outputs per thread and row: blocks of RVX×RVY threads,
// thread tx of row ty blurs pixels 4tx…4tx+3 of the block's RVW columns
// in rows ty and ty+RVY (RVR rows: twice the loads in flight per thread
// before the barrier). The tile row starts P ≥ OFF columns left of the
// block (P a multiple of 4, so each thread's window is whole float4s: NV
// of them from tile column 4tx).

#define RVX 64           // rows_*_v2: block width in threads
#define RVY 4            // block height in threads
#define RVR 2            // image rows per thread row: ty, ty+RVY, …
#define RVQ 4            // outputs per thread and row, along x (one float4)
#define RVW (RVX * RVQ)  // outputs per block row
#define RVH (RVY * RVR)  // image rows per block

template <class K>
struct RowV2 {
    static constexpr int P = (K::OFF + 3) & ~3;           // tile columns left of the block
    static constexpr int TW = RVW + 2 * P;                 // tile row width
    static constexpr int NV = (P + K::OFF + RVQ + 3) / 4;  // float4 in a thread's window
    static_assert(4 * (RVX - 1) + 4 * NV <= TW, "a window runs past its tile row");
};

// row_v2_out blurs the thread's RVQ outputs of one tile row (image row y,
// first output column x) into dst.
template <class K>
__device__ __forceinline__ void row_v2_out(const float* row, float* dst, int x, int y, int w) {
    using G = RowV2<K>;
    size_t i = (size_t)y * w + x;
    if (x >= K::OFF && x + RVQ - 1 < w - K::OFF) {
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
        float o[RVQ];
#pragma unroll
        for (int j = 0; j < RVQ; j++) o[j] = fir_in<K>(v, G::P + j, 1);
        if ((reinterpret_cast<size_t>(dst + i) & 15) == 0) {
            *(float4*)(dst + i) = make_float4(o[0], o[1], o[2], o[3]);
        } else {
#pragma unroll
            for (int j = 0; j < RVQ; j++) dst[i + j] = o[j];
        }
        return;
    }
    int c = G::P + threadIdx.x * RVQ;
#pragma unroll 1
    for (int j = 0; j < RVQ; j++) {
        if (x + j < w) dst[i + j] = fir<K>(row, c + j, 1, x + j, w);
    }
}

template <class K>
__device__ void rows_v2_impl(const float* src, float* dst, int w, int h) {
    using G = RowV2<K>;
    __shared__ float4 tile4[RVH * G::TW / 4];
    float* tile = (float*)tile4;
    int x0 = blockIdx.x * RVW - G::P;
#pragma unroll
    for (int r = 0; r < RVR; r++) {
        int ty = threadIdx.y + r * RVY;
        int y = blockIdx.y * RVH + ty;
#pragma unroll
        for (int k = 0; k < (G::TW + RVX - 1) / RVX; k++) {
            int i = threadIdx.x + k * RVX;
            if (i < G::TW) {
                int xx = x0 + i;
                bool ok = y < h && xx >= 0 && xx < w;
                tile[ty * G::TW + i] = ok ? src[(size_t)y * w + xx] : 0.0f;
            }
        }
    }
    __syncthreads();
    int x = blockIdx.x * RVW + threadIdx.x * RVQ;
    if (x >= w) return;
#pragma unroll
    for (int r = 0; r < RVR; r++) {
        int ty = threadIdx.y + r * RVY;
        int y = blockIdx.y * RVH + ty;
        if (y < h) row_v2_out<K>(tile + ty * G::TW, dst, x, y, w);
    }
}

extern "C" __global__ void rows_hf_v2(const float* src, float* dst, int w, int h) { rows_v2_impl<KHF>(src, dst, w, h); }
extern "C" __global__ void rows_uhf_v2(const float* src, float* dst, int w, int h) {
    rows_v2_impl<KUHF>(src, dst, w, h);
}
extern "C" __global__ void rows_mask_v2(const float* src, float* dst, int w, int h) {
    rows_v2_impl<KMASK>(src, dst, w, h);
}

// ---------------------------------------------------------------------------
// Column blurs, 4 outputs per thread: blocks of CVX×CVY threads, thread
// (tx, ty) blurs rows 4ty…4ty+3 of the block's CVH rows at column tx. The
// tile holds the block's columns over CVH + 2·OFF rows per plane.

#define CVX 32           // cols_*_v2: block width (one warp per tile row)
#define CVY 8            // block height in threads
#define CVR 4            // outputs per thread, down its column
#define CVH (CVY * CVR)  // output rows per block

template <class K>
struct ColV2 {
    static constexpr int ROWS = CVH + 2 * K::OFF;
    static constexpr int N = ROWS * CVX;
};

// colv2_load fills one plane's column tile (zeros outside the image).
template <class K>
__device__ __forceinline__ void colv2_load(float* tile, const float* src, int w, int h) {
    int x = blockIdx.x * CVX + threadIdx.x;
    int y0 = blockIdx.y * CVH - K::OFF;
    bool xin = x < w;
#pragma unroll
    for (int k = 0; k < (ColV2<K>::ROWS + CVY - 1) / CVY; k++) {
        int r = threadIdx.y + k * CVY;
        if (r < ColV2<K>::ROWS) {
            int yy = y0 + r;
            bool ok = xin && yy >= 0 && yy < h;
            tile[r * CVX + threadIdx.x] = ok ? src[(size_t)yy * w + x] : 0.0f;
        }
    }
}

// fir_call is fir as a call: the border blocks' path, kept out of line so
// that the unrolled outputs do not copy it (the code of the interior path
// stays small).
template <class K>
__device__ __noinline__ float fir_call(const float* t, int c, int st, int p, int n) {
    return fir<K>(t, c, st, p, n);
}

// colv2_fir blurs this thread's CVR outputs (rows y0…) into o: from a
// register window of the column when every kernel lies inside the image,
// else each by fir on the tile (an output below the image is 0, unused).
template <class K>
__device__ __forceinline__ void colv2_fir(const float* tile, int y0, int h, float* o) {
    int c = (threadIdx.y * CVR + K::OFF) * CVX + threadIdx.x;
    if (y0 >= K::OFF && y0 + CVR - 1 < h - K::OFF) {
        float v[CVR + 2 * K::OFF];
#pragma unroll
        for (int k = 0; k < CVR + 2 * K::OFF; k++) v[k] = tile[c + (k - K::OFF) * CVX];
#pragma unroll
        for (int j = 0; j < CVR; j++) o[j] = fir_in<K>(v, K::OFF + j, 1);
        return;
    }
#pragma unroll
    for (int j = 0; j < CVR; j++) o[j] = y0 + j < h ? fir_call<K>(tile, c + j * CVX, CVX, y0 + j, h) : 0.0f;
}

// cols_mf_v2 is cols_mf, 4 outputs per thread.
extern "C" __global__ void cols_mf_v2(const float* t0, const float* t1, const float* t2, float* res0, float* res1,
                                      float* mf0, float* mf1, float* mf2, int w, int h) {
    constexpr int N = ColV2<KHF>::N;
    __shared__ float tile[3 * N];
    colv2_load<KHF>(tile, t0, w, h);
    colv2_load<KHF>(tile + N, t1, w, h);
    colv2_load<KHF>(tile + 2 * N, t2, w, h);
    __syncthreads();
    int x = blockIdx.x * CVX + threadIdx.x, y0 = blockIdx.y * CVH + threadIdx.y * CVR;
    if (x >= w || y0 >= h) return;
    float bx[CVR], by[CVR], bb[CVR];
    colv2_fir<KHF>(tile, y0, h, bx);
    colv2_fir<KHF>(tile + N, y0, h, by);
    colv2_fir<KHF>(tile + 2 * N, y0, h, bb);
#pragma unroll
    for (int j = 0; j < CVR; j++) {
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

// cols_uhf_v2 is cols_uhf, 4 outputs per thread.
extern "C" __global__ void cols_uhf_v2(const float* t0, const float* t1, float* hf0, float* hf1, float* out0,
                                       float* out1, int w, int h) {
    constexpr int N = ColV2<KUHF>::N;
    __shared__ float tile[2 * N];
    colv2_load<KUHF>(tile, t0, w, h);
    colv2_load<KUHF>(tile + N, t1, w, h);
    __syncthreads();
    int x = blockIdx.x * CVX + threadIdx.x, y0 = blockIdx.y * CVH + threadIdx.y * CVR;
    if (x >= w || y0 >= h) return;
    float bx[CVR], by[CVR];
    colv2_fir<KUHF>(tile, y0, h, bx);
    colv2_fir<KUHF>(tile + N, y0, h, by);
#pragma unroll
    for (int j = 0; j < CVR; j++) {
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

// cols_mask_v2 is cols_mask, 4 outputs per thread.
extern "C" __global__ void cols_mask_v2(const float* t0, float* dst, int w, int h) {
    constexpr int N = ColV2<KMASK>::N;
    __shared__ float tile[N];
    colv2_load<KMASK>(tile, t0, w, h);
    __syncthreads();
    int x = blockIdx.x * CVX + threadIdx.x, y0 = blockIdx.y * CVH + threadIdx.y * CVR;
    if (x >= w || y0 >= h) return;
    float o[CVR];
    colv2_fir<KMASK>(tile, y0, h, o);
#pragma unroll
    for (int j = 0; j < CVR; j++) {
        if (y0 + j >= h) break;
        dst[(size_t)(y0 + j) * w + x] = o[j];
    }
}
