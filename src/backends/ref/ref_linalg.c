/* Reference kernels for the matrix products of the 'linalg' family: MatMul,
 * Gemm, MatMulInteger, QLinearMatMul, Einsum. Reductions, softmax, CumSum
 * and TopK are in ref_reduce.c and ref_softmax.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "backends/ref/ref_gemm.h"
#include "backends/ref/ref_linalg.h"
#include "ir/linalg.h"

/* ------------------------------------------------------------ batched matmul */

/* numpy matmul geometry of A x B: batch dims broadcast, 1-D operands
 * promoted (A: [K] -> [1,K], B: [K] -> [K,1]). */
typedef struct mm_geom {
    int64_t M, N, K;
    int nb;                          /* batch rank */
    int64_t bdims[PR_MAX_RANK];      /* broadcast batch dims */
    int64_t sa[PR_MAX_RANK], sb[PR_MAX_RANK]; /* batch strides in elements, 0 = broadcast */
    int64_t batch;                   /* product of bdims */
} mm_geom;

static precis_status mm_geom_of(pr_kernel *k, const pr_buf *A, const pr_buf *B, mm_geom *g) {
    if (A->rank < 1 || B->rank < 1)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "operands must have rank >= 1 (got %d and %d)",
                          A->rank, B->rank);
    int ra = A->rank < 2 ? 2 : A->rank, rb = B->rank < 2 ? 2 : B->rank;
    g->M = A->rank >= 2 ? A->dims[A->rank - 2] : 1;
    g->K = A->dims[A->rank - 1];
    int64_t kb = B->rank >= 2 ? B->dims[B->rank - 2] : B->dims[0];
    g->N = B->rank >= 2 ? B->dims[B->rank - 1] : 1;
    if (kb != g->K)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "inner dimensions differ: %lld vs %lld",
                          (long long)g->K, (long long)kb);
    int nba = ra - 2, nbb = rb - 2;
    g->nb = nba > nbb ? nba : nbb;
    int64_t str_a = g->M * g->K, str_b = g->K * g->N;
    g->batch = 1;
    for (int d = g->nb - 1; d >= 0; d--) {
        int ja = d - (g->nb - nba), jb = d - (g->nb - nbb);
        int64_t da = ja >= 0 ? A->dims[ja] : 1, db = jb >= 0 ? B->dims[jb] : 1;
        if (da != db && da != 1 && db != 1)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "batch dims cannot be broadcast: %lld vs %lld",
                              (long long)da, (long long)db);
        g->bdims[d] = da == 1 ? db : da;
        g->sa[d] = da == 1 ? 0 : str_a;
        g->sb[d] = db == 1 ? 0 : str_b;
        str_a *= da;
        str_b *= db;
        g->batch *= g->bdims[d];
    }
    return PRECIS_OK;
}

/* Y[batch, M, N] = A x B for row-major operands of element size es. */
static void mm_run(const mm_geom *g, pr_ref_gemm_fn fn, size_t es, const void *a, const void *b,
                   void *y) {
    const char *pa = (const char *)a, *pb = (const char *)b;
    char *py = (char *)y;
    if (g->batch == 0 || g->M == 0 || g->N == 0) return;
    bool b_bcast = true, a_full = true;
    for (int d = 0; d < g->nb; d++) {
        if (g->sb[d] != 0) b_bcast = false;
        if (g->sa[d] == 0 && g->bdims[d] != 1) a_full = false;
    }
    if (b_bcast && a_full) { /* one tall GEMM: [batch*M, K] x [K, N] */
        fn(g->batch * g->M, g->N, g->K, pa, g->K, 1, pb, g->N, py, g->N);
        return;
    }
    int64_t idx[PR_MAX_RANK] = {0};
    int64_t oa = 0, ob = 0;
    for (int64_t t = 0; t < g->batch; t++) {
        fn(g->M, g->N, g->K, pa + (size_t)oa * es, g->K, 1, pb + (size_t)ob * es, g->N,
           py + (size_t)(t * g->M * g->N) * es, g->N);
        for (int d = g->nb - 1; d >= 0; d--) {
            oa += g->sa[d];
            ob += g->sb[d];
            if (++idx[d] < g->bdims[d]) break;
            oa -= g->sa[d] * g->bdims[d];
            ob -= g->sb[d] * g->bdims[d];
            idx[d] = 0;
        }
    }
}

