// The INT8 stem's convolution on its space-to-depth copy (cuda_qgemm.c: a
// 7x7 stride-2 conv over C <= 4 channels runs as a 4x4 stride-1 conv over
// the 16-channel copy, K = 256): pr_cu_igemm's contract restricted to C 16,
// kh = kw = 4, stride 1, no dilation, Nout % 16 == 0, and the fast epilogue
// without a residual (int8 / uint8 NHWC y, ReLU or none).
//
// Why not the igemm tiles (0.67 ms at b256, 88 TOPS): each block gathers
// its A tile as K = 256 bytes a row (16 taps of 16 bytes: each input pixel
// read 16 times from L2), refetches the 16 KB of weights, and requantizes
// through the int <-> float units with no overlap. Here a block tile is 64
// output pixels of one output row: its A rows are the 4 input rows x 67
// pixels (a 4.3 KB strip) in shared memory, and A's row m, tap (r, s) is
// the strip's pixel (r, m + s): ldmatrix takes a row address per lane, so
// the im2col never exists. The weights live in registers (each warp's 32
// columns x 256 k: 64 registers) for the whole persistent loop; the next
// tile's strip loads (cp.async) while this one computes; the epilogue
// requantizes without conversions but the accumulator's (cu_igemm_epi.cuh's
// top: same operations, same bytes as the igemm tiles) into a byte stage,
// then 16-byte stores of the tile's contiguous rows.
//
// 4 warps, 2 x 2: warp (wm, wn) owns rows 32 wm .. + 31 and columns
// 32 wn .. + 31 of the 64 x 64 block tile (mma.sync m16n8k32; a uint8 x runs
// the u8 x s8 form with zero padding, biased storage the s8 form with -128
// padding and acc_off, as cu_igemm_wg.cu).
//
// With the MaxPool 3x3 stride 2 pad 1 after it fused (pr_cu_stem_pool_s8,
// POOL): a block owns a unit of R pooled rows of one image and computes the
// 2R + 1 conv rows they read (the first and last clipped to the image; the
// row between two units is computed by both), each row as its TPR 64-pixel
// tiles in order. The tile's requantized bytes in the byte stage are pooled
// there: thread (j, c) takes pooled column 32 ct + j, channels 16 c .. + 15,
// the byte max of conv columns 2j - 1, 2j, 2j + 1 of the tile (column -1: the
// previous tile's column 63, kept in `carry`), then folds that into its
// pooled row's running max (pacc, shared) and stores a pooled row's 16 bytes
// after its last conv row. Max of the bytes conv-then-MaxPool would compare
// (signed for int8 y and biased storage, unsigned for uint8): the same bytes.
// Neither the 112 x 112 output nor the MaxPool's pass over it exist. R: the
// fewest conv rows on the busiest block (launch); warps 1 x 4 by default here.
#include "backends/cuda/cu_igemm_epi.cuh"
#include "backends/cuda/cu_mma.cuh"

using namespace prmma;

