/* oneDNN glue shared by the dnnl impls (see dnnl_common.h). */
#include "backends/cpu/dnnl_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRECIS_HAVE_DNNL

#include <omp.h>

#include <dnnl_debug.h>

#include "backends/cpu/kernels.h"

/* ------------------------------------------------------------- engine */

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status = dnnl_success;

static void engine_init(void) {
    /* AMX without its palette leaf (cpu.h amx_palette): oneDNN's AMX kernels
     * would run tilezero on an all-zero tile configuration (SIGILL, seen on
     * a Firecracker VM whose cpuid stops at leaf 0x1C); cap oneDNN below AMX.
     * ONEDNN_MAX_CPU_ISA, when set, was read first and wins. */
    const pr_cpu_features *f = pr_cpu_features_get();
    if ((f->amx_tile || f->amx_int8 || f->amx_bf16) && !f->amx_palette)
        (void)dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx512_core_bf16);
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (engine_status != dnnl_success) engine = NULL;
}

dnnl_engine_t pr_dnnl_engine(pr_err *e) {
    pthread_once(&engine_once, engine_init);
    if (!engine) pr_dnnl_check(engine_status, e, "creating the oneDNN CPU engine");
    return engine;
}

const char *pr_dnnl_status_str(dnnl_status_t s) {
    switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "unimplemented (no implementation for these parameters)";
    case dnnl_iterator_ends: return "iterator ends";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return dnnl_status2str(s);
    }
}

precis_status pr_dnnl_check(dnnl_status_t s, pr_err *e, const char *what) {
    if (s == dnnl_success) return PRECIS_OK;
    precis_status st = s == dnnl_unimplemented   ? PRECIS_ERR_UNSUPPORTED
                       : s == dnnl_out_of_memory ? PRECIS_ERR_OOM
                                                 : PRECIS_ERR_INTERNAL;
    return pr_errf(e, st, "%s: oneDNN %s", what, pr_dnnl_status_str(s));
}

/* ----------------------------------------------------- bf16 capability */

static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;
static bool bf16_ok;

static bool bf16_pd_native(const_dnnl_op_desc_t d) {
    dnnl_engine_t eng = pr_dnnl_engine(NULL);
    dnnl_primitive_desc_t pd = NULL;
    if (!eng || dnnl_primitive_desc_create(&pd, d, NULL, eng, NULL) != dnnl_success) return false;
    const char *impl = NULL;
    bool ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
              impl && strncmp(impl, "ref", 3) != 0;
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

static void bf16_init(void) {
    dnnl_memory_desc_t s, w, d;
    const dnnl_dims_t sd = {1, 32, 8, 8}, wd = {32, 32, 3, 3}, st = {1, 1}, pad = {1, 1};
    dnnl_convolution_desc_t cd;
    bool conv_ok =
        dnnl_memory_desc_init_by_tag(&s, 4, sd, dnnl_bf16, dnnl_nhwc) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&w, 4, wd, dnnl_bf16, dnnl_format_tag_any) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&d, 4, sd, dnnl_bf16, dnnl_nhwc) == dnnl_success &&
        dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &s,
                                           &w, NULL, &d, st, pad, pad) == dnnl_success &&
        bf16_pd_native(&cd);
    const dnnl_dims_t ad = {64, 64};
    dnnl_matmul_desc_t md;
    bool mm_ok =
        dnnl_memory_desc_init_by_tag(&s, 2, ad, dnnl_bf16, dnnl_ab) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&w, 2, ad, dnnl_bf16, dnnl_format_tag_any) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&d, 2, ad, dnnl_bf16, dnnl_ab) == dnnl_success &&
        dnnl_matmul_desc_init(&md, &s, &w, NULL, &d) == dnnl_success && bf16_pd_native(&md);
    bf16_ok = conv_ok && mm_ok;
}

bool pr_dnnl_bf16_ok(void) {
    pthread_once(&bf16_once, bf16_init);
    return bf16_ok;
}

/* ------------------------------------------------------- descs, post-ops */

dnnl_data_type_t pr_dnnl_dt(pr_dtype dt) {
    switch (dt) {
    case PRECIS_FLOAT32: return dnnl_f32;
    case PRECIS_BFLOAT16: return dnnl_bf16;
    default: return dnnl_data_type_undef;
    }
}