precis_status ref_MatMul(pr_kernel *k) {
    const pr_buf *A = k->in[0], *B = k->in[1];
    pr_buf *Y = k->out[0];
    mm_geom g;
    precis_status st = mm_geom_of(k, A, B, &g);
    if (st) return st;
    if (A->dtype != B->dtype || Y->dtype != A->dtype)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "dtype mismatch: %s x %s -> %s",
                          pr_dtype_name(A->dtype), pr_dtype_name(B->dtype), pr_dtype_name(Y->dtype));
    if (Y->numel != g.batch * g.M * g.N)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output has %lld elements, expected %lld",
                          (long long)Y->numel, (long long)(g.batch * g.M * g.N));
    size_t es;
    pr_ref_gemm_fn fn = pr_ref_gemm_for(A->dtype, &es);
    if (fn) {
        mm_run(&g, fn, es, A->data, B->data, Y->data);
        return PRECIS_OK;
    }
    if (!pr_lin_is_half(A->dtype))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported",
                          pr_dtype_name(A->dtype));
    float *a = pr_lin_alloc(A->numel, 4), *b = pr_lin_alloc(B->numel, 4),
          *y = pr_lin_alloc(Y->numel, 4);
    if (!a || !b || !y) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory for float32 copies of the operands");
    } else {
        pr_ref_to_f32(A->data, A->dtype, A->numel, a);
        pr_ref_to_f32(B->data, B->dtype, B->numel, b);
        fn = pr_ref_gemm_for(PRECIS_FLOAT32, &es);
        mm_run(&g, fn, es, a, b, y);
        pr_ref_from_f32(y, Y->numel, Y->dtype, Y->data);
    }
    free(a);
    free(b);
    free(y);
    return st;
}

/* ------------------------------------------------------------ Gemm */

/* Y = alpha * A' B' + beta * C for float arrays (A', B' as described by
 * sam/sak and a row-major B' [K,N]). C broadcast via strides csm/csn. */
static void gemm_epilogue_f32(float *y, int64_t M, int64_t N, float alpha, float beta,
                              const float *c, int64_t csm, int64_t csn) {
    for (int64_t i = 0; i < M; i++) {
        float *yr = y + i * N;
        if (alpha != 1.0f)
            for (int64_t j = 0; j < N; j++) yr[j] *= alpha;
        if (c) {
            const float *cr = c + i * csm;
            if (csn)
                for (int64_t j = 0; j < N; j++) yr[j] += beta * cr[j];
            else
                for (int64_t j = 0; j < N; j++) yr[j] += beta * cr[0];
        }
    }
}

static void gemm_epilogue_f64(double *y, int64_t M, int64_t N, double alpha, double beta,
                              const double *c, int64_t csm, int64_t csn) {
    for (int64_t i = 0; i < M; i++) {
        double *yr = y + i * N;
        if (alpha != 1.0)
            for (int64_t j = 0; j < N; j++) yr[j] *= alpha;
        if (c)
            for (int64_t j = 0; j < N; j++) yr[j] += beta * c[i * csm + j * csn];
    }
}

/* Transpose a row-major [R, C] matrix of element size es into dst [C, R]. */
static void transpose(const void *src, int64_t R, int64_t C, size_t es, void *dst) {
    const char *s = (const char *)src;
    char *d = (char *)dst;
    const int64_t T = 32;
    for (int64_t r0 = 0; r0 < R; r0 += T)
        for (int64_t c0 = 0; c0 < C; c0 += T) {
            int64_t r1 = r0 + T < R ? r0 + T : R, c1 = c0 + T < C ? c0 + T : C;
            for (int64_t r = r0; r < r1; r++)
                for (int64_t c = c0; c < c1; c++)
                    memcpy(d + (size_t)(c * R + r) * es, s + (size_t)(r * C + c) * es, es);
        }
}