namespace {

constexpr int TW = 64, BNB = 64, T = 128, KS = 8; // tile pixels, columns, threads, k32 steps
constexpr int SW = TW + 3;                       // strip width (pixels)
constexpr int SP = BNB + 16;                     // byte stage row pitch

template <bool U8>
__device__ __forceinline__ void mma8(int *c, const uint32_t *a, const uint32_t *b) {
    if (U8)
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// WM x (4 / WM) warps: warp (wm, wn) owns TMW = 64 / WM rows and TNW = 64 / (4 / WM) columns
// (WM 2: 32 x 32, 64 weight registers, 3 blocks an SM; WM 1: 64 x 16, 32, 4 blocks)
constexpr int MAXTPR = 4; // POOL: conv output rows of at most 4 tiles (OW <= 256)

// POOL's geometry: pooled rows / columns, R pooled rows a unit, NB units an image
struct stem_pool {
    int PH, PW, R, NB;
};

__device__ __forceinline__ uint4 vmax16(uint4 a, uint4 b, bool u) {
    if (u) return make_uint4(__vmaxu4(a.x, b.x), __vmaxu4(a.y, b.y), __vmaxu4(a.z, b.z),
                             __vmaxu4(a.w, b.w));
    return make_uint4(__vmaxs4(a.x, b.x), __vmaxs4(a.y, b.y), __vmaxs4(a.z, b.z),
                      __vmaxs4(a.w, b.w));
}

template <bool U8, int WM, bool POOL>
__global__ void __launch_bounds__(T, WM == 1 ? 4 : 3)
    k_stem(const signed char *__restrict__ x, const signed char *__restrict__ w, pr_cu_igemm p,
           pr_cu_qepi q, int NT, int TPR, stem_pool pl) {
    __shared__ __align__(128) unsigned char strip[2][4 * SW * 16];
    __shared__ __align__(16) unsigned char stage[TW * SP];
    __shared__ uint4 pacc[POOL ? MAXTPR : 1][POOL ? T : 1]; // POOL: running maxima
    __shared__ uint4 carry[POOL ? 4 : 1];                   // POOL: the last tile's column 63
    constexpr int WN = 4 / WM, TMW = TW / WM, TNW = BNB / WN, MI = TMW / 16, NJ = TNW / 8;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp / WN, wn = warp % WN;
    const int g = lane >> 2, t4 = lane & 3;
    const int n0 = blockIdx.y * BNB;
    const int Nout = (int)p.Nout;
    const bool xpad = p.x_u8 == PR_CU_X_U8B; // biased x: the real zero is stored 0x80

    // this warp's weights: b[ks][j] = the k32 step ks of column n0 + TNW wn + 8 j + g
    uint32_t bf[KS][NJ][2];
#pragma unroll
    for (int j = 0; j < NJ; j++) {
        int n = n0 + wn * TNW + j * 8 + g;
        const signed char *wr = w + (int64_t)(n < Nout ? n : 0) * 256 + t4 * 4;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            bf[ks][j][0] = n < Nout ? *(const uint32_t *)(wr + ks * 32) : 0u;
            bf[ks][j][1] = n < Nout ? *(const uint32_t *)(wr + ks * 32 + 16) : 0u;
        }
    }
    // per column pair: scale, bias, acc_off (cu_igemm_epi.cuh's igemm_pre)
    igemm_col2 cs[NJ];
#pragma unroll
    for (int j = 0; j < NJ; j++) {
        int n = n0 + wn * TNW + j * 8 + t4 * 2;
        cs[j] = igemm_cols(q, n, n < Nout);
    }
    const bool pre = q.pre.kind == ACT_RELU, post = q.post.kind == ACT_RELU;
    const bool u8y = q.ydt == DT_U8;
    const float lo = u8y ? 0.0f : -128.0f, hi = u8y ? 255.0f : 127.0f, yinv = q.y_inv;
    const uint32_t yflip = q.y_bias ? 0x8080u : 0u;

    // tile t: image b, output row oy, first column ox0 (32-bit: NT < 2^31, checked by the
    // launcher; 64-bit divisions here cost more issue slots than the tile's MMAs)
    const int OH = (int)p.OH, H = (int)p.H, W = (int)p.W;
    auto tile_at = [&](int t, int &b, int &oy, int &ox0) {
        int r = t / TPR;
        ox0 = (t - r * TPR) * TW;
        b = r / OH;
        oy = r - b * OH;
    };
    auto load = [&](int buf, int b, int oy, int ox0) {
        const signed char *xb = x + (int64_t)b * H * W * 16;
        for (int idx = tid; idx < 4 * SW; idx += T) {
            int r = idx / SW, c = idx - r * SW;
            int iy = oy - p.ph + r, ix = ox0 - p.pw + c;
            bool ok = iy >= 0 && iy < H && ix >= 0 && ix < W;
            unsigned char *dst = &strip[buf][idx * 16];
            if (xpad && !ok)
                *(uint4 *)dst = make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u);
            else
                cp16(smem_u32(dst), ok ? xb + ((int64_t)iy * W + ix) * 16 : x, ok);
        }
    };