dnnl_data_type_t pr_dnnl_qdt(pr_dtype dt) {
    switch (dt) {
    case PRECIS_INT8: return dnnl_s8;
    case PRECIS_UINT8: return dnnl_u8;
    default: return pr_dnnl_dt(dt);
    }
}

dnnl_status_t pr_dnnl_md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims,
                               dnnl_data_type_t dt) {
    if (rank < 1 || rank > DNNL_MAX_NDIMS) return dnnl_invalid_arguments;
    dnnl_dims_t d, s;
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        d[i] = dims[i];
        s[i] = stride;
        stride *= dims[i] > 0 ? dims[i] : 1;
    }
    return dnnl_memory_desc_init_by_strides(md, rank, d, dt, s);
}

dnnl_status_t pr_dnnl_md_act4(dnnl_memory_desc_t *md, const int64_t *nchw, dnnl_data_type_t dt,
                              int layout) {
    dnnl_dims_t d = {nchw[0], nchw[1], nchw[2], nchw[3]};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dt,
                                        layout == PR_LAYOUT_NHWC ? dnnl_nhwc : dnnl_nchw);
}

dnnl_status_t pr_dnnl_po_init(pr_dnnl_po *p) {
    memset(p, 0, sizeof *p);
    return dnnl_post_ops_create(&p->po);
}

void pr_dnnl_po_destroy(pr_dnnl_po *p) {
    if (p->po) dnnl_post_ops_destroy(p->po);
    p->po = NULL;
}

typedef struct elt {
    dnnl_alg_kind_t alg;
    float alpha, beta;
} elt;

/* Would these eltwise entries collide with the chain's or each other's? */
static bool elts_fit(const pr_dnnl_po *p, const elt *e, int n) {
    if (p->n_elt + n > PR_DNNL_MAX_ELT) return false;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < p->n_elt; j++)
            if (p->alg[j] == e[i].alg && (p->alpha[j] != e[i].alpha || p->beta[j] != e[i].beta))
                return false;
        for (int j = 0; j < i; j++)
            if (e[j].alg == e[i].alg && (e[j].alpha != e[i].alpha || e[j].beta != e[i].beta))
                return false;
    }
    return true;
}

/* Appends the first encoding (of n_enc, each of len[k] entries) that fits. */
static dnnl_status_t append_first(pr_dnnl_po *p, const elt (*enc)[2], const int *len, int n_enc) {
    int first = p->pref < n_enc ? p->pref : n_enc - 1;
    for (int kk = 0; kk < n_enc; kk++) {
        int k = (first + kk) % n_enc;
        if (!elts_fit(p, enc[k], len[k])) continue;
        for (int i = 0; i < len[k]; i++) {
            dnnl_status_t s = dnnl_post_ops_append_eltwise(p->po, 1.0f, enc[k][i].alg,
                                                           enc[k][i].alpha, enc[k][i].beta);
            if (s != dnnl_success) return s;
            p->alg[p->n_elt] = enc[k][i].alg;
            p->alpha[p->n_elt] = enc[k][i].alpha;
            p->beta[p->n_elt] = enc[k][i].beta;
            p->n_elt++;
        }
        return dnnl_success;
    }
    return dnnl_unimplemented;
}

#define ONE(alg, a, b)                                                                             \
    {                                                                                              \
        {alg, a, b}, { dnnl_eltwise_linear, 0, 0 }                                                 \
    }