precis_status ref_Gemm(pr_kernel *k) {
    const pr_buf *A = k->in[0], *B = k->in[1], *C = pr_kin(k, 2);
    pr_buf *Y = k->out[0];
    precis_status st = PRECIS_OK;
    if (A->rank != 2 || B->rank != 2)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "A and B must be 2-D (got rank %d and %d)", A->rank,
                          B->rank);
    bool ta = pr_attr_int(k->node, "transA", 0) != 0, tb = pr_attr_int(k->node, "transB", 0) != 0;
    float alpha = pr_attr_float(k->node, "alpha", 1.0f), beta = pr_attr_float(k->node, "beta", 1.0f);
    int64_t M = A->dims[ta ? 1 : 0], K = A->dims[ta ? 0 : 1];
    int64_t Kb = B->dims[tb ? 1 : 0], N = B->dims[tb ? 0 : 1];
    if (K != Kb)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "inner dimensions differ: %lld vs %lld",
                          (long long)K, (long long)Kb);
    if (Y->rank != 2 || Y->dims[0] != M || Y->dims[1] != N)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output shape does not match [%lld,%lld]",
                          (long long)M, (long long)N);
    /* C broadcast strides over [M, N] */
    int64_t csm = 0, csn = 0;
    if (C) {
        int64_t cm = C->rank == 2 ? C->dims[0] : 1, cn = C->rank >= 1 ? C->dims[C->rank - 1] : 1;
        if (C->rank > 2 || (cm != 1 && cm != M) || (cn != 1 && cn != N))
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "C cannot be broadcast to [%lld,%lld]",
                              (long long)M, (long long)N);
        csm = cm == 1 ? 0 : cn;
        csn = cn == 1 ? 0 : 1;
        if (C->dtype != A->dtype)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "C has dtype %s, A has %s",
                              pr_dtype_name(C->dtype), pr_dtype_name(A->dtype));
    }
    if (C && beta == 0.0f) C = NULL;
    pr_dtype dt = A->dtype;
    if (B->dtype != dt || Y->dtype != dt)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "dtype mismatch: %s x %s -> %s", pr_dtype_name(dt),
                          pr_dtype_name(B->dtype), pr_dtype_name(Y->dtype));
    if (M == 0 || N == 0) return PRECIS_OK;
    int64_t sam = ta ? 1 : K, sak = ta ? M : 1;
    size_t es = 0;
    pr_ref_gemm_fn fn = pr_ref_gemm_for(dt, &es);
    bool half = pr_lin_is_half(dt);
    if (!fn && !half)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported", pr_dtype_name(dt));
    /* operands in compute precision: halves widened to float32, B' packed row-major */
    void *abuf = NULL, *bbuf = NULL, *cbuf = NULL, *ybuf = NULL;
    const void *a = A->data, *b = B->data, *c = C ? C->data : NULL;
    void *y = Y->data;
    if (half) {
        fn = pr_ref_gemm_for(PRECIS_FLOAT32, &es);
        abuf = pr_lin_alloc(A->numel, 4);
        bbuf = pr_lin_alloc(B->numel, 4);
        ybuf = pr_lin_alloc(Y->numel, 4);
        cbuf = C ? pr_lin_alloc(C->numel, 4) : NULL;
        if (!abuf || !bbuf || !ybuf || (C && !cbuf)) goto oom;
        pr_ref_to_f32(A->data, dt, A->numel, abuf);
        pr_ref_to_f32(B->data, dt, B->numel, bbuf);
        if (C) pr_ref_to_f32(C->data, dt, C->numel, cbuf);
        a = abuf;
        b = bbuf;
        c = cbuf;
        y = ybuf;
    }
    if (tb) {
        void *t = pr_lin_alloc(K * N, es);
        if (!t) goto oom;
        transpose(b, N, K, es, t);
        free(bbuf);
        bbuf = t;
        b = t;
    }
    fn(M, N, K, a, sam, sak, b, N, y, N);
    if (es == 4 && dt != PRECIS_INT32 && dt != PRECIS_UINT32) {
        gemm_epilogue_f32(y, M, N, alpha, beta, c, csm, csn);
        if (half) pr_ref_from_f32(y, Y->numel, dt, Y->data);
    } else if (dt == PRECIS_FLOAT64) {
        gemm_epilogue_f64(y, M, N, alpha, beta, c, csm, csn);
    } else if (alpha != 1.0f || (c && beta != 1.0f)) { /* integers, non-trivial scaling */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t o = i * N + j;
                double v = (double)alpha * (double)(int64_t)pr_load_u64(y, dt, o);
                if (c) v += (double)beta * (double)(int64_t)pr_load_u64(c, dt, i * csm + j * csn);
                pr_store_f64(y, dt, o, v);
            }
    } else if (c) { /* integers, Y = AB + C, wrapping */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t o = i * N + j;
                pr_store_u64_wrap(y, dt, o,
                                  pr_load_u64(y, dt, o) + pr_load_u64(c, dt, i * csm + j * csn));
            }
    }
    goto done;
oom:
    st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory for Gemm operand copies");
done:
    free(abuf);
    free(bbuf);
    free(cbuf);
    free(ybuf);
    return st;
}

/* ------------------------------------------------------------ integer matmuls */

/* Broadcast strides (in elements) of a parameter tensor of dims pd[pr] over
 * the dims xd[xr], right-aligned; false when not broadcastable. */
