/* Reference kernels of the fused ops (ops.inc, family fused): the base op's
 * ref kernel, then the epilogue in float. Slow and obvious on purpose: these
 * are the oracle for the fast fused kernels. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "ir/act.h"

/* Y = act2(act(alpha * Y + bias) + Z), bias broadcast to Y, Z of Y's shape. */
static precis_status epilogue(pr_kernel *k, pr_buf *Y, float alpha, const pr_buf *bias,
                              const pr_buf *Z) {
    pr_act a1, a2;
    pr_act_from_node(k->node, "act", &a1);
    pr_act_from_node(k->node, "act2", &a2);
    if (Z && Z->numel != Y->numel)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual has %lld elements, output %lld",
                          (long long)Z->numel, (long long)Y->numel);
    int64_t n = Y->numel;
    float *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    float *z = Z ? malloc((size_t)(n ? n : 1) * sizeof *z) : NULL;
    float *b = NULL;
    int64_t bs[PR_MAX_RANK];
    if (bias) {
        b = malloc((size_t)(bias->numel ? bias->numel : 1) * sizeof *b);
        pr_bcast_strides(bias, Y->rank, Y->dims, bs);
    }
    if (!y || (Z && !z) || (bias && !b)) {
        free(y);
        free(z);
        free(b);
        return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    }
    pr_ref_to_f32(Y->data, Y->dtype, n, y);
    if (Z) pr_ref_to_f32(Z->data, Z->dtype, n, z);
    if (bias) pr_ref_to_f32(bias->data, bias->dtype, bias->numel, b);
    int64_t idx[PR_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        float v = alpha * y[i];
        if (b) {
            int64_t off = 0;
            for (int d = 0; d < Y->rank; d++) off += idx[d] * bs[d];
            v += b[off];
            for (int d = Y->rank - 1; d >= 0; d--) {
                if (++idx[d] < Y->dims[d]) break;
                idx[d] = 0;
            }
        }
        v = pr_act_apply(&a1, v);
        if (z) v += z[i];
        v = pr_act_apply(&a2, v);
        y[i] = v;
    }
    pr_ref_from_f32(y, n, Y->dtype, Y->data);
    free(y);
    free(z);
    free(b);
    return PRECIS_OK;
}

precis_status ref_FusedConv(pr_kernel *k) {
    pr_kernel sub = *k;
    sub.n_in = k->n_in < 3 ? k->n_in : 3;
    precis_status st = ref_Conv(&sub);
    if (st) return st;
    return epilogue(k, k->out[0], 1.0f, NULL, pr_kin(k, 3));
}

/* A 2-D transposed copy of b (same dtype). */
static precis_status transposed(pr_kernel *k, const pr_buf *b, pr_buf *t, void **mem) {
    *t = *b;
    size_t es = pr_dtype_size(b->dtype);
    int64_t R = b->dims[0], C = b->dims[1];
    unsigned char *d = malloc((size_t)(b->numel ? b->numel : 1) * es);
    if (!d) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    const unsigned char *s = b->data;
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++)
            memcpy(d + (size_t)(c * R + r) * es, s + (size_t)(r * C + c) * es, es);
    t->dims[0] = C;
    t->dims[1] = R;
    t->data = d;
    *mem = d;
    return PRECIS_OK;
}

precis_status ref_FusedMatMul(pr_kernel *k) {
    pr_buf ab[2];
    const pr_buf *in[2];
    void *mem[2] = {NULL, NULL};
    precis_status st = PRECIS_OK;
    for (int i = 0; i < 2; i++) {
        in[i] = k->in[i];
        if (!pr_attr_int(k->node, i ? "transB" : "transA", 0)) continue;
        if (k->in[i]->rank != 2) {
            st = pr_kernelf(k, PRECIS_ERR_SHAPE, "trans%s needs a 2-D operand", i ? "B" : "A");
            goto done;
        }
        if ((st = transposed(k, k->in[i], &ab[i], &mem[i]))) goto done;
        in[i] = &ab[i];
    }
    pr_kernel sub = *k;
    sub.n_in = 2;
    sub.in = in;
    if ((st = ref_MatMul(&sub))) goto done;
    st = epilogue(k, k->out[0], pr_attr_float(k->node, "alpha", 1.0f), pr_kin(k, 2), pr_kin(k, 3));
done:
    free(mem[0]);
    free(mem[1]);
    return st;
}