dnnl_status_t pr_dnnl_po_act(pr_dnnl_po *p, const pr_act *a) {
    const float inf = INFINITY;
    switch (a->kind) {
    case PR_ACT_NONE: return dnnl_success;
    case PR_ACT_RELU: {
        const elt enc[3][2] = {ONE(dnnl_eltwise_relu, 0, 0), ONE(dnnl_eltwise_clip_v2, 0, inf),
                               ONE(dnnl_eltwise_clip, 0, inf)};
        return append_first(p, enc, (const int[]){1, 1, 1}, 3);
    }
    case PR_ACT_LEAKY_RELU: {
        const elt enc[1][2] = {ONE(dnnl_eltwise_relu, a->alpha, 0)};
        return append_first(p, enc, (const int[]){1}, 1);
    }
    case PR_ACT_CLIP: {
        const elt enc[2][2] = {ONE(dnnl_eltwise_clip_v2, a->alpha, a->beta),
                               ONE(dnnl_eltwise_clip, a->alpha, a->beta)};
        return append_first(p, enc, (const int[]){1, 1}, 2);
    }
    case PR_ACT_AFFINE: {
        const elt enc[1][2] = {ONE(dnnl_eltwise_linear, a->alpha, a->beta)};
        return append_first(p, enc, (const int[]){1}, 1);
    }
    case PR_ACT_HARD_SIGMOID: {
        /* no hardsigmoid in 2.6: alpha*x + beta, then clip to [0, 1] */
        const elt enc[2][2] = {
            {{dnnl_eltwise_linear, a->alpha, a->beta}, {dnnl_eltwise_clip_v2, 0, 1}},
            {{dnnl_eltwise_linear, a->alpha, a->beta}, {dnnl_eltwise_clip, 0, 1}}};
        return append_first(p, enc, (const int[]){2, 2}, 2);
    }
    default: break;
    }
    dnnl_alg_kind_t alg;
    float alpha = 0;
    switch (a->kind) {
    case PR_ACT_SIGMOID: alg = dnnl_eltwise_logistic; break;
    case PR_ACT_HARD_SWISH: alg = dnnl_eltwise_hardswish; break; /* 2.6: x*relu6(x+3)/6 */
    case PR_ACT_TANH: alg = dnnl_eltwise_tanh; break;
    case PR_ACT_GELU: alg = dnnl_eltwise_gelu_erf; break;
    case PR_ACT_GELU_TANH: alg = dnnl_eltwise_gelu_tanh; break;
    case PR_ACT_SWISH:
        alg = dnnl_eltwise_swish;
        alpha = 1.0f;
        break;
    default: return dnnl_unimplemented;
    }
    const elt enc[1][2] = {ONE(alg, alpha, 0)};
    return append_first(p, enc, (const int[]){1}, 1);
}

dnnl_status_t pr_dnnl_po_scale(pr_dnnl_po *p, float s) {
    const elt enc[2][2] = {ONE(dnnl_eltwise_linear, s, 0), ONE(dnnl_eltwise_pow, s, 1)};
    return append_first(p, enc, (const int[]){1, 1}, 2);
}

#undef ONE

dnnl_status_t pr_dnnl_po_sum(pr_dnnl_po *p) { return dnnl_post_ops_append_sum(p->po, 1.0f); }

dnnl_status_t pr_dnnl_po_sum2(pr_dnnl_po *p, float scale, dnnl_data_type_t dt) {
    return dnnl_post_ops_append_sum_v2(p->po, scale, dt);
}

dnnl_status_t pr_dnnl_po_binary(pr_dnnl_po *p, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *md,
                                int *idx) {
    *idx = dnnl_post_ops_len(p->po);
    return dnnl_post_ops_append_binary(p->po, alg, md);
}

dnnl_status_t pr_dnnl_po_epilogue(pr_dnnl_po *p, const pr_act *act, bool residual,
                                  const pr_act *act2) {
    dnnl_status_t r = dnnl_unimplemented;
    for (int pref = 0; pref < 2 && r != dnnl_success; pref++) {
        pr_dnnl_po_destroy(p);
        if ((r = pr_dnnl_po_init(p)) != dnnl_success) return r;
        p->pref = pref;
        r = pr_dnnl_po_act(p, act);
        if (r == dnnl_success && residual) r = pr_dnnl_po_sum(p);
        if (r == dnnl_success) r = pr_dnnl_po_act(p, act2);
    }
    return r;
}

bool pr_dnnl_epilogue_ok(const pr_act *act, bool residual, const pr_act *act2) {
    pr_dnnl_po p = {0};
    bool ok = pr_dnnl_po_epilogue(&p, act, residual, act2) == dnnl_success;
    pr_dnnl_po_destroy(&p);
    return ok;
}

/* ---------------------------------------------------------- INT8 epilogue */

static bool q8(pr_dtype dt) { return dt == PRECIS_INT8 || dt == PRECIS_UINT8; }

static bool homogeneous(const pr_act *a) {
    return a->kind == PR_ACT_NONE || a->kind == PR_ACT_RELU || a->kind == PR_ACT_LEAKY_RELU ||
           a->kind == PR_ACT_CLIP || a->kind == PR_ACT_AFFINE;
}

