/* Data-movement kernels (kernels.h): Reorder, Transpose, Concat, Slice,
 * Split, Reshape/Flatten/Squeeze/Unsqueeze, DepthToSpace.
 *
 * Two engines, both working on bytes (element size 1, 2 or 4 for our dtypes:
 * int8/uint8/bool move like any other element):
 *   scopy    strided copy: dst and src strides per dim (iterated in the
 *            destination's storage order), dims merged where both stay
 *            contiguous, memcpy for unit-stride rows. Slice, Split, Concat,
 *            and Transposes that keep the innermost dim.
 *   permute  a transpose that moves the innermost dim: after merging and
 *            dropping size-1 dims it is a batch of 2-D transposes, done in
 *            16x16 tiles (AVX-512 register transposes for 4-, 2- and 1-byte
 *            elements, scalar otherwise). Transpose and Reorder.
 * Layouts: a rank-4 NHWC tensor is addressed through the strides of its
 * logical dims in storage order, so every op here that supports() accepts
 * works for any consistent mix; nhwc_ok() advertises Reorder, Concat,
 * Split, Slice and DepthToSpace (a 6-D strided copy: in NHWC with DCR the
 * rows of C/(b*b) channels stay contiguous). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"
#include "backends/ref/ref_tensor.h"

enum { M_REORDER, M_TRANSPOSE, M_CONCAT, M_SLICE, M_SPLIT, M_RESHAPE, M_D2S };

/* NHWC storage order of the logical dims N,C,H,W. */
static const int k_nhwc[4] = {0, 2, 3, 1};

/* ------------------------------------------------------------ element copy */

PR_INLINE void copy_elem(char *d, const char *s, size_t es) {
    switch (es) {
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, es); break;
    }
}

/* n elements, strides in elements */
static void copy_row(char *d, int64_t ds, const char *s, int64_t ss, int64_t n, size_t es) {
    if (ds == 1 && ss == 1) {
        memcpy(d, s, (size_t)n * es);
        return;
    }
    int64_t e = (int64_t)es;
    if (es == 4 && ds == 1) {
        uint32_t *o = (uint32_t *)(void *)d;
        for (int64_t i = 0; i < n; i++) memcpy(&o[i], s + i * ss * 4, 4);
        return;
    }
    if (es == 2 && ds == 1) {
        uint16_t *o = (uint16_t *)(void *)d;
        for (int64_t i = 0; i < n; i++) memcpy(&o[i], s + i * ss * 2, 2);
        return;
    }
    if (es == 1) {
        for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
        return;
    }
    for (int64_t i = 0; i < n; i++) copy_elem(d + i * ds * e, s + i * ss * e, es);
}

/* ------------------------------------------------------------ scopy */

typedef struct splan {
    int nr; /* merged dims, [0] innermost */
    int64_t cd[PR_MAX_RANK];
    int64_t ds[PR_MAX_RANK], ss[PR_MAX_RANK];
    int64_t n, rows;
} splan;

typedef struct sjob {
    const splan *pl;
    char *d;
    const char *s;
    size_t es;
} sjob;

/* b bytes, b small: fixed-size pieces the compiler turns into plain moves
 * (a memcpy call per short row dominated NHWC Concat/Split of few channels) */
static inline void copy_short(char *d, const char *s, size_t b) {
    size_t i = 0;
    for (; i + 32 <= b; i += 32) memcpy(d + i, s + i, 32);
    for (; i + 8 <= b; i += 8) memcpy(d + i, s + i, 8);
    for (; i < b; i++) d[i] = s[i];
}