static bool param_strides(int pr, const int64_t *pd, int xr, const int64_t *xd, int64_t *st) {
    if (pr > xr) return false;
    int64_t s = 1;
    for (int d = xr - 1; d >= 0; d--) {
        int j = d - (xr - pr);
        if (j < 0 || pd[j] == 1) {
            st[d] = 0;
            continue;
        }
        if (pd[j] != xd[d]) return false;
        st[d] = s;
        s *= pd[j];
    }
    return true;
}

/* dst = (int32)x - (int32)zp (zp broadcast; per_row: a 1-D zp indexes the
 * row dim, i.e. is read as [M, 1]). x and zp are int8 or uint8. */
static precis_status sub_zero_point(pr_kernel *k, const pr_buf *x, const pr_buf *zp, bool per_row,
                                    const char *what, int32_t *dst) {
    int r = x->rank;
    int64_t zst[PR_MAX_RANK] = {0};
    if (zp && zp->numel != 1) {
        int64_t zd[PR_MAX_RANK];
        int zr = zp->rank;
        memcpy(zd, zp->dims, (size_t)zr * sizeof *zd);
        if (per_row && zr == 1 && r >= 2) {
            zd[1] = 1;
            zr = 2;
        }
        if (zp->dtype != x->dtype || !param_strides(zr, zd, r, x->dims, zst))
            return pr_kernelf(k, PRECIS_ERR_SHAPE,
                              "%s (%s, %d-D, %lld elements) does not fit its %s operand of rank %d",
                              what, pr_dtype_name(zp->dtype), zp->rank, (long long)zp->numel,
                              pr_dtype_name(x->dtype), r);
    }
    const bool s8 = x->dtype == PRECIS_INT8;
    const int64_t inner = r ? x->dims[r - 1] : 1, rows = inner ? x->numel / inner : 0;
    const int64_t zsi = r ? zst[r - 1] : 0;
    int64_t idx[PR_MAX_RANK] = {0}, zoff = 0;
    for (int64_t row = 0; row < rows; row++) {
        const int64_t base = row * inner;
        int32_t *o = dst + base;
        if (s8) {
            const int8_t *xs = (const int8_t *)x->data + base;
            for (int64_t j = 0; j < inner; j++) o[j] = xs[j];
        } else {
            const uint8_t *xs = (const uint8_t *)x->data + base;
            for (int64_t j = 0; j < inner; j++) o[j] = xs[j];
        }
        if (zp) {
            if (zp->dtype == PRECIS_INT8) {
                const int8_t *z = (const int8_t *)zp->data + zoff;
                for (int64_t j = 0; j < inner; j++) o[j] -= z[j * zsi];
            } else {
                const uint8_t *z = (const uint8_t *)zp->data + zoff;
                for (int64_t j = 0; j < inner; j++) o[j] -= z[j * zsi];
            }
        }
        for (int d = r - 2; d >= 0; d--) {
            zoff += zst[d];
            if (++idx[d] < x->dims[d]) break;
            zoff -= zst[d] * x->dims[d];
            idx[d] = 0;
        }
    }
    return PRECIS_OK;
}

/* acc = (A - za) x (B - zb) in int32 (wrapping), shape as numpy matmul. */
static precis_status int_matmul(pr_kernel *k, const pr_buf *A, const pr_buf *za, const pr_buf *B,
                                const pr_buf *zb, mm_geom *g, int32_t **acc) {
    *acc = NULL;
    precis_status st = mm_geom_of(k, A, B, g);
    if (st) return st;
    for (int i = 0; i < 2; i++) {
        const pr_buf *x = i ? B : A;
        if (x->dtype != PRECIS_INT8 && x->dtype != PRECIS_UINT8)
            return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "%s has dtype %s, expected int8 or uint8",
                              i ? "B" : "A", pr_dtype_name(x->dtype));
    }
    int32_t *a = pr_lin_alloc(A->numel, 4), *b = pr_lin_alloc(B->numel, 4);
    int32_t *y = pr_lin_alloc(g->batch * g->M * g->N, 4);
    if (!a || !b || !y) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory for int32 copies of the operands");
        goto fail;
    }
    if ((st = sub_zero_point(k, A, za, true, "a_zero_point", a))) goto fail;
    if ((st = sub_zero_point(k, B, zb, false, "b_zero_point", b))) goto fail;
    size_t es;
    pr_ref_gemm_fn fn = pr_ref_gemm_for(PRECIS_INT32, &es);
    mm_run(g, fn, es, a, b, y);
    free(a);
    free(b);
    *acc = y;
    return PRECIS_OK;