bool pr_dnnl_qepi_init(pr_dnnl_qepi *q, const pr_node *n, pr_dtype z_dt, pr_dtype y_dt) {
    memset(q, 0, sizeof *q);
    if (!pr_act_from_node(n, "act", &q->act) || !pr_act_from_node(n, "act2", &q->act2))
        return false;
    q->y_dt = y_dt;
    q->z_dt = z_dt;
    q->y_scale = 1.0f;
    q->z_scale = 1.0f;
    if (q8(y_dt)) {
        q->y_scale = pr_attr_float(n, "y_scale", 0.0f);
        if (!(q->y_scale > 0.0f) || !isfinite(q->y_scale) || !isfinite(1.0f / q->y_scale))
            return false;
    } else if (y_dt != PRECIS_FLOAT32) {
        return false;
    }
    if (z_dt == PRECIS_UNDEFINED) {
        q->z_mode = PR_QZ_NONE;
    } else if (q8(z_dt)) {
        q->z_scale = pr_attr_float(n, "z_scale", 0.0f);
        if (!(q->z_scale > 0.0f) || !isfinite(q->z_scale)) return false;
        q->z_mode = q8(y_dt) ? PR_QZ_SUM : PR_QZ_DEQUANT;
    } else if (z_dt == PRECIS_FLOAT32) {
        q->z_mode = q8(y_dt) ? PR_QZ_BINARY : PR_QZ_SUM;
    } else {
        return false;
    }
    q->folded = q8(y_dt) && q->z_mode != PR_QZ_BINARY && homogeneous(&q->act) &&
                homogeneous(&q->act2);
    return true;
}

float pr_dnnl_qepi_oscale(const pr_dnnl_qepi *q) { return q->folded ? 1.0f / q->y_scale : 1.0f; }

bool pr_dnnl_qepi_z_inplace(const pr_dnnl_qepi *q) { return q->z_mode == PR_QZ_SUM; }

/* act with Clip's bounds times s (folded mode; the other kinds are
 * positively homogeneous as they are) */
static pr_act act_scaled(const pr_act *a, float s) {
    pr_act r = *a;
    if (r.kind == PR_ACT_CLIP) {
        r.alpha *= s;
        r.beta *= s;
    } else if (r.kind == PR_ACT_AFFINE) {
        r.beta *= s;
    }
    return r;
}

static dnnl_status_t qepi_chain1(pr_dnnl_po *p, const pr_dnnl_qepi *q,
                                 const dnnl_memory_desc_t *z_md, int *z_idx) {
    float f = pr_dnnl_qepi_oscale(q);
    pr_act a1 = act_scaled(&q->act, f), a2 = act_scaled(&q->act2, f);
    dnnl_status_t r = pr_dnnl_po_act(p, &a1);
    if (r == dnnl_success && q->z_mode != PR_QZ_NONE) {
        switch (q->z_mode) {
        case PR_QZ_SUM:
            r = pr_dnnl_po_sum2(p, q->z_scale * f,
                                q->z_dt == q->y_dt ? dnnl_data_type_undef : pr_dnnl_qdt(q->z_dt));
            break;
        case PR_QZ_DEQUANT: r = pr_dnnl_po_sum2(p, 1.0f, dnnl_data_type_undef); break;
        default:
            r = z_md ? pr_dnnl_po_binary(p, dnnl_binary_add, z_md, z_idx) : dnnl_invalid_arguments;
            break;
        }
    }
    if (r == dnnl_success) r = pr_dnnl_po_act(p, &a2);
    if (r == dnnl_success && q8(q->y_dt) && !q->folded) r = pr_dnnl_po_scale(p, 1.0f / q->y_scale);
    return r;
}

dnnl_status_t pr_dnnl_qepi_chain(pr_dnnl_po *p, const pr_dnnl_qepi *q,
                                 const dnnl_memory_desc_t *z_md, int *z_idx) {
    dnnl_status_t r = dnnl_unimplemented;
    for (int pref = 0; pref < 2 && r != dnnl_success; pref++) {
        pr_dnnl_po_destroy(p);
        if ((r = pr_dnnl_po_init(p)) != dnnl_success) return r;
        p->pref = pref;
        *z_idx = -1;
        r = qepi_chain1(p, q, z_md, z_idx);
    }
    return r;
}