static void scopy_rows(const sjob *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    const splan *pl = j->pl;
    size_t rb = (size_t)(c1 - c0) * j->es;
    if (pl->nr >= 2 && pl->ds[0] == 1 && pl->ss[0] == 1 && rb <= 256) {
        /* contiguous short rows at constant strides along dim 1 (NHWC channel
         * blocks; DepthToSpace's b*C-element pieces), outer dims per run */
        int64_t e = (int64_t)j->es, dstep = pl->ds[1] * e, sstep = pl->ss[1] * e;
        for (int64_t row = r0; row < r1;) {
            int64_t i1 = row % pl->cd[1], rem = row / pl->cd[1];
            int64_t od = i1 * pl->ds[1], os = i1 * pl->ss[1];
            for (int d = 2; d < pl->nr; d++) {
                od += rem % pl->cd[d] * pl->ds[d];
                os += rem % pl->cd[d] * pl->ss[d];
                rem /= pl->cd[d];
            }
            int64_t n = pl->cd[1] - i1 < r1 - row ? pl->cd[1] - i1 : r1 - row;
            char *d = j->d + (od + c0) * e;
            const char *s = j->s + (os + c0) * e;
            if (rb == 8)
                for (int64_t q = 0; q < n; q++, d += dstep, s += sstep) memcpy(d, s, 8);
            else if (rb == 4)
                for (int64_t q = 0; q < n; q++, d += dstep, s += sstep) memcpy(d, s, 4);
            else if (rb == 16) /* int8 NHWC blocks of 16/32/64 channels: one move a row */
                for (int64_t q = 0; q < n; q++, d += dstep, s += sstep) memcpy(d, s, 16);
            else if (rb == 32)
                for (int64_t q = 0; q < n; q++, d += dstep, s += sstep) memcpy(d, s, 32);
            else if (rb == 64)
                for (int64_t q = 0; q < n; q++, d += dstep, s += sstep) memcpy(d, s, 64);
            else
                for (int64_t q = 0; q < n; q++, d += dstep, s += sstep) copy_short(d, s, rb);
            row += n;
        }
        return;
    }
    int64_t idx[PR_MAX_RANK] = {0}, od = 0, os = 0, rem = r0, e = (int64_t)j->es;
    for (int d = 1; d < pl->nr; d++) {
        idx[d] = rem % pl->cd[d];
        rem /= pl->cd[d];
        od += idx[d] * pl->ds[d];
        os += idx[d] * pl->ss[d];
    }
    for (int64_t row = r0; row < r1; row++) {
        copy_row(j->d + (od + c0 * pl->ds[0]) * e, pl->ds[0], j->s + (os + c0 * pl->ss[0]) * e,
                 pl->ss[0], c1 - c0, j->es);
        for (int d = 1; d < pl->nr; d++) {
            od += pl->ds[d];
            os += pl->ss[d];
            if (++idx[d] < pl->cd[d]) break;
            od -= pl->ds[d] * pl->cd[d];
            os -= pl->ss[d] * pl->cd[d];
            idx[d] = 0;
        }
    }
}

#define SCHUNK 65536 /* elements per piece when few long rows are split */

/* dst[i . ds] = src[i . ss] over dims (outermost first); strides in elements
 * (src strides may be negative). */
static void scopy(void *dst, const int64_t *ds, const void *src, const int64_t *ss, int r,
                  const int64_t *dims, size_t es, int nt) {
    splan pl;
    int nr = 0;
    int64_t numel = 1;
    for (int d = 0; d < r; d++) numel *= dims[d];
    if (numel <= 0) return;
    for (int d = r - 1; d >= 0; d--) {
        if (dims[d] == 1) continue;
        if (nr > 0 && ds[d] == pl.ds[nr - 1] * pl.cd[nr - 1] &&
            ss[d] == pl.ss[nr - 1] * pl.cd[nr - 1]) {
            pl.cd[nr - 1] *= dims[d];
            continue;
        }
        pl.cd[nr] = dims[d];
        pl.ds[nr] = ds[d];
        pl.ss[nr] = ss[d];
        nr++;
    }
    if (nr == 0) {
        pl.cd[0] = 1, pl.ds[0] = pl.ss[0] = 1;
        nr = 1;
    }
    pl.nr = nr;
    pl.n = pl.cd[0];
    pl.rows = numel / pl.n;
    sjob j = {&pl, dst, src, es};
    if (nt <= 1 || numel * (int64_t)es < 4 * PR_CPU_PAR_MIN) {
        scopy_rows(&j, 0, pl.rows, 0, pl.n);
    } else if (pl.rows >= 4 * (int64_t)nt) {
#pragma omp parallel num_threads(nt)
        {
            int t = omp_get_thread_num(), T = omp_get_num_threads();
            int64_t r0 = pl.rows * t / T, r1 = pl.rows * (t + 1) / T;
            if (r1 > r0) scopy_rows(&j, r0, r1, 0, pl.n);
        }
    } else {
        int64_t pieces = (pl.n + SCHUNK - 1) / SCHUNK, items = pl.rows * pieces;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int64_t it = 0; it < items; it++) {
            int64_t row = it / pieces, c0 = (it % pieces) * SCHUNK;
            scopy_rows(&j, row, row + 1, c0, c0 + SCHUNK < pl.n ? c0 + SCHUNK : pl.n);
        }
    }
}

/* ------------------------------------------------------------ 2-D transpose */

/* dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (elements). */
typedef void (*tr_fn)(const char *src, int64_t lds, char *dst, int64_t ldd, int64_t rows,
                      int64_t cols, size_t es);

static void tr_tile_scalar(const char *src, int64_t lds, char *dst, int64_t ldd, int64_t rows,
                           int64_t cols, size_t es) {
    if (es == 4) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                memcpy(dst + (c * ldd + r) * 4, src + (r * lds + c) * 4, 4);
    } else if (es == 1) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) dst[c * ldd + r] = src[r * lds + c];
    } else if (es == 2) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                memcpy(dst + (c * ldd + r) * 2, src + (r * lds + c) * 2, 2);
    } else {
        int64_t e = (int64_t)es;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                copy_elem(dst + (c * ldd + r) * e, src + (r * lds + c) * e, es);
    }
}

static void tr_scalar(const char *src, int64_t lds, char *dst, int64_t ldd, int64_t rows,
                      int64_t cols, size_t es) {
    int64_t e = (int64_t)es;
    for (int64_t r = 0; r < rows; r += 16)
        for (int64_t c = 0; c < cols; c += 16)
            tr_tile_scalar(src + (r * lds + c) * e, lds, dst + (c * ldd + r) * e, ldd,
                           rows - r < 16 ? rows - r : 16, cols - c < 16 ? cols - c : 16, es);
}

#ifdef PR_CPU_X86
static PR_AVX512 void tr_avx512(const char *src, int64_t lds, char *dst, int64_t ldd, int64_t rows,
                                int64_t cols, size_t es) {
    if (es != 4 && es != 2 && es != 1) {
        tr_scalar(src, lds, dst, ldd, rows, cols, es);
        return;
    }
    int64_t e = (int64_t)es;
    if (es == 4 && cols < 16 && lds <= ((int64_t)1 << 26)) {
        /* few 4-byte columns (NHWC -> NCHW of a head's 1..15 channels:
         * CenterFace's 2- and 10-channel outputs at 80x80 ran ~1 ns a value
         * on the scalar tiles): 16 rows of a column gathered into a vector */
        const __m512i idx = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32((int)lds));
        int64_t r = 0;
        for (; r + 16 <= rows; r += 16) {
            const float *s = (const float *)(const void *)src + r * lds;
            float *d = (float *)(void *)dst + r;
            for (int64_t c = 0; c < cols; c++)
                _mm512_storeu_ps(d + c * ldd, _mm512_i32gather_ps(idx, s + c, 4));
        }
        if (r < rows) tr_tile_scalar(src + r * lds * e, lds, dst + r * e, ldd, rows - r, cols, es);
        return;
    }
    for (int64_t r = 0; r < rows; r += 16) {
        for (int64_t c = 0; c < cols; c += 16) {
            const char *s = src + (r * lds + c) * e;
            char *d = dst + (c * ldd + r) * e;
            if (rows - r < 16 || cols - c < 16) {
                tr_tile_scalar(s, lds, d, ldd, rows - r < 16 ? rows - r : 16,
                               cols - c < 16 ? cols - c : 16, es);
                continue;
            }
            __m512 v[16];
            if (es == 4) {
                for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_ps(s + i * lds * 4);
                pv_tr16(v);
                for (int i = 0; i < 16; i++) _mm512_storeu_ps(d + i * ldd * 4, v[i]);
            } else if (es == 2) {
                for (int i = 0; i < 16; i++)
                    v[i] = _mm512_castsi512_ps(_mm512_cvtepu16_epi32(
                        _mm256_loadu_si256((const __m256i *)(s + i * lds * 2))));
                pv_tr16(v);
                for (int i = 0; i < 16; i++)
                    _mm256_storeu_si256((__m256i *)(d + i * ldd * 2),
                                        _mm512_cvtepi32_epi16(_mm512_castps_si512(v[i])));
            } else {
                for (int i = 0; i < 16; i++)
                    v[i] = _mm512_castsi512_ps(
                        _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(s + i * lds))));
                pv_tr16(v);
                for (int i = 0; i < 16; i++)
                    _mm_storeu_si128((__m128i *)(d + i * ldd),
                                     _mm512_cvtepi32_epi8(_mm512_castps_si512(v[i])));
            }
        }
    }
}
#endif

/* ------------------------------------------------------------ permute */

#define TRB 64  /* rows per work item */
#define TCB 256 /* columns per work item */