fail:
    free(a);
    free(b);
    free(y);
    return st;
}

precis_status ref_MatMulInteger(pr_kernel *k) {
    mm_geom g;
    int32_t *acc;
    pr_buf *Y = k->out[0];
    precis_status st = int_matmul(k, k->in[0], pr_kin(k, 2), k->in[1], pr_kin(k, 3), &g, &acc);
    if (st) return st;
    if (Y->dtype != PRECIS_INT32 || Y->numel != g.batch * g.M * g.N) {
        free(acc);
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output is not int32 of %lld elements",
                          (long long)(g.batch * g.M * g.N));
    }
    memcpy(Y->data, acc, (size_t)Y->numel * 4);
    free(acc);
    return PRECIS_OK;
}

/* Scale tensor: per tensor (1 element) or one value per `len` rows/columns.
 * Returns the stride over rows/columns (0 or 1), -1 if unsupported. */
static int64_t scale_stride(const pr_buf *s, int64_t len) {
    if (s->dtype != PRECIS_FLOAT32 && !pr_lin_is_half(s->dtype)) return -1;
    if (s->numel == 1) return 0;
    if (s->numel == len) return 1;
    return -1;
}

/* Round a float to the precision of the scales' dtype (numpy computes the
 * scale product in that dtype). */
static float round_to(float v, pr_dtype dt) {
    if (dt == PRECIS_FLOAT16) return pr_f16_to_f32(pr_f32_to_f16(v));
    if (dt == PRECIS_BFLOAT16) return pr_bf16_to_f32(pr_f32_to_bf16(v));
    return v;
}

precis_status ref_QLinearMatMul(pr_kernel *k) {
    const pr_buf *A = k->in[0], *as = k->in[1], *za = pr_kin(k, 2);
    const pr_buf *B = k->in[3], *bs = k->in[4], *zb = pr_kin(k, 5);
    const pr_buf *ys = k->in[6], *zy = pr_kin(k, 7);
    pr_buf *Y = k->out[0];
    mm_geom g;
    precis_status st = mm_geom_of(k, A, B, &g);
    if (st) return st;
    int64_t sa = scale_stride(as, g.M), sb = scale_stride(bs, g.N);
    if (sa < 0 || sb < 0 || scale_stride(ys, 1) < 0 || ys->numel != 1 || as->dtype != bs->dtype ||
        as->dtype != ys->dtype)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED,
                          "scales must be float32/float16/bfloat16 of one dtype, per tensor or per "
                          "row of a / column of b "
                          "(a_scale %lld, b_scale %lld, y_scale %lld elements)",
                          (long long)as->numel, (long long)bs->numel, (long long)ys->numel);
    if (zy && zy->numel != 1)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "y_zero_point must be per tensor");
    pr_dtype ydt = zy ? zy->dtype : A->dtype;
    if (Y->dtype != ydt || (ydt != PRECIS_INT8 && ydt != PRECIS_UINT8))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "output dtype %s, expected %s",
                          pr_dtype_name(Y->dtype), pr_dtype_name(ydt));
    int32_t *acc;
    if ((st = int_matmul(k, A, za, B, zb, &g, &acc))) return st;
    const pr_dtype sdt = as->dtype;
    float *asv = pr_lin_alloc(as->numel, sizeof(float)), *bsv = pr_lin_alloc(bs->numel, sizeof(float));
    float ysv;
    pr_ref_to_f32(ys->data, sdt, 1, &ysv);
    const double yz = zy ? (double)(int64_t)pr_load_u64(zy->data, zy->dtype, 0) : 0.0;
    const double qmin = ydt == PRECIS_INT8 ? -128.0 : 0.0, qmax = ydt == PRECIS_INT8 ? 127.0 : 255.0;
    float *mult = pr_lin_alloc(g.N, sizeof(float));
    if (!mult || !asv || !bsv) {
        free(acc);
        free(mult);
        free(asv);
        free(bsv);
        return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    }
    pr_ref_to_f32(as->data, sdt, as->numel, asv);
    pr_ref_to_f32(bs->data, sdt, bs->numel, bsv);
    /* numpy: (a_scale * b_scale / y_scale) in float32, times the int32
     * accumulator in float64, round half to even, add zero point, clip */
    int64_t o = 0;
    for (int64_t t = 0; t < g.batch; t++)
        for (int64_t i = 0; i < g.M; i++) {
            const float av = asv[i * sa];
            for (int64_t j = 0; j < g.N; j++) mult[j] = round_to(round_to(av * bsv[j * sb], sdt) / ysv, sdt);
            for (int64_t j = 0; j < g.N; j++, o++) {
                double v = nearbyint((double)acc[o] * (double)mult[j]) + yz;
                if (!(v >= qmin)) v = isnan(v) ? yz : qmin; /* NaN: zero point */
                if (v > qmax) v = qmax;
                if (ydt == PRECIS_INT8) ((int8_t *)Y->data)[o] = (int8_t)v;
                else ((uint8_t *)Y->data)[o] = (uint8_t)v;
            }
        }
    free(mult);
    free(asv);
    free(bsv);
    free(acc);
    return PRECIS_OK;
}