/* ------------------------------------------------------------- Attention */

/* d broadcast with e (1 is the neutral size); -1 when they do not. */
static int64_t bdim(int64_t d, int64_t e) { return d == 1 ? e : (e == 1 || e == d ? d : -1); }

precis_status pr_attn_geom_of(pr_kernel *k, pr_attn_geom *a) {
    const pr_buf *Q = k->in[0], *K = k->in[1], *V = k->in[2], *M = pr_kin(k, 3);
    const pr_buf *Y = k->out[0];
    memset(a, 0, sizeof *a);
    if (!Q || !K || !V || !Y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "needs Q, K, V and Y");
    if (Q->rank < 2 || K->rank < 2 || V->rank < 2 || Y->rank < 2 || (M && M->rank > Y->rank))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "Q, K, V need rank >= 2, the mask at most Y's");
    a->kt = pr_attr_int(k->node, "k_transposed", 0) != 0;
    /* heads_bshd bit o (Q K V, 8: Y): stored with axes r-3 and r-2 swapped */
    const int64_t hb = pr_attr_int(k->node, "heads_bshd", 0);
    if (hb && (Y->rank < 3 || Q->rank < 3 || K->rank < 3 || V->rank < 3))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "heads_bshd needs Q, K, V and Y of rank >= 3");
    /* qkv_heads H: Q, K, V are views [.., S, H, D] of P [.., S, 3HD] at offsets 0, HD, 2HD */
    const int64_t qh = pr_attr_int(k->node, "qkv_heads", 0);
    pr_buf pv[3];
    int64_t hd = 0;
    if (qh) {
        if ((hb & 7) != 7 || a->kt || Q->rank + 1 > PR_MAX_RANK || qh < 1 ||
            Q->dims[Q->rank - 1] % (3 * qh))
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "qkv_heads %lld: Q [.., %lld] does not split",
                              (long long)qh, (long long)Q->dims[Q->rank - 1]);
        hd = Q->dims[Q->rank - 1] / 3;
        for (int o = 0; o < 3; o++) {
            pv[o] = *Q;
            pv[o].dims[Q->rank - 1] = qh;
            pv[o].dims[Q->rank] = hd / qh;
            pv[o].rank = Q->rank + 1;
            pv[o].numel = Q->numel / 3;
            a->off0[o] = o * hd;
        }
        Q = &pv[0];
        K = &pv[1];
        V = &pv[2];
    }
    int64_t ld[4][PR_MAX_RANK]; /* logical dims of Q, K, V, Y */
    const pr_buf *qkvy[4] = {Q, K, V, Y};
    for (int o = 0; o < 4; o++) {
        const pr_buf *x = qkvy[o];
        memcpy(ld[o], x->dims, sizeof ld[o]);
        if (hb >> (o == 3 ? 3 : o) & 1) {
            ld[o][x->rank - 3] = x->dims[x->rank - 2];
            ld[o][x->rank - 2] = x->dims[x->rank - 3];
        }
    }
    const int64_t *yd = ld[3], *qd = ld[0], *kd = ld[1], *vd = ld[2];
    a->scale = pr_attr_float(k->node, "scale", 1.0f);
    a->has_mask = M != NULL;
    const int kr = K->rank;
    int64_t qs = qd[Q->rank - 2], ks = kd[a->kt ? kr - 1 : kr - 2];
    int64_t ms = M && M->rank >= 2 ? M->dims[M->rank - 2] : 1;
    int64_t mk = M && M->rank >= 1 ? M->dims[M->rank - 1] : 1;
    a->D = qd[Q->rank - 1];
    a->Sq = yd[Y->rank - 2];
    a->Sk = vd[V->rank - 2];
    a->Dv = vd[V->rank - 1];
    if (kd[a->kt ? kr - 2 : kr - 1] != a->D || bdim(qs, ms) != a->Sq ||
        bdim(ks, mk) != a->Sk || yd[Y->rank - 1] != a->Dv)
        return pr_kernelf(k, PRECIS_ERR_SHAPE,
                          "Q [.., %lld, %lld], K [.., %lld, %lld] (k_transposed %d), V [.., %lld, "
                          "%lld] and Y [.., %lld, %lld] do not match",
                          (long long)qs, (long long)a->D, (long long)kd[kr - 2],
                          (long long)kd[kr - 1], a->kt, (long long)a->Sk, (long long)a->Dv,
                          (long long)a->Sq, (long long)yd[Y->rank - 1]);
    a->nbd = Y->rank - 2;
    a->nb = 1;
    for (int d = 0; d < a->nbd; d++) {
        a->bdims[d] = yd[d];
        a->nb *= yd[d];
    }
    /* each operand against Y's batch dims + its own last two as broadcast */
    const pr_buf *ops[4] = {Q, K, V, M};
    const int64_t last2[4][2] = {{a->Sq, a->D},
                                 {a->kt ? a->D : a->Sk, a->kt ? a->Sk : a->D},
                                 {a->Sk, a->Dv},
                                 {a->Sq, a->Sk}};
    for (int o = 0; o < 4; o++) {
        const pr_buf *x = ops[o];
        if (!x) continue;
        int64_t od[PR_MAX_RANK], st[PR_MAX_RANK];
        memcpy(od, a->bdims, sizeof od);
        od[a->nbd] = last2[o][0];
        od[a->nbd + 1] = last2[o][1];
        const bool sw = o < 3 && (hb >> o & 1);
        const int yr = Y->rank;
        if (sw && x->rank != Y->rank)
            return pr_kernelf(k, PRECIS_ERR_SHAPE, "heads_bshd: input %d needs Y's rank", o);
        if (sw) { /* compare and stride the stored order, then swap back */
            int64_t t = od[yr - 3];
            od[yr - 3] = od[yr - 2];
            od[yr - 2] = t;
        }
        for (int d = 0; d < x->rank; d++)
            if (x->dims[d] != 1 && x->dims[d] != od[d + Y->rank - x->rank])
                return pr_kernelf(k, PRECIS_ERR_SHAPE, "input %d dim %d (%lld) does not broadcast",
                                  o, d, (long long)x->dims[d]);
        pr_bcast_strides(x, Y->rank, od, st);
        for (int d = 0; qh && o < 3 && d < Y->rank; d++) /* dims outside the head split */
            if (st[d] >= hd) st[d] *= 3;
        if (sw) {
            int64_t t = st[yr - 3];
            st[yr - 3] = st[yr - 2];
            st[yr - 2] = t;
        }
        memcpy(a->bst[o], st, (size_t)a->nbd * sizeof *st);
        a->rs[o] = st[a->nbd];
        a->cs[o] = st[a->nbd + 1];
    }
    /* Y: contiguous in its stored order */
    int64_t ys[PR_MAX_RANK], s = 1;
    for (int d = Y->rank - 1; d >= 0; d--) {
        ys[d] = s;
        s *= Y->dims[d];
    }
    if (hb & 8) {
        int64_t t = ys[Y->rank - 3];
        ys[Y->rank - 3] = ys[Y->rank - 2];
        ys[Y->rank - 2] = t;
    }
    memcpy(a->ybst, ys, (size_t)a->nbd * sizeof *ys);
    a->yrs = ys[a->nbd];
    return PRECIS_OK;
}