/* dst (dims Y[i] = X[perm[i]], contiguous) = src (dims X, contiguous)
 * transposed. */
static void permute(void *dst, const void *src, int r, const int64_t *X, const int *perm, size_t es,
                    int nt, tr_fn tr) {
    int64_t numel = 1;
    for (int d = 0; d < r; d++) numel *= X[d];
    if (numel <= 0) return;
    /* drop size-1 dims */
    int map[PR_MAX_RANK], kr = 0, q[PR_MAX_RANK], m = 0;
    int64_t kd[PR_MAX_RANK];
    for (int d = 0; d < r; d++) {
        map[d] = X[d] == 1 ? -1 : kr;
        if (X[d] != 1) kd[kr++] = X[d];
    }
    for (int i = 0; i < r; i++)
        if (map[perm[i]] >= 0) q[m++] = map[perm[i]];
    /* merge input dims that stay neighbours: groups of the output order */
    int gfirst[PR_MAX_RANK], ng = 0, grank[PR_MAX_RANK];
    int64_t gdim[PR_MAX_RANK];
    for (int i = 0; i < m; i++) {
        if (i > 0 && q[i] == q[i - 1] + 1) {
            gdim[ng - 1] *= kd[q[i]];
            continue;
        }
        gfirst[ng] = q[i];
        gdim[ng] = kd[q[i]];
        ng++;
    }
    /* input order of the groups = order of their first input dim */
    int64_t xd[PR_MAX_RANK];
    int qq[PR_MAX_RANK] = {0}; /* set for g < ng below; zeroed for gcc -O3 */
    for (int g = 0; g < ng; g++) {
        grank[g] = 0;
        for (int h = 0; h < ng; h++) grank[g] += gfirst[h] < gfirst[g];
    }
    for (int g = 0; g < ng; g++) {
        xd[grank[g]] = gdim[g];
        qq[g] = grank[g];
    }
    int R = ng;
    bool ident = true;
    for (int i = 0; i < R; i++) ident = ident && qq[i] == i;
    int64_t xs[PR_MAX_RANK], yd[PR_MAX_RANK], ys[PR_MAX_RANK], ss[PR_MAX_RANK];
    if (ident) { /* R <= 1 included */
        int64_t one = 1;
        scopy(dst, &one, src, &one, 1, &numel, es, nt);
        return;
    }
    pr_strides(R, xd, xs);
    for (int i = 0; i < R; i++) yd[i] = xd[qq[i]];
    pr_strides(R, yd, ys);
    if (qq[R - 1] == R - 1) { /* the innermost dim stays: contiguous rows */
        for (int i = 0; i < R; i++) ss[i] = xs[qq[i]];
        scopy(dst, ys, src, ss, R, yd, es, nt);
        return;
    }
    int a = qq[R - 1], jpos = 0;
    for (int i = 0; i < R; i++)
        if (qq[i] == R - 1) jpos = i;
    int64_t rows = xd[a], cols = xd[R - 1], lds = xs[a], ldd = ys[jpos];
    /* batch dims: the other output dims */
    int nb = 0;
    int64_t bd[PR_MAX_RANK], bsi[PR_MAX_RANK], bso[PR_MAX_RANK], nbatch = 1;
    for (int i = 0; i < R; i++) {
        if (i == jpos || i == R - 1) continue;
        bd[nb] = yd[i];
        bsi[nb] = xs[qq[i]];
        bso[nb] = ys[i];
        nbatch *= yd[i];
        nb++;
    }
    int64_t rblk = (rows + TRB - 1) / TRB, cblk = (cols + TCB - 1) / TCB;
    int64_t items = nbatch * rblk * cblk, e = (int64_t)es;
    if (nt > items) nt = (int)items;
    if (numel * e < 4 * PR_CPU_PAR_MIN) nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        int64_t cb = it % cblk, rest = it / cblk, rb = rest % rblk, bi = rest / rblk;
        int64_t oi = 0, oo = 0;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t id = bi % bd[d];
            bi /= bd[d];
            oi += id * bsi[d];
            oo += id * bso[d];
        }
        int64_t r0 = rb * TRB, c0 = cb * TCB;
        int64_t rn = rows - r0 < TRB ? rows - r0 : TRB, cn = cols - c0 < TCB ? cols - c0 : TCB;
        tr((const char *)src + (oi + r0 * lds + c0) * e, lds,
           (char *)dst + (oo + c0 * ldd + r0) * e, ldd, rn, cn, es);
    }
}