bool pr_dnnl_qepi_ok(const pr_dnnl_qepi *q) {
    pr_dnnl_po p = {0};
    dnnl_memory_desc_t md;
    const dnnl_dims_t one = {1, 1};
    int idx;
    bool ok = dnnl_memory_desc_init_by_tag(&md, 2, one, dnnl_f32, dnnl_ab) == dnnl_success &&
              pr_dnnl_qepi_chain(&p, q, &md, &idx) == dnnl_success;
    pr_dnnl_po_destroy(&p);
    return ok;
}

void pr_dnnl_qepi_prep(const pr_dnnl_qepi *q, const pr_buf *Z, pr_buf *Y, int threads) {
    if (!Z || !Y) return;
    if (q->z_mode == PR_QZ_SUM && Z->data != Y->data && Y->nbytes)
        memcpy(Y->data, Z->data, Y->nbytes);
    else if (q->z_mode == PR_QZ_DEQUANT)
        pr_cpu_dequant_q8(Z->data, Z->dtype, q->z_scale, Y->data, Y->dtype, Y->numel, threads);
}

dnnl_status_t pr_dnnl_attr(dnnl_primitive_attr_t *attr, const_dnnl_post_ops_t po) {
    dnnl_status_t s = dnnl_primitive_attr_create(attr);
    if (s != dnnl_success) return s;
    s = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && po) s = dnnl_primitive_attr_set_post_ops(*attr, po);
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

/* --------------------------------------------------------------- memory */

void *pr_dnnl_alloc(size_t bytes) {
    size_t n = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, n ? n : 64);
}

precis_status pr_dnnl_reorder(const dnnl_memory_desc_t *src_md, const void *src,
                              const dnnl_memory_desc_t *dst_md, void *dst, pr_err *e) {
    dnnl_engine_t eng = pr_dnnl_engine(e);
    if (!eng) return e ? e->status : PRECIS_ERR_INTERNAL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    dnnl_stream_t strm = NULL;
    precis_status st;
    PR_TRY(pr_dnnl_check(dnnl_reorder_primitive_desc_create(&pd, src_md, eng, dst_md, eng, NULL), e,
                         "weights reorder"));
    PR_TRY(pr_dnnl_check(dnnl_primitive_create(&prim, pd), e, "weights reorder"));
    PR_TRY(pr_dnnl_check(dnnl_memory_create(&ms, src_md, eng, (void *)src), e, "weights reorder"));
    PR_TRY(pr_dnnl_check(dnnl_memory_create(&md, dst_md, eng, dst), e, "weights reorder"));
    PR_TRY(pr_dnnl_check(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags), e,
                         "weights reorder"));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
    PR_TRY(pr_dnnl_check(dnnl_primitive_execute(prim, strm, 2, args), e, "weights reorder"));
    PR_TRY(pr_dnnl_check(dnnl_stream_wait(strm), e, "weights reorder"));
fail:
    if (strm) dnnl_stream_destroy(strm);
    if (ms) dnnl_memory_destroy(ms);
    if (md) dnnl_memory_destroy(md);
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

int pr_dnnl_threads_set(int n) {
    int saved = omp_get_max_threads();
    if (n >= 1 && n != saved) omp_set_num_threads(n);
    return saved;
}

void pr_dnnl_threads_restore(int saved) {
    if (saved >= 1 && saved != omp_get_max_threads()) omp_set_num_threads(saved);
}

/* -------------------------------------------------------------- streams */

/* memory objects of one primitive entry on one context */
typedef struct xmem {
    const pr_dnnl_entry *ent; /* NULL: free slot */
    dnnl_memory_t m[PR_DNNL_MAX_ARGS + 1];
    void *ptr[PR_DNNL_MAX_ARGS + 1];
} xmem;

typedef struct xstream {
    dnnl_stream_t s;
    xmem *tab; /* open addressing by entry address, cap a power of 2 */
    size_t cap, count;
} xstream;

void *pr_dnnl_stream_create(pr_err *e) {
    dnnl_engine_t eng = pr_dnnl_engine(e);
    if (!eng) return NULL;
    xstream *xs = calloc(1, sizeof *xs);
    if (!xs) {
        pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        return NULL;
    }
    if (pr_dnnl_check(dnnl_stream_create(&xs->s, eng, dnnl_stream_default_flags), e,
                      "creating a oneDNN stream")) {
        free(xs);
        return NULL;
    }
    return xs;
}