int64_t pr_attn_yoff(const pr_attn_geom *a, int64_t b) {
    int64_t off = 0;
    for (int d = a->nbd - 1; d >= 0; d--) {
        off += (b % a->bdims[d]) * a->ybst[d];
        b /= a->bdims[d];
    }
    return off;
}

void pr_attn_offsets(const pr_attn_geom *a, int64_t b, int64_t off[4]) {
    off[0] = a->off0[0];
    off[1] = a->off0[1];
    off[2] = a->off0[2];
    off[3] = 0;
    for (int d = a->nbd - 1; d >= 0; d--) {
        int64_t i = b % a->bdims[d];
        b /= a->bdims[d];
        for (int o = 0; o < 4; o++) off[o] += i * a->bst[o][d];
    }
}

/* float32 copy of a buffer (NULL in, NULL out); *ok false on OOM. */
static float *f32_copy(const pr_buf *b, bool *ok) {
    if (!b) return NULL;
    float *d = malloc((size_t)(b->numel ? b->numel : 1) * sizeof *d);
    if (!d) {
        *ok = false;
        return NULL;
    }
    pr_ref_to_f32(b->data, b->dtype, b->numel, d);
    return d;
}

/* Scores, softmax and the weighted sum in double, row by row. */
precis_status ref_Attention(pr_kernel *k) {
    pr_attn_geom a;
    precis_status st = pr_attn_geom_of(k, &a);
    if (st) return st;
    pr_buf *Y = k->out[0];
    bool ok = true;
    float *q = f32_copy(k->in[0], &ok), *kk = f32_copy(k->in[1], &ok);
    float *v = f32_copy(k->in[2], &ok), *m = f32_copy(pr_kin(k, 3), &ok);
    float *y = malloc((size_t)(Y->numel ? Y->numel : 1) * sizeof *y);
    double *s = malloc((size_t)(a.Sk ? a.Sk : 1) * sizeof *s);
    if (!ok || !y || !s) {
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    /* K' element (d, j): K[j][d], or K[d][j] when k_transposed */
    const int64_t kds = a.kt ? a.rs[1] : a.cs[1], kjs = a.kt ? a.cs[1] : a.rs[1];
    for (int64_t b = 0; b < a.nb; b++) {
        int64_t off[4];
        pr_attn_offsets(&a, b, off);
        for (int64_t i = 0; i < a.Sq; i++) {
            const float *qi = q + off[0] + i * a.rs[0];
            double mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < a.Sk; j++) {
                double acc = 0;
                for (int64_t d = 0; d < a.D; d++)
                    acc += (double)qi[d * a.cs[0]] * kk[off[1] + d * kds + j * kjs];
                acc *= a.scale;
                if (m) acc += m[off[3] + i * a.rs[3] + j * a.cs[3]];
                s[j] = acc;
                mx = acc > mx ? acc : mx;
            }
            for (int64_t j = 0; j < a.Sk; j++) sum += s[j] = exp(s[j] - mx);
            float *yi = y + pr_attn_yoff(&a, b) + i * a.yrs;
            for (int64_t c = 0; c < a.Dv; c++) {
                double acc = 0;
                for (int64_t j = 0; j < a.Sk; j++)
                    acc += s[j] * v[off[2] + j * a.rs[2] + c * a.cs[2]];
                yi[c] = a.Sk ? (float)(acc / sum) : 0.0f; /* no keys: MatMul over nothing */
            }
        }
    }
    if (pr_attr_int(k->node, "y_type", 0)) { /* ops.inc: e4m3 of R rounded to Q's dtype */
        const float ys = pr_attr_float(k->node, "y_scale", 0.0f);
        pr_dtype rt = k->in[0]->dtype;
        size_t rb = (size_t)Y->numel * pr_dtype_size(rt);
        void *r = malloc(rb ? rb : 1);
        if (!r) {
            st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
            goto done;
        }
        if (Y->dtype != PRECIS_FLOAT8E4M3FN || !(ys > 0.0f)) {
            free(r);
            st = pr_kernelf(k, PRECIS_ERR_SHAPE, "y_type: Y must be float8e4m3fn, y_scale > 0");
            goto done;
        }
        pr_ref_from_f32(y, Y->numel, rt, r);
        pr_ref_quant_e4m3(r, rt, Y->numel, ys, Y->data);
        free(r);
        goto done;
    }
    pr_ref_from_f32(y, Y->numel, Y->dtype, Y->data);
done:
    free(q);
    free(kk);
    free(v);
    free(m);
    free(y);
    free(s);
    return st;
}