    const int step = gridDim.x;
    int t = blockIdx.x, nb_ = 0, noy = 0, nox = 0; // the next tile's coordinates
    // POOL: t is the unit (image b, pooled rows py0 .. py1 - 1: conv rows rs .. rs + cnt /
    // TPR - 1), ti the tile within it (conv row rs + ti / TPR, column tile ti % TPR)
    int ti = 0, npy0 = 0, npy1 = 0, nrs = 0, ncnt = 0, nct = 0;
    auto unit_at = [&](int u) {
        int k = u / pl.NB;
        nb_ = k;
        k = u - k * pl.NB;
        npy0 = k * pl.R;
        npy1 = min(npy0 + pl.R, pl.PH);
        nrs = max(2 * npy0 - 1, 0);
        ncnt = (min(2 * npy1 - 1, OH - 1) - nrs + 1) * TPR;
    };
    if (POOL) NT = (int)p.N * pl.NB;
    if (t < NT) {
        if (POOL) {
            unit_at(t);
            noy = nrs;
            nox = 0;
        } else {
            tile_at(t, nb_, noy, nox);
        }
        load(0, nb_, noy, nox);
    }
    cp_commit();
    // this lane's ldmatrix row within an m16 tile and its tap of the k32 step
    const int lrow = (lane & 7) + ((lane >> 3) & 1) * 8, lh = lane >> 4;
#pragma unroll 1
    for (int buf = 0; t < NT; buf ^= 1) {
        cp_wait<0>();
        __syncthreads(); // strip[buf] landed; the last tile's stage and strip reads done
        const int b = nb_, oy = noy, ox0 = nox;
        const int py0 = npy0, py1 = npy1, ct = nct;
        if (POOL) { // the next tile: this unit's next, or the next unit's first
            if (++ti == ncnt) {
                ti = 0;
                t += step;
                if (t < NT) unit_at(t);
            }
            if (t < NT) {
                int r = ti / TPR;
                nct = ti - r * TPR;
                noy = nrs + r;
                nox = nct * TW;
                load(buf ^ 1, nb_, noy, nox);
            }
        } else {
            t += step;
            if (t < NT) {
                tile_at(t, nb_, noy, nox);
                load(buf ^ 1, nb_, noy, nox);
            }
        }
        cp_commit();
        const int valid = (int)(p.OW - ox0 < TW ? p.OW - ox0 : TW);

        int acc[MI][NJ][4];
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int v = 0; v < 4; v++) acc[i][j][v] = 0;
        const uint32_t sbase = smem_u32(&strip[buf][0]);
        bool in[MI]; // m16 tiles inside the row (warp-uniform)
#pragma unroll
        for (int i = 0; i < MI; i++) in[i] = wm * TMW + i * 16 < valid;
        // A fragments of k32 step ks (the warp's m16 tiles), one step loaded ahead of the MMAs
        uint32_t af[2][MI][4];
        auto lda = [&](int ks, uint32_t (*a)[4]) {
            const int tap = ks * 2 + lh, r = tap >> 2, s = tap & 3;
            const uint32_t ad = sbase + (uint32_t)((r * SW + wm * TMW + lrow + s) * 16);
#pragma unroll
            for (int i = 0; i < MI; i++)
                if (in[i]) ldsm4(a[i], ad + i * 16 * 16);
        };
        lda(0, af[0]);
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            if (ks + 1 < KS) lda(ks + 1, af[(ks + 1) & 1]);
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int i = 0; i < MI; i++)
                    if (in[i]) mma8<U8>(acc[i][j], af[ks & 1][i], bf[ks][j]);
        }
        // requantize into the byte stage: c0, c1 at (row g, cols 2 t4, + 1), c2, c3 at row g + 8
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    // igemm_pre's operations (a uint8 x has no acc_off: no add)
                    const igemm_col2 &c = cs[j];
                    const int a0 = acc[i][j][h * 2], a1 = acc[i][j][h * 2 + 1];
                    float2 e = make_float2((float)(U8 ? a0 : a0 + c.o0) * c.s0 + c.b0,
                                           (float)(U8 ? a1 : a1 + c.o1) * c.s1 + c.b1);
                    if (pre || post) {
                        e.x = fmaxf(e.x, 0.0f);
                        e.y = fmaxf(e.y, 0.0f);
                    }
                    uint32_t u0 = __float_as_uint(fminf(fmaxf(e.x * yinv, lo), hi) + 12582912.0f);
                    uint32_t u1 = __float_as_uint(fminf(fmaxf(e.y * yinv, lo), hi) + 12582912.0f);
                    int row = wm * TMW + i * 16 + g + h * 8, col = wn * TNW + j * 8 + t4 * 2;
                    *(unsigned short *)&stage[row * SP + col] =
                        (unsigned short)(__byte_perm(u0, u1, 0x0040u) ^ yflip);
                }
        __syncthreads();
        if (!POOL) {
            const int64_t m0 = ((int64_t)b * OH + oy) * p.OW + ox0;
            for (int idx = tid; idx < TW * (BNB / 16); idx += T) {
                int row = idx >> 2, c = idx & 3, n = n0 + c * 16;
                if (row < valid && n < Nout)
                    *(uint4 *)((unsigned char *)q.y + (m0 + row) * q.N + n) =
                        *(const uint4 *)&stage[row * SP + c * 16];
            }
            continue;
        }
        // POOL (T == 128 threads: 32 pooled columns x 4 chunks of 16 channels)
        const bool uc = u8y && !q.y_bias; // unsigned bytes; else signed (int8, biased)
        const uint32_t lo4 = uc ? 0u : 0x80808080u;
        const int j = tid >> 2, c4 = tid & 3, px = ct * (TW / 2) + j, n = n0 + c4 * 16;
        uint4 h = make_uint4(lo4, lo4, lo4, lo4);
        if (j == 0) {
            if (ct > 0) h = carry[c4];
            carry[c4] = *(const uint4 *)&stage[(TW - 1) * SP + c4 * 16]; // for tile ct + 1
        } else {
            h = *(const uint4 *)&stage[(2 * j - 1) * SP + c4 * 16];
        }
        if (px < pl.PW && n < Nout) {
            if (2 * j < valid) h = vmax16(h, *(const uint4 *)&stage[2 * j * SP + c4 * 16], uc);
            if (2 * j + 1 < valid)
                h = vmax16(h, *(const uint4 *)&stage[(2 * j + 1) * SP + c4 * 16], uc);
            // pooled row py reads conv rows 2 py - 1 .. 2 py + 1 (clipped): stored after
            // min(2 py + 1, OH - 1)
            uint4 a = pacc[ct][tid];
            unsigned char *yb = (unsigned char *)q.y + n;
            auto put = [&](int py, uint4 v) {
                *(uint4 *)(yb + (((int64_t)b * pl.PH + py) * pl.PW + px) * q.N) = v;
            };
            if (oy & 1) {
                const int pa = (oy - 1) >> 1, pb = (oy + 1) >> 1;
                if (pa >= py0) put(pa, vmax16(a, h, uc));
                if (pb < py1) {
                    a = h;
                    if (oy == OH - 1) put(pb, a);
                }
            } else {
                a = oy == 0 ? h : vmax16(a, h, uc);
                if (oy == OH - 1) put(oy >> 1, a);
            }
            pacc[ct][tid] = a;
        }
    }
    cp_wait<0>();
}