void pr_cpu_nchw_nhwc(const void *src, void *dst, const int64_t *nchw, size_t es, bool to_nhwc,
                      int threads) {
    int64_t X[4];
    int perm[4];
    if (to_nhwc) {
        X[0] = nchw[0], X[1] = nchw[1], X[2] = nchw[2], X[3] = nchw[3];
        perm[0] = 0, perm[1] = 2, perm[2] = 3, perm[3] = 1;
    } else {
        X[0] = nchw[0], X[1] = nchw[2], X[2] = nchw[3], X[3] = nchw[1];
        perm[0] = 0, perm[1] = 3, perm[2] = 1, perm[3] = 2;
    }
    tr_fn tr = tr_scalar;
#ifdef PR_CPU_X86
    if (pr_cpu_use_avx512()) tr = tr_avx512;
#endif
    permute(dst, src, 4, X, perm, es, threads > 0 ? threads : 1, tr);
}

/* ------------------------------------------------------------ impl */

typedef struct mstate {
    int op;
    bool avx512;
    int in_lay, out_lay;          /* storage layouts (all inputs / outputs share one) */
    int perm[PR_MAX_RANK], nperm; /* Transpose: attribute perm (nperm -1: reversed) */
} mstate;

static int op_of(const pr_node *n) {
    if (n->op == PR_OP_Reorder) return M_REORDER;
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return -1;
    switch (n->op) {
    case PR_OP_Transpose: return M_TRANSPOSE;
    case PR_OP_Concat: return M_CONCAT;
    case PR_OP_Slice: return M_SLICE;
    case PR_OP_Split: return M_SPLIT;
    case PR_OP_Reshape:
    case PR_OP_Flatten:
    case PR_OP_Squeeze:
    case PR_OP_Unsqueeze: return M_RESHAPE;
    case PR_OP_DepthToSpace: return M_D2S;
    default: return -1;
    }
}

static int layout_of(const pr_tensor *t) {
    if (!t || (t->flags & PR_T_INIT) || (t->rank >= 0 && t->rank != 4)) return PR_LAYOUT_PLAIN;
    return t->layout;
}

/* Float activations, and the 1-byte types (int8/uint8 of INT8 plans, bool):
 * moved as bytes. */
static bool m_dtype_ok(pr_dtype dt) {
    return pr_cpu_float_dt(dt) || dt == PRECIS_INT8 || dt == PRECIS_UINT8 || dt == PRECIS_BOOL;
}

static bool m_supports(const pr_graph *g, const pr_node *n) {
    int op = op_of(n);
    const pr_tensor *x = pr_node_tin(g, n, 0);
    if (op < 0 || !x || n->n_outputs < 1 || !m_dtype_ok(x->dtype)) return false;
    int lay = layout_of(x);
    switch (op) {
    case M_REORDER: return n->n_inputs == 1 && pr_node_tout(g, n, 0);
    case M_TRANSPOSE: {
        const int64_t *perm;
        int np = pr_attr_ints(n, "perm", &perm);
        if (np > PR_MAX_RANK || (np >= 0 && x->rank >= 0 && np != x->rank)) return false;
        for (int i = 0; i < np; i++)
            if (perm[i] < 0 || perm[i] >= np) return false;
        return pr_node_tout(g, n, 0) != NULL;
    }
    case M_CONCAT:
        for (int i = 0; i < n->n_inputs; i++) {
            const pr_tensor *t = pr_node_tin(g, n, i);
            if (!t || t->dtype != x->dtype || layout_of(t) != lay) return false;
        }
        return pr_node_tout(g, n, 0) && layout_of(pr_node_tout(g, n, 0)) == lay;
    case M_SLICE: return pr_node_tout(g, n, 0) && layout_of(pr_node_tout(g, n, 0)) == lay;
    case M_SPLIT:
        for (int j = 0; j < n->n_outputs; j++) {
            const pr_tensor *t = pr_node_tout(g, n, j);
            if (t && layout_of(t) != lay) return false;
        }
        return true;
    case M_RESHAPE:
        return pr_node_tout(g, n, 0) && lay == PR_LAYOUT_PLAIN &&
               layout_of(pr_node_tout(g, n, 0)) == PR_LAYOUT_PLAIN;
    case M_D2S: {
        const char *mode = pr_attr_str(n, "mode", "DCR");
        return x->rank == 4 && !(x->flags & PR_T_INIT) && pr_attr_int(n, "blocksize", 0) >= 1 &&
               (!strcmp(mode, "DCR") || !strcmp(mode, "CRD")) && pr_node_tout(g, n, 0) &&
               layout_of(pr_node_tout(g, n, 0)) == lay;
    }
    default: return false;
    }
}