precis_status ref_Reorder(pr_kernel *k) {
    if (k->out[0]->nbytes) memcpy(k->out[0]->data, k->in[0]->data, k->out[0]->nbytes);
    return PRECIS_OK;
}

/* ------------------------------------------------------------------ INT8 */

/* A float32 copy of q (int8/uint8/float32) holding real values: q * scale,
 * scale[c] along `axis` (n_scale entries; 1: one scale for all). */
static precis_status dequant(pr_kernel *k, const pr_buf *q, const float *scale, int64_t n_scale,
                             int axis, pr_buf *out) {
    *out = *q;
    out->dtype = PRECIS_FLOAT32;
    out->nbytes = (size_t)q->numel * sizeof(float);
    float *d = malloc(out->nbytes ? out->nbytes : 1);
    if (!d) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    pr_ref_to_f32(q->data, q->dtype, q->numel, d);
    out->data = d;
    if (q->dtype == PRECIS_FLOAT32 || q->dtype == PRECIS_FLOAT16 || q->dtype == PRECIS_BFLOAT16)
        return PRECIS_OK; /* real values already */
    int64_t inner = 1, C = n_scale > 1 ? q->dims[axis] : 1;
    if (n_scale > 1)
        for (int i = axis + 1; i < q->rank; i++) inner *= q->dims[i];
    if (n_scale > 1 && C != n_scale) {
        free(d);
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "%lld scales for %lld channels",
                          (long long)n_scale, (long long)C);
    }
    for (int64_t i = 0; i < q->numel; i++) d[i] *= scale[n_scale > 1 ? (i / inner) % C : 0];
    return PRECIS_OK;
}