template <bool U8, int WM, bool POOL>
int launch(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
           const pr_cu_qepi *q, int NT, int TPR, stem_pool pl) {
    auto kern = k_stem<U8, WM, POOL>;
    int dev = 0, sms = 0, occ = 0;
    cudaError_t e;
    if ((e = cudaGetDevice(&dev)) ||
        (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        (e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, T, 0)))
        return (int)e;
    if (occ < 1) return (int)cudaErrorInvalidValue;
    int gy = (int)((p->Nout + BNB - 1) / BNB);
    int gx = occ * sms / gy;
    if (gx < 1) gx = 1;
    if (POOL && pl.R > 0) { // forced (the tests)
        pl.R = pl.R < pl.PH ? pl.R : pl.PH;
        pl.NB = (pl.PH + pl.R - 1) / pl.R;
        NT = (int)(p->N * pl.NB);
    } else if (POOL) { // R: the fewest conv rows the busiest block computes, (2R + 1) a unit
        int64_t best = -1;
        for (int R = 1; R <= pl.PH; R++) {
            int64_t nb = (pl.PH + R - 1) / R, units = p->N * nb;
            int64_t cost = (units + gx - 1) / gx * (2 * R + 1);
            if (best < 0 || cost < best) {
                best = cost;
                pl.R = R;
                pl.NB = (int)nb;
            }
        }
        NT = (int)(p->N * pl.NB);
    }
    if (gx > NT) gx = NT;
    kern<<<dim3((unsigned)gx, (unsigned)gy), T, 0, s>>>(
        (const signed char *)x, (const signed char *)w, *p, *q, NT, TPR, pl);
    return launch_result();
}

// PRECIS_CUDA_STEM=2: the 1 x 4 warp layout (an experiment's switch; default 2 x 2).
// Read at each launch (the tests switch it within one process).
bool stem_wm1() {
    const char *e = getenv("PRECIS_CUDA_STEM");
    return e && !strcmp(e, "2");
}