static bool m_nhwc_ok(const pr_graph *g, const pr_node *n) {
    if (!m_supports(g, n)) return false;
    int op = op_of(n);
    if (op == M_REORDER || op == M_D2S) return true;
    if (op == M_SPLIT || op == M_SLICE) { /* index math runs on the logical dims */
        const pr_tensor *t = pr_node_tin(g, n, 0);
        return t->rank == 4 && !(t->flags & PR_T_INIT);
    }
    if (op != M_CONCAT) return false;
    for (int i = 0; i < n->n_inputs; i++) {
        const pr_tensor *t = pr_node_tin(g, n, i);
        if (t->rank != 4 || (t->flags & PR_T_INIT)) return false;
    }
    return true; /* any axis: channels innermost is fastest, the others are exact too */
}

static int m_inplace(const pr_graph *g, const pr_node *n) {
    (void)g;
    return op_of(n) == M_RESHAPE ? 0 : -1;
}

static precis_status m_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                               void **state, pr_err *e) {
    (void)cfg;
    mstate *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->op = op_of(n);
#ifdef PR_CPU_X86
    s->avx512 = pr_cpu_use_avx512();
#endif
    s->in_lay = layout_of(pr_node_tin(g, n, 0));
    s->out_lay = layout_of(pr_node_tout(g, n, 0));
    s->nperm = -1;
    if (s->op == M_TRANSPOSE) {
        const int64_t *perm;
        int np = pr_attr_ints(n, "perm", &perm);
        if (np > PR_MAX_RANK) {
            free(s);
            return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "perm of length %d", np);
        }
        for (int i = 0; i < np; i++) s->perm[i] = (int)perm[i];
        s->nperm = np;
    }
    *state = s;
    return PRECIS_OK;
}

/* Storage order of b's logical dims (ord[k] = logical dim stored k-th) and
 * the element stride of each logical dim. */
static void storage(const pr_buf *b, int lay, int *ord, int64_t *st) {
    bool nhwc = b->rank == 4 && lay == PR_LAYOUT_NHWC;
    for (int d = 0; d < b->rank; d++) ord[d] = nhwc ? k_nhwc[d] : d;
    if (nhwc) {
        int64_t C = b->dims[1], H = b->dims[2], W = b->dims[3];
        st[0] = H * W * C, st[1] = 1, st[2] = W * C, st[3] = C;
    } else {
        pr_strides(b->rank, b->dims, st);
    }
}

/* Copy src (logical strides sst, offset applied) into dst (layout dlay),
 * iterating in dst's storage order over dst's logical dims ldims. */
static void copy_logical(const pr_buf *dst, int dlay, char *dbase, const int64_t *dst_str,
                         const char *sbase, const int64_t *sst, const int64_t *ldims, int nt) {
    int ord[PR_MAX_RANK];
    int64_t dims[PR_MAX_RANK], ds[PR_MAX_RANK], ss[PR_MAX_RANK], tmp[PR_MAX_RANK];
    storage(dst, dlay, ord, tmp);
    for (int k = 0; k < dst->rank; k++) {
        dims[k] = ldims[ord[k]];
        ds[k] = dst_str[ord[k]];
        ss[k] = sst[ord[k]];
    }
    scopy(dbase, ds, sbase, ss, dst->rank, dims, pr_dtype_size(dst->dtype), nt);
}

static precis_status run_permute(const mstate *s, pr_kernel *k, const int *lperm, int nt) {
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int r = x->rank;
    if (y->rank != r || y->numel != x->numel || y->dtype != x->dtype)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output does not match the input");
    /* storage perm: y's k-th stored dim is logical oy[k] = x logical
     * lperm[oy[k]], stored by x at position inv_x[...] */
    int ox[PR_MAX_RANK], oy[PR_MAX_RANK], inv_x[PR_MAX_RANK], q[PR_MAX_RANK];
    int64_t st[PR_MAX_RANK], X[PR_MAX_RANK];
    storage(x, s->in_lay, ox, st);
    storage(y, s->out_lay, oy, st);
    for (int d = 0; d < r; d++) inv_x[ox[d]] = d;
    for (int d = 0; d < r; d++) {
        X[d] = x->dims[ox[d]];
        q[d] = inv_x[lperm[oy[d]]];
    }
    tr_fn tr = tr_scalar;
#ifdef PR_CPU_X86
    if (s->avx512) tr = tr_avx512;
#endif
    permute(y->data, x->data, r, X, q, pr_dtype_size(x->dtype), nt, tr);
    return PRECIS_OK;
}