/* Run `fn` (ref_FusedConv, ref_FusedMatMul, a binary op or a pool) on
 * real-valued copies of the quantized operands in[0..n_in) (NULL: an omitted
 * optional input), apply `act` (may be NULL) to its float result, then
 * quantize into out[0] when y_type asks for it. */
static precis_status q_run(pr_kernel *k, pr_kernel_fn fn, const pr_buf **in, int n_in,
                           const pr_act *act) {
    pr_buf *Y = k->out[0], yf = *Y;
    float *tmp = NULL;
    if (Y->dtype != PRECIS_FLOAT32) {
        yf.dtype = PRECIS_FLOAT32;
        yf.nbytes = (size_t)Y->numel * sizeof(float);
        tmp = malloc(yf.nbytes ? yf.nbytes : 1);
        if (!tmp) return pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
        yf.data = tmp;
    }
    pr_buf *outs[1] = {&yf};
    pr_kernel sub = *k;
    sub.n_in = n_in;
    sub.in = in;
    sub.n_out = 1;
    sub.out = outs;
    precis_status st = fn(&sub);
    if (!st && act && act->kind != PR_ACT_NONE) {
        float *y = yf.data;
        for (int64_t i = 0; i < Y->numel; i++) y[i] = pr_act_apply(act, y[i]);
    }
    if (!st && tmp) {
        float inv = 1.0f / pr_attr_float(k->node, "y_scale", 1.0f);
        for (int64_t i = 0; i < Y->numel; i++) tmp[i] *= inv;
        pr_ref_from_f32(tmp, Y->numel, Y->dtype, Y->data);
    }
    free(tmp);
    return st;
}