static void xmem_release(xmem *xm) {
    for (int i = 0; i < PR_DNNL_MAX_ARGS + 1; i++)
        if (xm->m[i]) dnnl_memory_destroy(xm->m[i]);
}

void pr_dnnl_stream_destroy(void *stream) {
    xstream *xs = stream;
    if (!xs) return;
    for (size_t i = 0; i < xs->cap; i++)
        if (xs->tab[i].ent) xmem_release(&xs->tab[i]);
    free(xs->tab);
    if (xs->s) dnnl_stream_destroy(xs->s);
    free(xs);
}

static size_t xhash(const pr_dnnl_entry *ent, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)ent * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

/* The slot of ent (a fresh one, zeroed, when new); NULL on OOM. */
static xmem *xmem_get(xstream *xs, const pr_dnnl_entry *ent) {
    if ((xs->count + 1) * 2 > xs->cap) {
        size_t nc = xs->cap ? xs->cap * 2 : 64;
        xmem *nt = calloc(nc, sizeof *nt);
        if (!nt) return NULL;
        for (size_t i = 0; i < xs->cap; i++) {
            if (!xs->tab[i].ent) continue;
            size_t k = xhash(xs->tab[i].ent, nc);
            while (nt[k].ent) k = (k + 1) & (nc - 1);
            nt[k] = xs->tab[i];
        }
        free(xs->tab);
        xs->tab = nt;
        xs->cap = nc;
    }
    size_t k = xhash(ent, xs->cap);
    while (xs->tab[k].ent && xs->tab[k].ent != ent) k = (k + 1) & (xs->cap - 1);
    if (!xs->tab[k].ent) {
        xs->tab[k].ent = ent;
        xs->count++;
    }
    return &xs->tab[k];
}

/* xm->m[i] describing md at ptr: created once, re-pointed when ptr moved. */
static dnnl_status_t xmem_bind(xmem *xm, int i, const dnnl_memory_desc_t *md, dnnl_engine_t eng,
                               void *ptr) {
    if (!xm->m[i]) {
        dnnl_status_t s = dnnl_memory_create(&xm->m[i], md, eng, ptr);
        if (s != dnnl_success) xm->m[i] = NULL;
        else xm->ptr[i] = ptr;
        return s;
    }
    if (xm->ptr[i] == ptr) return dnnl_success;
    dnnl_status_t s = dnnl_memory_set_data_handle(xm->m[i], ptr);
    xm->ptr[i] = s == dnnl_success ? ptr : NULL;
    return s;
}

/* ------------------------------------------------------ primitive cache */

precis_status pr_dnnl_cache_init(pr_dnnl_cache *c, pr_err *e) {
    memset(c, 0, sizeof *c);
    if (pthread_mutex_init(&c->mu, NULL) != 0)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "cannot create a mutex");
    c->mu_init = true;
    return PRECIS_OK;
}

void pr_dnnl_entry_free(pr_dnnl_entry *ent) {
    if (!ent) return;
    if (ent->prim) dnnl_primitive_destroy(ent->prim);
    if (ent->own_wei) free(ent->wei);
    for (int i = 0; i < 3; i++) pr_dnnl_entry_free(ent->stage[i]);
    free(ent);
}

static bool key_eq(const pr_dnnl_entry *ent, const int64_t *key, int nkey) {
    return ent && ent->nkey == nkey && memcmp(ent->key, key, (size_t)nkey * sizeof *key) == 0;
}

static precis_status entry_new(const int64_t *key, int nkey, pr_dnnl_create_fn create, void *ctx,
                               pr_dnnl_entry **out, pr_err *e) {
    *out = NULL;
    if (nkey > PR_DNNL_KEY_MAX) return pr_errf(e, PRECIS_ERR_INTERNAL, "shape key too long");
    pr_dnnl_entry *ent = calloc(1, sizeof *ent);
    if (!ent) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    memcpy(ent->key, key, (size_t)nkey * sizeof *key);
    ent->nkey = nkey;
    precis_status st = create(ctx, key, nkey, ent, e);
    if (st) {
        pr_dnnl_entry_free(ent);
        return st;
    }
    *out = ent;
    return PRECIS_OK;
}

precis_status pr_dnnl_cache_prime(pr_dnnl_cache *c, const int64_t *key, int nkey,
                                  pr_dnnl_create_fn create, void *ctx, pr_err *e) {
    pr_dnnl_entry *ent;
    precis_status st = entry_new(key, nkey, create, ctx, &ent, e);
    if (st) return st;
    pr_dnnl_entry_free(c->primary);
    c->primary = ent;
    return PRECIS_OK;
}