// The checks shared by both entry points; *NT, *TPR: the tiles (of 64 pixels) and a row's.
int stem_check(const void *x, const void *w, const pr_cu_igemm *p, const pr_cu_qepi *q,
                      int64_t *NT, int64_t *TPR) {
    if (p->C != 16 || p->K != 256 || p->kh != 4 || p->kw != 4 || p->sh != 1 || p->sw != 1 ||
        p->dh != 1 || p->dw != 1 || p->Nout % 16 || q->N != p->Nout || q->z ||
        !igemm_fast_ok(q) || ((uintptr_t)x & 15) || ((uintptr_t)w & 3) ||
        ((uintptr_t)q->y & 15))
        return (int)cudaErrorInvalidValue;
    *TPR = (p->OW + TW - 1) / TW;
    *NT = p->N * p->OH * *TPR;
    if (*NT + (int64_t)2 * 65535 * 32 >= ((int64_t)1 << 31) || p->H + 8 >= (1 << 30) ||
        p->W + 8 >= (1 << 30)) // 32-bit tile indices (+ a grid's step) and coordinates
        return (int)cudaErrorInvalidValue;
    return 0;
}

template <bool POOL>
int stem_run(cudaStream_t s, const void *x, const void *w, const pr_cu_igemm *p,
             const pr_cu_qepi *q, int NT, int TPR, stem_pool pl, bool wm1) {
    if (p->x_u8 == PR_CU_X_U8) { // exact u8 x s8 sums: no 128 * sum_k w correction
        pr_cu_qepi q2 = *q;
        q2.acc_off = NULL;
        return wm1 ? launch<true, 1, POOL>(s, x, w, p, &q2, NT, TPR, pl)
                   : launch<true, 2, POOL>(s, x, w, p, &q2, NT, TPR, pl);
    }
    return wm1 ? launch<false, 1, POOL>(s, x, w, p, q, NT, TPR, pl)
               : launch<false, 2, POOL>(s, x, w, p, q, NT, TPR, pl);
}

} // namespace

extern "C" int pr_cu_stem_s8(void *stream, const void *x, const void *w, const pr_cu_igemm *p,
                             const pr_cu_qepi *q) {
    int64_t M = p->N * p->OH * p->OW, NT = 0, TPR = 0;
    if (M <= 0 || p->Nout <= 0) return 0;
    int r = stem_check(x, w, p, q, &NT, &TPR);
    if (r) return r;
    return stem_run<false>((cudaStream_t)stream, x, w, p, q, (int)NT, (int)TPR,
                           stem_pool{0, 0, 1, 1}, stem_wm1());
}

extern "C" int pr_cu_stem_pool_s8(void *stream, const void *x, const void *w,
                                  const pr_cu_igemm *p, const pr_cu_qepi *q, int64_t PH,
                                  int64_t PW) {
    int64_t M = p->N * PH * PW, NT = 0, TPR = 0;
    if (M <= 0 || p->Nout <= 0) return 0;
    int r = stem_check(x, w, p, q, &NT, &TPR);
    if (r) return r;
    // every pooled row / column reads at least one conv row / column (pads 1, ceil_mode 0)
    if (p->OH <= 0 || p->OW <= 0 || PH < 1 || PW < 1 || 2 * (PH - 1) > p->OH - 1 ||
        2 * (PW - 1) > p->OW - 1 || TPR > MAXTPR)
        return (int)cudaErrorInvalidValue;
    // PRECIS_CUDA_STEM_POOL=r<R>: R pooled rows a unit (the tests: units of several rows
    // at small batches, where the choice is 1); default the launcher's choice.
    // =w2: the 2 x 2 warp layout (A/B); default 1 x 4 (124 registers, 4 blocks an SM: at
    // b256 R 28, 512 units of 56-57 conv rows on 528 blocks, vs 2 x 2's R 19, two units of
    // ~39 rows on most of 396 blocks; ResNet-50 b256 -0.05 ms in phase 20m's A/B).
    // Read at each launch (the tests switch it within one process).
    const char *env = getenv("PRECIS_CUDA_STEM_POOL");
    int R = env && env[0] == 'r' ? atoi(env + 1) : 0;
    const bool w2 = env && !strcmp(env, "w2");
    return stem_run<true>((cudaStream_t)stream, x, w, p, q, (int)NT, (int)TPR,
                          stem_pool{(int)PH, (int)PW, R > 0 ? R : 0, 1}, !w2);
}