/* ------------------------------------------------------------ Einsum */

/* dst (row-major over sz[0..nd)) = src elements at sum_d idx[d] * sstr[d]. */
static void gather(const char *src, size_t es, int nd, const int64_t *sz, const int64_t *sstr,
                   char *dst) {
    int64_t total = 1, idx[PR_EINSUM_MAX_LABELS] = {0}, off = 0;
    for (int d = 0; d < nd; d++) total *= sz[d];
    for (int64_t t = 0; t < total; t++) {
        memcpy(dst + (size_t)t * es, src + (size_t)off * es, es);
        for (int d = nd - 1; d >= 0; d--) {
            off += sstr[d];
            if (++idx[d] < sz[d]) break;
            off -= sstr[d] * sz[d];
            idx[d] = 0;
        }
    }
}

/* Is gather() with these strides the identity (plain row-major copy)? */
static bool gather_is_copy(int nd, const int64_t *sz, const int64_t *sstr) {
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (sz[d] != 1 && sstr[d] != s) return false;
        s *= sz[d];
    }
    return true;
}

/* Two-operand Einsum as a batched GEMM: labels in both operands and the
 * output are batch dims, in one operand and the output M or N, in both but
 * not the output K. Returns false (nothing done) for other forms
 * (diagonals, broadcasting, labels summed within one operand). */