precis_status pr_dnnl_cache_get(pr_dnnl_cache *c, const int64_t *key, int nkey,
                                pr_dnnl_create_fn create, void *ctx, pr_dnnl_entry **out,
                                bool *temp, pr_err *e) {
    *temp = false;
    if (key_eq(c->primary, key, nkey)) {
        *out = c->primary;
        return PRECIS_OK;
    }
    precis_status st = PRECIS_OK;
    pthread_mutex_lock(&c->mu);
    pr_dnnl_entry *ent = c->list;
    while (ent && !key_eq(ent, key, nkey)) ent = ent->next;
    if (!ent) {
        st = entry_new(key, nkey, create, ctx, &ent, e);
        if (!st) {
            if (c->count < PR_DNNL_CACHE_CAP) {
                ent->next = c->list;
                c->list = ent;
                c->count++;
            } else {
                *temp = true;
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
    *out = st ? NULL : ent;
    return st;
}

void pr_dnnl_cache_destroy(pr_dnnl_cache *c) {
    pr_dnnl_entry_free(c->primary);
    c->primary = NULL;
    while (c->list) {
        pr_dnnl_entry *n = c->list->next;
        pr_dnnl_entry_free(c->list);
        c->list = n;
    }
    c->count = 0;
    if (c->mu_init) pthread_mutex_destroy(&c->mu);
    c->mu_init = false;
}

precis_status pr_dnnl_entry_set_prim(pr_dnnl_entry *ent, const_dnnl_primitive_desc_t pd,
                                     pr_err *e) {
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(ent->impl, sizeof ent->impl, "%s", impl);
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    ent->scratch_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    return pr_dnnl_check(dnnl_primitive_create(&ent->prim, pd), e, "creating a oneDNN primitive");
}

void pr_dnnl_entry_arg(pr_dnnl_entry *ent, int arg, const dnnl_memory_desc_t *md) {
    if (ent->nargs >= PR_DNNL_MAX_ARGS) return;
    ent->args[ent->nargs] = arg;
    ent->mds[ent->nargs] = *md;
    ent->nargs++;
}

precis_status pr_dnnl_weights_for(pr_dnnl_weights *w, const dnnl_memory_desc_t *want,
                                  pr_dnnl_entry *ent, pr_err *e) {
    precis_status st;
    if (!want) return pr_errf(e, PRECIS_ERR_INTERNAL, "primitive has no weights desc");
    if (!w->data) {
        if (!w->user) return pr_errf(e, PRECIS_ERR_INTERNAL, "weights not prepared");
        void *d = pr_dnnl_alloc(dnnl_memory_desc_get_size(want));
        if (!d) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        if ((st = pr_dnnl_reorder(&w->user_md, w->user, want, d, e))) {
            free(d);
            return st;
        }
        w->data = d;
        w->md = *want;
    }
    if (dnnl_memory_desc_equal(want, &w->md)) {
        ent->wei = w->data;
        ent->own_wei = false;
        return PRECIS_OK;
    }
    for (int i = 0; i < w->n_alt; i++) {
        if (dnnl_memory_desc_equal(want, &w->alt_md[i])) {
            ent->wei = w->alt[i];
            ent->own_wei = false;
            return PRECIS_OK;
        }
    }
    void *d = pr_dnnl_alloc(dnnl_memory_desc_get_size(want));
    if (!d) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    /* from the impl's own plain copy when it keeps one (int8 weights with
     * compensation cannot be reordered from one blocked layout to another) */
    if ((st = w->user ? pr_dnnl_reorder(&w->user_md, w->user, want, d, e)
                      : pr_dnnl_reorder(&w->md, w->data, want, d, e))) {
        free(d);
        return st;
    }
    ent->wei = d;
    ent->own_wei = w->n_alt >= PR_DNNL_WEI_ALT;
    if (!ent->own_wei) {
        w->alt_md[w->n_alt] = *want;
        w->alt[w->n_alt++] = d;
    }
    return PRECIS_OK;
}

void pr_dnnl_weights_free(pr_dnnl_weights *w) {
    free(w->data);
    w->data = NULL;
    for (int i = 0; i < w->n_alt; i++) free(w->alt[i]);
    w->n_alt = 0;
}

/* ------------------------------------------------------------ execution */

void *pr_dnnl_scratch_after(const pr_dnnl_entry *ent, pr_cpu_exec *x, size_t bytes) {
    size_t off = (ent->scratch_bytes + 63) & ~(size_t)63;
    char *p = pr_cpu_scratch(x, off + bytes);
    return p ? p + off : NULL;
}

precis_status pr_dnnl_execute(const pr_dnnl_entry *ent, void *const *ptrs, pr_cpu_exec *x,
                              pr_err *e) {
    dnnl_engine_t eng = pr_dnnl_engine(e);
    if (!eng) return e ? e->status : PRECIS_ERR_INTERNAL;
    xstream *xs = x->dnnl_stream, *own = NULL;
    if (!xs) {
        own = pr_dnnl_stream_create(e);
        if (!own) return e ? e->status : PRECIS_ERR_INTERNAL;
        xs = own;
    }
    precis_status st = PRECIS_OK;
    xmem *xm = xmem_get(xs, ent);
    if (!xm) {
        st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        goto done;
    }
    dnnl_exec_arg_t args[PR_DNNL_MAX_ARGS + 1];
    int n = 0;
    for (int i = 0; i < ent->nargs; i++, n++) {
        args[n].arg = ent->args[i];
        if ((st = pr_dnnl_check(xmem_bind(xm, n, &ent->mds[i], eng, ptrs[i]), e, "oneDNN memory")))
            goto done;
        args[n].memory = xm->m[n];
    }
    if (ent->scratch_bytes) {
        void *sp = pr_cpu_scratch(x, ent->scratch_bytes);
        if (!sp) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory (oneDNN scratchpad of %zu bytes)",
                         ent->scratch_bytes);
            goto done;
        }
        dnnl_memory_desc_t smd;
        const dnnl_dims_t sd = {(dnnl_dim_t)ent->scratch_bytes};
        if ((st = pr_dnnl_check(dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a), e,
                                "oneDNN scratchpad")) ||
            (st = pr_dnnl_check(xmem_bind(xm, n, &smd, eng, sp), e, "oneDNN scratchpad")))
            goto done;
        args[n].arg = DNNL_ARG_SCRATCHPAD;
        args[n].memory = xm->m[n];
        n++;
    }
    int saved = pr_dnnl_threads_set(x->num_threads);
    st = pr_dnnl_check(dnnl_primitive_execute(ent->prim, xs->s, n, args), e, ent->impl);
    if (!st) st = pr_dnnl_check(dnnl_stream_wait(xs->s), e, ent->impl);
    pr_dnnl_threads_restore(saved);
done:
    pr_dnnl_stream_destroy(own);
    return st;
}