static precis_status run_concat(const mstate *s, pr_kernel *k, int nt) {
    pr_buf *y = k->out[0];
    int r = y->rank, axis;
    precis_status st = pr_kernel_axis(k, pr_attr_int(k->node, "axis", 1), r, &axis);
    if (st) return st;
    int64_t yst[PR_MAX_RANK], xst[PR_MAX_RANK], off = 0;
    int ord[PR_MAX_RANK];
    storage(y, s->out_lay, ord, yst);
    for (int i = 0; i < k->n_in; i++) {
        const pr_buf *x = k->in[i];
        if (!x || x->rank != r || x->dtype != y->dtype)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "input %d is missing or does not match", i);
        if (off + x->dims[axis] > y->dims[axis])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "inputs exceed the output");
        storage(x, s->in_lay, ord, xst);
        copy_logical(y, s->out_lay,
                     (char *)y->data + off * yst[axis] * (int64_t)pr_dtype_size(y->dtype), yst,
                     x->data, xst, x->dims, nt);
        off += x->dims[axis];
    }
    return PRECIS_OK;
}

static precis_status run_slice(const mstate *s, pr_kernel *k, int nt) {
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    pr_kic c;
    pr_kic_init(&c, k);
    pr_slice_plan p;
    bool known;
    precis_status st = pr_slice_plan_make(&c.ic, &p, &known);
    if (st) return st;
    if (!known) return pr_kernelf(k, PRECIS_ERR_INTERNAL, "slice parameters not known");
    if (y->rank != x->rank || y->dtype != x->dtype)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output does not match the input");
    int64_t xst[PR_MAX_RANK], yst[PR_MAX_RANK], sst[PR_MAX_RANK], off = 0;
    int ord[PR_MAX_RANK];
    storage(x, s->in_lay, ord, xst);
    storage(y, s->out_lay, ord, yst);
    for (int d = 0; d < x->rank; d++) {
        if (p.len[d] != y->dims[d])
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output dim %d is %lld, slice gives %lld", d,
                              (long long)y->dims[d], (long long)p.len[d]);
        off += p.start[d] * xst[d];
        sst[d] = p.step[d] * xst[d];
    }
    if (y->numel == 0) return PRECIS_OK;
    copy_logical(y, s->out_lay, y->data, yst,
                 (const char *)x->data + off * (int64_t)pr_dtype_size(x->dtype), sst, y->dims, nt);
    return PRECIS_OK;
}

static precis_status run_split(const mstate *s, pr_kernel *k, int nt) {
    const pr_buf *x = k->in[0];
    pr_kic c;
    pr_kic_init(&c, k);
    int64_t sizes[64], *sz = sizes;
    if (k->n_out > 64 && !(sz = malloc((size_t)k->n_out * sizeof *sz)))
        return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    int axis = 0;
    bool known;
    precis_status st = pr_split_plan_make(&c.ic, k->n_out, &axis, sz, &known);
    if (!st && !known) st = pr_kernelf(k, PRECIS_ERR_INTERNAL, "split sizes not known");
    int64_t xst[PR_MAX_RANK], yst[PR_MAX_RANK], off = 0;
    int ord[PR_MAX_RANK];
    storage(x, s->in_lay, ord, xst);
    for (int j = 0; !st && j < k->n_out; j++) {
        pr_buf *y = k->out[j];
        if (y) {
            if (y->rank != x->rank || y->dtype != x->dtype || y->dims[axis] != sz[j] ||
                off + sz[j] > x->dims[axis]) {
                st = pr_kernelf(k, PRECIS_ERR_INTERNAL, "output %d does not match", j);
                break;
            }
            storage(y, s->out_lay, ord, yst);
            copy_logical(y, s->out_lay, y->data, yst,
                         (const char *)x->data + off * xst[axis] * (int64_t)pr_dtype_size(x->dtype),
                         xst, y->dims, nt);
        }
        off += sz[j];
    }
    if (sz != sizes) free(sz);
    return st;
}

/* DepthToSpace: y[n, c, h*b+i, w*b+j] = x[n, ch(c, i, j), h, w], ch = (i*b + j)*C + c
 * (DCR) or (c*b + i)*b + j (CRD): a copy over the 6 dims (n, c, h, i, w, j)
 * iterated in y's storage order. */