static bool einsum_as_gemm(pr_kernel *k, const pr_einsum *es, const int64_t *size,
                           precis_status *st) {
    *st = PRECIS_OK;
    if (es->n_ops != 2) return false;
    int pos[2][PR_EINSUM_MAX_LABELS];
    bool in_out[PR_EINSUM_MAX_LABELS] = {false};
    const pr_buf *X[2] = {k->in[0], k->in[1]};
    pr_buf *Y = k->out[0];
    for (int d = 0; d < es->out_rank; d++) in_out[es->out_label[d]] = true;
    for (int o = 0; o < 2; o++) {
        for (int l = 0; l < es->n_labels; l++) pos[o][l] = -1;
        for (int d = 0; d < es->rank[o]; d++) {
            int l = es->label[o][d];
            if (pos[o][l] >= 0 || X[o]->dims[d] != size[l]) return false;
            pos[o][l] = d;
        }
    }
    /* label order: A' = [batch, M, K], B' = [batch, K, N], R = [batch, M, N] */
    int bl[PR_EINSUM_MAX_LABELS], ml[PR_EINSUM_MAX_LABELS], nl[PR_EINSUM_MAX_LABELS],
        kl[PR_EINSUM_MAX_LABELS];
    int nb = 0, nm = 0, nn = 0, nk = 0;
    int64_t B = 1, M = 1, N = 1, K = 1;
    for (int d = 0; d < es->out_rank; d++) {
        int l = es->out_label[d];
        bool a = pos[0][l] >= 0, b = pos[1][l] >= 0;
        if (a && b) bl[nb++] = l, B *= size[l];
        else if (a) ml[nm++] = l, M *= size[l];
        else if (b) nl[nn++] = l, N *= size[l];
    }
    for (int l = 0; l < es->n_labels; l++) {
        if (in_out[l]) continue;
        if (pos[0][l] < 0 || pos[1][l] < 0) return false; /* summed within one operand */
        kl[nk++] = l;
        K *= size[l];
    }
    pr_dtype dt = X[0]->dtype;
    size_t es_ = 0;
    pr_ref_gemm_fn fn = pr_ref_gemm_for(dt, &es_);
    bool half = pr_lin_is_half(dt);
    if (!fn && !half) return false;
    if (half) fn = pr_ref_gemm_for(PRECIS_FLOAT32, &es_);
    /* operand layouts */
    const int *ord[2][3] = {{bl, ml, kl}, {bl, kl, nl}};
    const int cnt[2][3] = {{nb, nm, nk}, {nb, nk, nn}};
    void *owned[4] = {NULL, NULL, NULL, NULL};
    const char *op[2];
    for (int o = 0; o < 2; o++) {
        int64_t sz[PR_EINSUM_MAX_LABELS], sstr[PR_EINSUM_MAX_LABELS], xs[PR_MAX_RANK];
        int nd = 0;
        pr_strides(es->rank[o], X[o]->dims, xs);
        for (int g = 0; g < 3; g++)
            for (int i = 0; i < cnt[o][g]; i++) {
                int l = ord[o][g][i];
                sz[nd] = size[l];
                sstr[nd++] = xs[pos[o][l]];
            }
        const char *src = X[o]->data;
        if (half) {
            float *f = pr_lin_alloc(X[o]->numel, 4);
            if (!(owned[o] = f)) goto oom;
            pr_ref_to_f32(X[o]->data, dt, X[o]->numel, f);
            src = (const char *)f;
        }
        if (gather_is_copy(nd, sz, sstr)) {
            op[o] = src;
        } else {
            char *g = pr_lin_alloc(X[o]->numel, es_);
            if (!(owned[2 + o] = g)) goto oom;
            gather(src, es_, nd, sz, sstr, g);
            op[o] = g;
        }
    }
    /* R = A' B' per batch, then R -> Y in output label order */
    int64_t rsz[PR_EINSUM_MAX_LABELS], rstr[PR_EINSUM_MAX_LABELS];
    {
        int rl[PR_EINSUM_MAX_LABELS], nr = 0;
        for (int i = 0; i < nb; i++) rl[nr++] = bl[i];
        for (int i = 0; i < nm; i++) rl[nr++] = ml[i];
        for (int i = 0; i < nn; i++) rl[nr++] = nl[i];
        int64_t rs = 1, lstr[PR_EINSUM_MAX_LABELS] = {0};
        for (int i = nr - 1; i >= 0; i--) {
            lstr[rl[i]] = rs;
            rs *= size[rl[i]];
        }
        for (int d = 0; d < es->out_rank; d++) {
            rsz[d] = size[es->out_label[d]];
            rstr[d] = lstr[es->out_label[d]];
        }
    }
    bool direct = !half && gather_is_copy(es->out_rank, rsz, rstr);
    char *r = direct ? Y->data : pr_lin_alloc(B * M * N, es_);
    if (!r) goto oom;
    for (int64_t t = 0; t < B; t++)
        fn(M, N, K, op[0] + (size_t)(t * M * K) * es_, K, 1, op[1] + (size_t)(t * K * N) * es_, N,
           r + (size_t)(t * M * N) * es_, N);
    if (!direct) {
        if (half) {
            float *f = pr_lin_alloc(Y->numel, 4);
            if (!f) {
                free(r);
                goto oom;
            }
            gather(r, 4, es->out_rank, rsz, rstr, (char *)f);
            pr_ref_from_f32(f, Y->numel, dt, Y->data);
            free(f);
        } else {
            gather(r, es_, es->out_rank, rsz, rstr, Y->data);
        }
        free(r);
    }
    for (int i = 0; i < 4; i++) free(owned[i]);
    return true;
oom:
    for (int i = 0; i < 4; i++) free(owned[i]);
    *st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    return true;
}