#else /* !PRECIS_HAVE_DNNL */

void *pr_dnnl_stream_create(pr_err *e) {
    pr_errf(e, PRECIS_ERR_UNSUPPORTED, "precis was built without oneDNN");
    return NULL;
}

void pr_dnnl_stream_destroy(void *stream) { (void)stream; }

/* The dnnl impls of dnnl_conv.c / dnnl_matmul.c, taking nothing. */
static bool no_supports(const pr_graph *g, const pr_node *n) {
    (void)g;
    (void)n;
    return false;
}

static precis_status no_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                void **state, pr_err *e) {
    (void)g;
    (void)cfg;
    *state = NULL;
    return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): precis was built without oneDNN",
                   n->name, n->op_type);
}

static precis_status no_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    (void)state;
    (void)x;
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "precis was built without oneDNN");
}

#define NO_DNNL_IMPL(var, nm)                                                                      \
    const pr_cpu_impl var = {.name = nm, .supports = no_supports, .prepare = no_prepare,          \
                             .run = no_run};
NO_DNNL_IMPL(pr_cpu_impl_dnnl_conv, "dnnl.conv")
NO_DNNL_IMPL(pr_cpu_impl_dnnl_deconv, "dnnl.deconv")
NO_DNNL_IMPL(pr_cpu_impl_dnnl_matmul, "dnnl.matmul")
NO_DNNL_IMPL(pr_cpu_impl_dnnl_qconv, "dnnl.qconv")
NO_DNNL_IMPL(pr_cpu_impl_dnnl_qmatmul, "dnnl.qmatmul")

#endif