static precis_status run_d2s(const mstate *s, pr_kernel *k, int nt) {
    const pr_buf *x = k->in[0];
    pr_buf *y = k->out[0];
    int64_t b = pr_attr_int(k->node, "blocksize", 0);
    bool crd = !strcmp(pr_attr_str(k->node, "mode", "DCR"), "CRD");
    if (x->rank != 4 || y->rank != 4 || b < 1 || x->dims[1] % (b * b) || y->dtype != x->dtype)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "bad input or blocksize");
    int64_t N = x->dims[0], C = x->dims[1] / (b * b), H = x->dims[2], W = x->dims[3];
    if (y->dims[0] != N || y->dims[1] != C || y->dims[2] != H * b || y->dims[3] != W * b)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output does not match the input");
    int ord[PR_MAX_RANK];
    int64_t xs[PR_MAX_RANK], ys[PR_MAX_RANK];
    storage(x, s->in_lay, ord, xs);
    storage(y, s->out_lay, ord, ys);
    /* the 6 dims (n, c, h, i, w, j): x strides, y strides */
    int64_t cs_c = crd ? b * b * xs[1] : xs[1], cs_i = crd ? b * xs[1] : b * C * xs[1];
    int64_t cs_j = crd ? xs[1] : C * xs[1];
    const int64_t dims6[6] = {N, C, H, b, W, b};
    const int64_t x6[6] = {xs[0], cs_c, xs[2], cs_i, xs[3], cs_j};
    const int64_t y6[6] = {ys[0], ys[1], ys[2] * b, ys[2], ys[3] * b, ys[3]};
    /* y's storage order: plain (n, c, h, i, w, j), NHWC (n, h, i, w, j, c) */
    static const int o_plain[6] = {0, 1, 2, 3, 4, 5}, o_nhwc[6] = {0, 2, 3, 4, 5, 1};
    const int *o = s->out_lay == PR_LAYOUT_NHWC ? o_nhwc : o_plain;
    int64_t d[6], ds[6], ss[6];
    for (int q = 0; q < 6; q++) d[q] = dims6[o[q]], ds[q] = y6[o[q]], ss[q] = x6[o[q]];
    scopy(y->data, ds, x->data, ss, 6, d, pr_dtype_size(x->dtype), nt);
    return PRECIS_OK;
}

static precis_status m_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const mstate *s = state;
    const pr_buf *x = pr_kin(k, 0);
    if (!x || k->n_out < 1)
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output is missing");
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    if (s->op != M_SPLIT && !k->out[0])
        return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "output is missing");
    switch (s->op) {
    case M_REORDER: {
        int id[PR_MAX_RANK];
        for (int d = 0; d < PR_MAX_RANK; d++) id[d] = d;
        return run_permute(s, k, id, nt);
    }
    case M_TRANSPOSE: {
        int perm[PR_MAX_RANK], r = x->rank;
        if (s->nperm >= 0 && s->nperm != r)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "perm length %d != rank %d", s->nperm, r);
        for (int i = 0; i < r; i++) perm[i] = s->nperm >= 0 ? s->perm[i] : r - 1 - i;
        return run_permute(s, k, perm, nt);
    }
    case M_CONCAT: return run_concat(s, k, nt);
    case M_SLICE: return run_slice(s, k, nt);
    case M_SPLIT: return run_split(s, k, nt);
    case M_D2S: return run_d2s(s, k, nt);
    case M_RESHAPE: {
        pr_buf *y = k->out[0];
        if (y->nbytes != x->nbytes)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output has %zu bytes, input %zu", y->nbytes,
                              x->nbytes);
        if (y->data != x->data && x->nbytes) {
            int64_t one = 1, n = (int64_t)x->nbytes;
            scopy(y->data, &one, x->data, &one, 1, &n, 1, nt);
        }
        return PRECIS_OK;
    }
    default: return pr_kernelf(k, PRECIS_ERR_INTERNAL, "unknown op");
    }
}

static const char *m_describe(void *state) {
    return ((const mstate *)state)->avx512 ? "move.avx512" : "move.scalar";
}

static void m_destroy(void *state) { free(state); }

const pr_cpu_impl pr_cpu_impl_move = {
    .name = "move",
    .supports = m_supports,
    .nhwc_ok = m_nhwc_ok,
    .inplace_input = m_inplace,
    .prepare = m_prepare,
    .run = m_run,
    .describe = m_describe,
    .destroy = m_destroy,
};