precis_status ref_Einsum(pr_kernel *k) {
    const char *eq = pr_attr_str(k->node, "equation", NULL);
    if (!eq) return pr_kernelf(k, PRECIS_ERR_SHAPE, "attribute 'equation' is required");
    int n = k->n_in;
    if (n < 1 || n > PR_EINSUM_MAX_OPS)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "%d inputs, 1 to %d supported", n,
                          PR_EINSUM_MAX_OPS);
    int ranks[PR_EINSUM_MAX_OPS];
    const int64_t *dims[PR_EINSUM_MAX_OPS];
    pr_dtype dt = k->in[0] ? k->in[0]->dtype : PRECIS_UNDEFINED;
    for (int i = 0; i < n; i++) {
        if (!k->in[i] || k->in[i]->dtype != dt)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "input %d missing or of another dtype", i);
        ranks[i] = k->in[i]->rank;
        dims[i] = k->in[i]->dims;
    }
    const pr_dtype_traits *tr = pr_dtype_info(dt);
    if (!tr->is_float && !tr->is_int)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s not supported", pr_dtype_name(dt));
    pr_einsum es;
    char msg[256];
    int64_t size[PR_EINSUM_MAX_LABELS];
    if (pr_einsum_parse(eq, n, ranks, &es, msg, sizeof msg) ||
        pr_einsum_sizes(&es, dims, size, msg, sizeof msg))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "equation '%s': %s", eq, msg);
    pr_buf *Y = k->out[0];
    precis_status st = PRECIS_OK;
    if (einsum_as_gemm(k, &es, size, &st)) return st;
    /* loop labels: output labels, then summed labels */
    int loop[PR_EINSUM_MAX_LABELS], nl = 0;
    bool in_out[PR_EINSUM_MAX_LABELS] = {false};
    for (int d = 0; d < es.out_rank; d++) {
        loop[nl++] = es.out_label[d];
        in_out[es.out_label[d]] = true;
    }
    const int n_out_loop = nl;
    for (int l = 0; l < es.n_labels; l++)
        if (!in_out[l]) loop[nl++] = l;
    /* strides of each operand and of the output per loop position */
    int64_t str[PR_EINSUM_MAX_OPS + 1][PR_EINSUM_MAX_LABELS];
    memset(str, 0, sizeof str);
    for (int o = 0; o < n; o++) {
        int64_t s[PR_MAX_RANK];
        pr_strides(ranks[o], dims[o], s);
        for (int p = 0; p < nl; p++)
            for (int d = 0; d < ranks[o]; d++)
                if (es.label[o][d] == loop[p] && dims[o][d] != 1) str[o][p] += s[d];
    }
    int64_t ys[PR_MAX_RANK];
    pr_strides(es.out_rank, Y->dims, ys);
    for (int d = 0; d < es.out_rank; d++) str[n][d] = ys[d];
    int64_t out_count = 1, sum_count = 1;
    for (int p = 0; p < nl; p++) {
        if (p < n_out_loop) out_count *= size[loop[p]];
        else sum_count *= size[loop[p]];
    }
    if (Y->numel != out_count)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output has %lld elements, expected %lld",
                          (long long)Y->numel, (long long)out_count);
    /* operands widened: float types to double, integers to 64-bit (wrapping) */
    void *wide[PR_EINSUM_MAX_OPS] = {NULL};
    for (int o = 0; o < n; o++) {
        const pr_buf *x = k->in[o];
        wide[o] = pr_lin_alloc(x->numel, 8);
        if (!wide[o]) {
            st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
            goto done;
        }
        for (int64_t i = 0; i < x->numel; i++) {
            if (tr->is_float) ((double *)wide[o])[i] = pr_load_f64(x->data, dt, i);
            else ((uint64_t *)wide[o])[i] = pr_load_u64(x->data, dt, i);
        }
    }
    int64_t idx[PR_EINSUM_MAX_LABELS] = {0}, off[PR_EINSUM_MAX_OPS + 1] = {0};
    for (int64_t t = 0; t < out_count; t++) {
        double accf = 0.0;
        uint64_t acci = 0;
        int64_t base[PR_EINSUM_MAX_OPS];
        memcpy(base, off, sizeof base);
        int64_t sidx[PR_EINSUM_MAX_LABELS] = {0};
        for (int64_t s = 0; s < sum_count; s++) {
            if (tr->is_float) {
                double p = 1.0;
                for (int o = 0; o < n; o++) p *= ((const double *)wide[o])[off[o]];
                accf += p;
            } else {
                uint64_t p = 1;
                for (int o = 0; o < n; o++) p *= ((const uint64_t *)wide[o])[off[o]];
                acci += p;
            }
            for (int q = nl - 1; q >= n_out_loop; q--) {
                for (int o = 0; o < n; o++) off[o] += str[o][q];
                if (++sidx[q] < size[loop[q]]) break;
                for (int o = 0; o < n; o++) off[o] -= str[o][q] * size[loop[q]];
                sidx[q] = 0;
            }
        }
        memcpy(off, base, sizeof base);
        if (tr->is_float) pr_store_f64(Y->data, dt, off[n], accf);
        else pr_store_u64_wrap(Y->data, dt, off[n], acci);
        for (int q = n_out_loop - 1; q >= 0; q--) {
            for (int o = 0; o <= n; o++) off[o] += str[o][q];
            if (++idx[q] < size[loop[q]]) break;
            for (int o = 0; o <= n; o++) off[o] -= str[o][q] * size[loop[q]];
            idx[q] = 0;
        }
    }
done:
    for (int o = 0; o < n; o++) free(wide[o]);
    return st;
}