static precis_status q_residual_buf(pr_kernel *k, const pr_buf *z, pr_buf *zf, const pr_buf **out) {
    *out = NULL;
    if (!z) return PRECIS_OK;
    float s = pr_attr_float(k->node, "z_scale", 1.0f);
    precis_status st = dequant(k, z, &s, 1, 0, zf);
    if (!st) *out = zf;
    return st;
}

precis_status ref_QConv(pr_kernel *k) {
    const pr_buf *X = k->in[0], *W = k->in[1], *ws = k->in[2];
    float xs = pr_attr_float(k->node, "x_scale", 1.0f);
    pr_buf xf = {0}, wf = {0}, zf = {0};
    const pr_buf *in4[4] = {&xf, &wf, pr_kin(k, 3), NULL};
    precis_status st = dequant(k, X, &xs, 1, 0, &xf);
    if (!st) st = dequant(k, W, ws->data, ws->numel, 0, &wf);
    if (!st) st = q_residual_buf(k, pr_kin(k, 4), &zf, &in4[3]);
    if (!st) st = q_run(k, ref_FusedConv, in4, in4[3] ? 4 : (in4[2] ? 3 : 2), NULL);
    free(xf.data);
    free(wf.data);
    free(zf.data);
    return st;
}

precis_status ref_QMatMul(pr_kernel *k) {
    const pr_buf *A = k->in[0], *B = k->in[1], *bs = k->in[2];
    float as = pr_attr_float(k->node, "a_scale", 1.0f);
    bool tb = pr_attr_int(k->node, "transB", 0) != 0;
    pr_buf af = {0}, bf = {0}, zf = {0};
    const pr_buf *in4[4] = {&af, &bf, pr_kin(k, 3), NULL};
    precis_status st = dequant(k, A, &as, 1, 0, &af);
    if (!st) st = dequant(k, B, bs->data, bs->numel, tb ? 0 : B->rank - 1, &bf);
    if (!st) st = q_residual_buf(k, pr_kin(k, 4), &zf, &in4[3]);
    if (!st) st = q_run(k, ref_FusedMatMul, in4, in4[3] ? 4 : (in4[2] ? 3 : 2), NULL);
    free(af.data);
    free(bf.data);
    free(zf.data);
    return st;
}

/* The op named by attribute kind. */
static pr_op q_kind(const pr_kernel *k) { return pr_op_lookup(pr_attr_str(k->node, "kind", "")); }

precis_status ref_QBinary(pr_kernel *k) {
    pr_op kind = q_kind(k);
    pr_kernel_fn fn = kind == PR_OP_Add   ? ref_Add
                      : kind == PR_OP_Sub ? ref_Sub
                      : kind == PR_OP_Mul ? ref_Mul
                                          : NULL;
    if (!fn)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unknown kind '%s'",
                          pr_attr_str(k->node, "kind", ""));
    float as = pr_attr_float(k->node, "a_scale", 1.0f);
    float bs = pr_attr_float(k->node, "b_scale", 1.0f);
    pr_act act;
    pr_act_from_node(k->node, "act", &act);
    pr_buf af = {0}, bf = {0};
    const pr_buf *in2[2] = {&af, &bf};
    precis_status st = dequant(k, k->in[0], &as, 1, 0, &af);
    if (!st) st = dequant(k, k->in[1], &bs, 1, 0, &bf);
    if (!st) st = q_run(k, fn, in2, 2, &act);
    free(af.data);
    free(bf.data);
    return st;
}

precis_status ref_QPool(pr_kernel *k) {
    pr_op kind = q_kind(k);
    pr_kernel_fn fn = kind == PR_OP_GlobalAveragePool ? ref_GlobalAveragePool
                      : kind == PR_OP_AveragePool     ? ref_AveragePool
                                                      : NULL;
    if (!fn)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "unknown kind '%s'",
                          pr_attr_str(k->node, "kind", ""));
    float xs = pr_attr_float(k->node, "x_scale", 1.0f);
    pr_buf xf = {0};
    const pr_buf *in1[1] = {&xf};
    precis_status st = dequant(k, k->in[0], &xs, 1, 0, &xf);
    if (!st) st = q_run(k, fn, in1, 1, NULL);
    free(xf.data);
    return st;
}

/* ------------------------------------------------------------- EmbedLayerNorm */

/* A scratch buffer of dtype dt and dims (64-byte aligned, b->data NULL on OOM). */
static void emb_buf(pr_buf *b, pr_dtype dt, int rank, const int64_t *dims) {
    memset(b, 0, sizeof *b);
    b->dtype = dt;
    b->rank = rank;
    memcpy(b->dims, dims, sizeof(int64_t) * (size_t)rank);
    b->numel = pr_numel(rank, dims);
    b->nbytes = (size_t)b->numel * pr_dtype_size(dt);
    b->data = aligned_alloc(64, (b->nbytes + 63) / 64 * 64 + 64);
}

/* ops.inc: the Gathers, the Sum and the LayerNormalization of the unfused
 * graph, each by its own ref kernel (so the numbers are theirs). */
precis_status ref_EmbedLayerNorm(pr_kernel *k) {
    for (int i = 0; i < 6; i++)
        if (!pr_kin(k, i))
            return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input %d is missing", i);
    const pr_buf *W[2] = {k->in[0], k->in[2]}, *I[2] = {k->in[1], k->in[3]};
    pr_buf *Y = k->out[0];
    if (!Y) return PRECIS_OK;
    if (I[0]->rank + 1 > PR_MAX_RANK || W[0]->rank != 2 || W[1]->rank != 2)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "rank-2 tables and indices of rank < %d",
                          PR_MAX_RANK);
    if (W[0]->dtype != Y->dtype || W[1]->dtype != Y->dtype || k->in[4]->dtype != Y->dtype)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED,
                          "ref Sum reads one dtype: tables and P must have sum_type");
    int64_t d[PR_MAX_RANK];
    memcpy(d, I[0]->dims, sizeof(int64_t) * (size_t)I[0]->rank);
    d[I[0]->rank] = W[0]->dims[1];
    const int r = I[0]->rank + 1;
    pr_node sub; /* the Gathers: axis 0, no attributes */
    memset(&sub, 0, sizeof sub);
    sub.name = k->node->name;
    sub.op_type = "Gather";
    sub.domain = "";
    sub.op = PR_OP_Gather;
    sub.opset = 13;
    pr_buf g[3];
    emb_buf(&g[0], W[0]->dtype, r, d);
    emb_buf(&g[1], W[1]->dtype, r, d);
    emb_buf(&g[2], Y->dtype, r, d);
    precis_status st = PRECIS_OK;
    if (!g[0].data || !g[1].data || !g[2].data)
        st = pr_kernelf(k, PRECIS_ERR_OOM, "out of memory");
    for (int j = 0; j < 2 && !st; j++) {
        const pr_buf *in[2] = {W[j], I[j]};
        pr_buf *out[1] = {&g[j]};
        pr_kernel gk = *k;
        gk.node = &sub;
        gk.n_in = 2;
        gk.in = in;
        gk.n_out = 1;
        gk.out = out;
        st = ref_Gather(&gk);
    }
    if (!st) { /* Sum(g0, g1, P) into sum_type */
        const pr_buf *in[3] = {&g[0], &g[1], k->in[4]};
        pr_buf *out[1] = {&g[2]};
        pr_kernel sk = *k;
        sk.n_in = 3;
        sk.in = in;
        sk.n_out = 1;
        sk.out = out;
        st = ref_Sum(&sk);
    }
    if (!st) { /* the LayerNormalization: this node's attributes and outputs */
        const pr_buf *in[3] = {&g[2], k->in[5], pr_kin(k, 6)};
        pr_kernel lk = *k;
        lk.n_in = 3;
        lk.in = in;
        st = ref_LayerNormalization(&lk);
    }
    for (int j = 0; j < 3; j++) free(g[j].data);
    return st;
}
