/* oneDNN convolutions: Conv / FusedConv and ConvTranspose, 2-D (rank 4),
 * float32 or bfloat16 activations, float32 initializer weights and bias.
 *
 * Weights are reordered once (prepare) into the layout the primitive picks
 * (format `any`); src/dst use the tensors' physical layouts (nchw or nhwc).
 * FusedConv's epilogue maps onto post-ops: act, sum (the residual Z, copied
 * into dst first unless the planner put the output in Z's buffer), act2.
 * One primitive per concrete (N, H, W, threads), created in prepare for the
 * graph's shape (a representative one when dims are symbolic) and lazily
 * for others (pr_dnnl_cache). */
#include "backends/cpu/dnnl_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PRECIS_HAVE_DNNL

#include "backends/cpu/dnnl_wino.h"
#include "backends/cpu/kernels.h"
#include "ir/infer_conv.h"
#include "runtime/tactics.h"

typedef struct conv_state {
    bool deconv;
    pr_dtype dt;
    int src_layout, dst_layout, z_layout;
    int64_t G, IC, OC, KH, KW;
    float *bias; /* OC floats, or NULL */
    float *user_copy; /* the graph's weights, kept when a Winograd primitive
                       * holds its own: other shapes' primitives start from it */
    bool has_z;
    pr_act act, act2;
    pr_act late; /* act applied over the output after the primitive (as dnnl_qconv.c) */
    bool late_fit; /* Swish/Sigmoid after the primitive for outputs that stay in cache */
    pr_dnnl_weights w;
    pr_dnnl_cache cache;
    char desc[96];
    pr_tactics *tac;    /* the engine's timed choices (Winograd or direct per shape) */
    bool untimed;       /* direct only (pr_cpu_cfg.untimed) */
    const char *yname;  /* the output tensor's name: the choices' key */
} conv_state;

typedef struct conv_ctx {
    conv_state *s;
    const pr_node *node;
    bool representative; /* prepare with unknown dims: a stand-in shape (no Winograd trial) */
    bool wino_used; /* set when that primitive is the Winograd one */
} conv_ctx;

/* key: N, H, W, threads */
enum { K_N, K_H, K_W, K_THREADS, K_COUNT };

static bool float_act_ok(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 || (dt == PRECIS_BFLOAT16 && pr_dnnl_bf16_ok());
}

static bool is_init_f32(const pr_tensor *t) {
    return t && (t->flags & PR_T_INIT) && t->data && t->dtype == PRECIS_FLOAT32;
}

static bool supports_common(const pr_graph *g, const pr_node *n, bool deconv) {
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *B = pr_node_tin(g, n, 2), *Y = pr_node_tout(g, n, 0);
    if (!X || !W || !Y) return false;
    if (!float_act_ok(X->dtype) || X->rank != 4) return false;
    if (X->layout != PR_LAYOUT_PLAIN && X->layout != PR_LAYOUT_NHWC) return false;
    if (Y->layout != PR_LAYOUT_PLAIN && Y->layout != PR_LAYOUT_NHWC) return false;
    if (Y->dtype != PRECIS_UNDEFINED && Y->dtype != X->dtype) return false;
    if (!is_init_f32(W) || W->rank != 4) return false;
    for (int d = 0; d < 4; d++)
        if (!pr_dim_known(W->dims[d]) || W->dims[d] == 0) return false;
    int64_t G = pr_attr_int(n, "group", 1);
    if (G < 1) return false;
    int64_t IC = deconv ? W->dims[0] : W->dims[1] * G;
    int64_t OC = deconv ? W->dims[1] * G : W->dims[0];
    if (IC % G || OC % G) return false;
    if (pr_dim_known(X->dims[1]) && X->dims[1] != IC) return false;
    if (B && (!is_init_f32(B) || B->rank != 1 || B->dims[0] != OC)) return false;
    /* kernel_shape, when given, must match the weights; 2 spatial dims */
    const int64_t *ks;
    int nks = pr_attr_ints(n, "kernel_shape", &ks);
    if (nks >= 0 && (nks != 2 || ks[0] != W->dims[2] || ks[1] != W->dims[3])) return false;
    const int64_t *v;
    if (pr_attr_ints(n, "strides", &v) >= 0 && pr_attr_ints(n, "strides", &v) != 2) return false;
    if (pr_attr_ints(n, "dilations", &v) >= 0 && pr_attr_ints(n, "dilations", &v) != 2)
        return false;
    if (pr_attr_ints(n, "pads", &v) >= 0 && pr_attr_ints(n, "pads", &v) != 4) return false;
    return true;
}

static bool conv_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_Conv && n->op != PR_OP_FusedConv) return false;
    if (!supports_common(g, n, false)) return false;
    if (n->op == PR_OP_FusedConv) {
        pr_act a1, a2;
        if (!pr_act_from_node(n, "act", &a1) || !pr_act_from_node(n, "act2", &a2)) return false;
        const pr_tensor *X = pr_node_tin(g, n, 0), *Z = pr_node_tin(g, n, 3), *Y = pr_node_tout(g, n, 0);
        if (!pr_dnnl_epilogue_ok(&a1, Z != NULL, &a2)) return false;
        if (Z && (Z->dtype != X->dtype || Z->rank != 4 || Z->layout != Y->layout)) return false;
        if (n->n_inputs > 4) return false;
    } else if (n->n_inputs > 3) {
        return false;
    }
    return true;
}

static bool deconv_supports(const pr_graph *g, const pr_node *n) {
    if (n->op != PR_OP_ConvTranspose || n->n_inputs > 3) return false;
    return supports_common(g, n, true);
}

static bool conv_nhwc_ok(const pr_graph *g, const pr_node *n) { return true; }

static int conv_inplace_input(const pr_graph *g, const pr_node *n) {
    return n->op == PR_OP_FusedConv && pr_node_in(n, 3) >= 0 ? 3 : -1;
}

/* The graph's float32 weights as a oneDNN desc. Conv: ONNX [M, C/g, kh, kw]
 * is goihw; ConvTranspose: [C, M/g, kh, kw] is giohw. */
static dnnl_status_t user_wei_md(const conv_state *s, dnnl_memory_desc_t *md) {
    if (s->G > 1) {
        dnnl_dims_t d = {s->G, s->OC / s->G, s->IC / s->G, s->KH, s->KW};
        return dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32,
                                            s->deconv ? dnnl_giohw : dnnl_goihw);
    }
    dnnl_dims_t d = {s->OC, s->IC, s->KH, s->KW};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, s->deconv ? dnnl_iohw : dnnl_oihw);
}

/* Float32 output bytes up to which a primitive leaves Swish/Sigmoid to a pass after it (one
 * core's L2, as dnnl_qconv.c's late epilogue); PRECIS_CONV_LATE=0 keeps the post-op. */
#define CONV_LATE_MAX ((size_t)1 << 20)

/* Shapes oneDNN 2.6 has float32 Winograd kernels for (see dnnl_wino.h). */
static bool wino_shape(const conv_state *s, const pr_conv_geom *geo) {
    return !s->deconv && s->dt == PRECIS_FLOAT32 && s->G == 1 && s->KH == 3 && s->KW == 3 &&
           s->IC % 16 == 0 && s->OC % 16 == 0 && geo->stride[0] == 1 && geo->stride[1] == 1 &&
           geo->dil[0] == 1 && geo->dil[1] == 1;
}

static precis_status conv_create(void *vctx, const int64_t *key, int nkey, pr_dnnl_entry *ent,
                                 pr_err *e) {
    conv_ctx *c = vctx;
    conv_state *s = c->s;
    precis_status st;
    pr_conv_geom geo;
    pr_dnnl_po po = {0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int64_t in_sp[2] = {key[K_H], key[K_W]}, wk[2] = {s->KH, s->KW};
    st = pr_conv_geom_init(c->node, s->deconv ? PR_CONV_KIND_CONVT : PR_CONV_KIND_CONV, 2, in_sp,
                           wk, e, &geo);
    if (st) return st;
    if (!geo.pads_known || !pr_dim_known(geo.out[0]) || !pr_dim_known(geo.out[1]))
        return pr_errf(e, PRECIS_ERR_SHAPE, "convolution geometry not known for %lldx%lld",
                       (long long)key[K_H], (long long)key[K_W]);
    int64_t N = key[K_N];
    ent->out_dims[0] = N;
    ent->out_dims[1] = s->OC;
    ent->out_dims[2] = geo.out[0];
    ent->out_dims[3] = geo.out[1];
    if (N == 0 || key[K_H] == 0 || key[K_W] == 0 || geo.out[0] == 0 || geo.out[1] == 0)
        return PRECIS_OK; /* nothing to compute: no primitive */

    dnnl_data_type_t dt = pr_dnnl_dt(s->dt);
    dnnl_memory_desc_t smd, wmd, bmd, dmd;
    int64_t sd[4] = {N, s->IC, key[K_H], key[K_W]};
    PR_TRY(pr_dnnl_check(pr_dnnl_md_act4(&smd, sd, dt, s->src_layout), e, "src desc"));
    PR_TRY(pr_dnnl_check(pr_dnnl_md_act4(&dmd, ent->out_dims, dt, s->dst_layout), e, "dst desc"));
    if (s->G > 1) {
        dnnl_dims_t d = {s->G, s->OC / s->G, s->IC / s->G, s->KH, s->KW};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&wmd, 5, d, dt, dnnl_format_tag_any), e,
                             "weights desc"));
    } else {
        dnnl_dims_t d = {s->OC, s->IC, s->KH, s->KW};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&wmd, 4, d, dt, dnnl_format_tag_any), e,
                             "weights desc"));
    }
    if (s->bias) {
        dnnl_dims_t d = {s->OC};
        PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&bmd, 1, d, dnnl_f32, dnnl_a), e,
                             "bias desc"));
    }
    dnnl_dims_t strides = {geo.stride[0], geo.stride[1]};
    dnnl_dims_t dil = {geo.dil[0] - 1, geo.dil[1] - 1};
    dnnl_dims_t pl = {geo.pad_b[0], geo.pad_b[1]};
    dnnl_dims_t pr = {geo.pad_e[0], geo.pad_e[1]};
    if (s->deconv) {
        pr[0] -= geo.out_pad[0];
        pr[1] -= geo.out_pad[1];
    }
    union {
        dnnl_convolution_desc_t conv;
        dnnl_deconvolution_desc_t deconv;
    } od;
    if (s->deconv)
        st = pr_dnnl_check(dnnl_dilated_deconvolution_forward_desc_init(
                               &od.deconv, dnnl_forward_inference, dnnl_deconvolution_direct, &smd,
                               &wmd, s->bias ? &bmd : NULL, &dmd, strides, dil, pl, pr),
                           e, "deconvolution desc");
    else
        st = pr_dnnl_check(dnnl_dilated_convolution_forward_desc_init(
                               &od.conv, dnnl_forward_inference, dnnl_convolution_direct, &smd,
                               &wmd, s->bias ? &bmd : NULL, &dmd, strides, dil, pl, pr),
                           e, "convolution desc");
    if (st) return st;

    /* a float32 output in cache takes its Swish/Sigmoid in one AVX-512 pass after the
     * primitive: oneDNN's eltwise post-op costs ~0.24 ns a value for these (exp + divide),
     * several times a small conv's MACs (NOTES.md, session 9) */
    bool late = s->late_fit &&
                (size_t)(N * s->OC * geo.out[0] * geo.out[1]) * sizeof(float) <= CONV_LATE_MAX;
    const pr_act none = {0};
    ent->flags = late;
    PR_TRY(pr_dnnl_check(pr_dnnl_po_epilogue(&po, late ? &none : &s->act, s->has_z, &s->act2), e,
                         "post-ops"));
    PR_TRY(pr_dnnl_check(pr_dnnl_attr(&attr, po.po), e, "attributes"));
    int saved = pr_dnnl_threads_set((int)key[K_THREADS]);
    dnnl_engine_t eng = pr_dnnl_engine(e);
    st = eng ? pr_dnnl_check(dnnl_primitive_desc_create(&pd, &od, attr, eng, NULL), e,
                             s->deconv ? "deconvolution" : "convolution")
             : e->status;
    if (!st && !c->representative && wino_shape(s, &geo) && (s->w.user || s->w.data) &&
        pr_dnnl_wino_mode() != 0 && !s->untimed) {
        dnnl_dims_t wd = {s->OC, s->IC, s->KH, s->KW};
        dnnl_memory_desc_t uw;
        bool won = false;
        st = pr_dnnl_check(dnnl_memory_desc_init_by_tag(&uw, 4, wd, dnnl_f32, dnnl_oihw), e,
                           "weights desc");
        /* plain weights: the graph's (prepare, or the kept copy), else back
         * from the shared blocked copy for the time of the trial */
        float *plain = NULL;
        const void *user = s->w.user;
        if (!st && !user) {
            plain = pr_dnnl_alloc((size_t)(s->OC * s->IC * s->KH * s->KW) * sizeof(float));
            st = plain ? pr_dnnl_reorder(&s->w.md, s->w.data, &uw, plain, e)
                       : pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            user = plain;
        }
        /* a choice the plan recorded for this shape is taken as it is */
        char tk[320];
        snprintf(tk, sizeof tk, "conv.winograd %s %lldx%lldx%lld t%lld", s->yname,
                 (long long)N, (long long)key[K_H], (long long)key[K_W],
                 (long long)key[K_THREADS]);
        int chosen = pr_dnnl_wino_mode() == 1 ? pr_tactics_get(s->tac, tk) : -1;
        pr_wino_req wr = {.src = &smd, .dst = &dmd, .bias = s->bias ? &bmd : NULL,
                          .user_wei = &uw, .user = user, .pad_l = &pl, .pad_r = &pr,
                          .attr = attr, .has_z = s->has_z, .threads = (int)key[K_THREADS],
                          .take = chosen == 1};
        if (!st && chosen != 0) st = pr_dnnl_wino_try(&wr, pd, ent, &won, e);
        if (!st && chosen < 0 && pr_dnnl_wino_mode() == 1) pr_tactics_put(s->tac, tk, won);
        free(plain);
        if (!st && won) {
            c->wino_used = true;
            pr_dnnl_threads_restore(saved);
            goto fail; /* done: ent holds the Winograd path */
        }
    }
    if (!st)
        st = pr_dnnl_weights_for(&s->w, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0),
                                 ent, e);
    if (!st) st = pr_dnnl_entry_set_prim(ent, pd, e);
    pr_dnnl_threads_restore(saved);
    if (st) goto fail;
    pr_dnnl_entry_arg(ent, DNNL_ARG_SRC, &smd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_WEIGHTS,
                      dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    if (s->bias) pr_dnnl_entry_arg(ent, DNNL_ARG_BIAS, &bmd);
    pr_dnnl_entry_arg(ent, DNNL_ARG_DST, &dmd);
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    pr_dnnl_po_destroy(&po);
    return st;
}

static void conv_destroy(void *state) {
    conv_state *s = state;
    if (!s) return;
    pr_dnnl_cache_destroy(&s->cache);
    pr_dnnl_weights_free(&s->w);
    free(s->bias);
    free(s->user_copy);
    free(s);
}

static precis_status prepare_common(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                    void **state, pr_err *e, bool deconv) {
    *state = NULL;
    if (!(deconv ? deconv_supports(g, n) : conv_supports(g, n)))
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "node '%s' (%s): not supported by dnnl.%s",
                       n->name, n->op_type, deconv ? "deconv" : "conv");
    if (!pr_dnnl_engine(e)) return e->status;
    conv_state *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    precis_status st = pr_dnnl_cache_init(&s->cache, e);
    if (st) {
        free(s);
        return st;
    }
    const pr_tensor *X = pr_node_tin(g, n, 0), *W = pr_node_tin(g, n, 1), *B = pr_node_tin(g, n, 2), *Y = pr_node_tout(g, n, 0);
    const pr_tensor *Z = n->op == PR_OP_FusedConv ? pr_node_tin(g, n, 3) : NULL;
    s->deconv = deconv;
    s->dt = X->dtype;
    s->src_layout = X->layout;
    s->dst_layout = Y->layout;
    s->G = pr_attr_int(n, "group", 1);
    s->IC = deconv ? W->dims[0] : W->dims[1] * s->G;
    s->OC = deconv ? W->dims[1] * s->G : W->dims[0];
    s->KH = W->dims[2];
    s->KW = W->dims[3];
    s->w.user = W->data;
    s->tac = cfg ? cfg->tactics : NULL;
    s->untimed = cfg && cfg->untimed;
    s->yname = Y->name;
    if ((st = pr_dnnl_check(user_wei_md(s, &s->w.user_md), e, "weights desc"))) goto fail;
    if (n->op == PR_OP_FusedConv) {
        pr_act_from_node(n, "act", &s->act);
        pr_act_from_node(n, "act2", &s->act2);
    }
    s->has_z = Z != NULL;
    /* float32 out of < 16 channels: a transcendental act over the whole
     * buffer afterwards (oneDNN's post-op spends a vector per pixel) */
    if (s->dt == PRECIS_FLOAT32 && !s->has_z && s->OC < 16 && s->act2.kind == PR_ACT_NONE &&
        (s->act.kind == PR_ACT_SIGMOID || s->act.kind == PR_ACT_TANH || s->act.kind == PR_ACT_GELU ||
         s->act.kind == PR_ACT_GELU_TANH || s->act.kind == PR_ACT_SWISH)) {
        s->late = s->act;
        s->act.kind = PR_ACT_NONE;
    }
    const char *lv = getenv("PRECIS_CONV_LATE");
    s->late_fit = s->dt == PRECIS_FLOAT32 && !s->deconv && !s->has_z &&
                  s->act2.kind == PR_ACT_NONE &&
                  (s->act.kind == PR_ACT_SWISH || s->act.kind == PR_ACT_SIGMOID) &&
                  !(lv && lv[0] == '0');
    if (B) {
        s->bias = malloc((size_t)s->OC * sizeof(float));
        if (!s->bias) {
            st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
            goto fail;
        }
        memcpy(s->bias, B->data, (size_t)s->OC * sizeof(float));
    }
    /* the primitive for the graph's shape; unknown dims get representative
     * values (the weights layout rarely depends on them) */
    int64_t key[K_COUNT] = {pr_dim_known(X->dims[0]) ? X->dims[0] : 1,
                            pr_dim_known(X->dims[2]) ? X->dims[2] : 32,
                            pr_dim_known(X->dims[3]) ? X->dims[3] : 32,
                            cfg && cfg->num_threads > 0 ? cfg->num_threads : 1};
    if (key[K_N] == 0) key[K_N] = 1;
    if (key[K_H] == 0) key[K_H] = 32;
    if (key[K_W] == 0) key[K_W] = 32;
    conv_ctx c = {s, n, .representative = !pr_dim_known(X->dims[0]) ||
                                          !pr_dim_known(X->dims[2]) || !pr_dim_known(X->dims[3])};
    st = pr_dnnl_cache_prime(&s->cache, key, K_COUNT, conv_create, &c, e);
    if (!st && c.wino_used) {
        /* the Winograd primitive has its own weights; primitives for other
         * shapes are made from a copy of the graph's (no shared blocked copy
         * exists to make them from) */
        size_t wb = (size_t)(s->OC * s->IC * s->KH * s->KW) * sizeof(float);
        s->user_copy = malloc(wb);
        if (!s->user_copy) st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        else memcpy(s->user_copy, W->data, wb);
    }
    if (!st && !s->w.data && !c.wino_used) {
        /* a degenerate representative shape made no primitive: the weights
         * stay plain (the first real primitive reorders them) */
        st = pr_errf(e, PRECIS_ERR_UNSUPPORTED, "no primitive for the graph's shape");
    }
    s->w.user = s->user_copy;
    if (st) goto fail;
    snprintf(s->desc, sizeof s->desc, "%s%s", s->cache.primary->impl,
             s->cache.primary->flags ? "+act after" : "");
    *state = s;
    return PRECIS_OK;
fail:
    conv_destroy(s);
    return pr_err_prefix(e, "node '%s' (%s)", n->name, n->op_type);
}

static precis_status conv_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                  void **state, pr_err *e) {
    return prepare_common(g, n, cfg, state, e, false);
}

static precis_status deconv_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                                    void **state, pr_err *e) {
    return prepare_common(g, n, cfg, state, e, true);
}

/* The Winograd path: input (and residual) into the staging buffers, the
 * primitive, the output back (dnnl_wino.h). */
static precis_status run_staged(const conv_state *s, const pr_dnnl_entry *ent, const pr_buf *X,
                                const pr_buf *Z, pr_buf *Y, pr_cpu_exec *x, pr_err *e) {
    size_t off = (ent->stage_bytes[0] + 63) & ~(size_t)63;
    char *stage = pr_dnnl_scratch_after(ent, x, off + ent->stage_bytes[1]);
    if (!stage) return pr_errf(e, PRECIS_ERR_OOM, "out of memory (Winograd staging)");
    void *bx = stage, *by = stage + off;
    precis_status st = pr_dnnl_execute(ent->stage[0], (void *[]){X->data, bx}, x, e);
    if (!st && Z) st = pr_dnnl_execute(ent->stage[1], (void *[]){Z->data, by}, x, e);
    if (!st) {
        void *ptrs[4];
        int np = 0;
        ptrs[np++] = bx;
        ptrs[np++] = ent->wei;
        if (s->bias) ptrs[np++] = s->bias;
        ptrs[np++] = by;
        st = pr_dnnl_execute(ent, ptrs, x, e);
    }
    if (!st) st = pr_dnnl_execute(ent->stage[2], (void *[]){by, Y->data}, x, e);
    return st;
}

static precis_status conv_run(void *state, pr_kernel *k, pr_cpu_exec *x) {
    conv_state *s = state;
    const pr_buf *X = k->in[0], *Z = s->has_z ? pr_kin(k, 3) : NULL;
    pr_buf *Y = k->out[0];
    if (X->dtype != s->dt || Y->dtype != s->dt)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "prepared for %s, got %s -> %s",
                          pr_dtype_name(s->dt), pr_dtype_name(X->dtype), pr_dtype_name(Y->dtype));
    if (X->rank != 4 || X->dims[1] != s->IC)
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "input must be [N, %lld, H, W]", (long long)s->IC);
    if (s->has_z && (!Z || Z->nbytes != Y->nbytes || Z->dtype != Y->dtype))
        return pr_kernelf(k, PRECIS_ERR_SHAPE, "residual does not match the output");
    int64_t key[K_COUNT] = {X->dims[0], X->dims[2], X->dims[3],
                            x->num_threads > 0 ? x->num_threads : 1};
    pr_dnnl_entry *ent;
    bool temp;
    conv_ctx c = {s, k->node, false, false};
    precis_status st =
        pr_dnnl_cache_get(&s->cache, key, K_COUNT, conv_create, &c, &ent, &temp, k->err);
    if (st) return pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
    if (Y->rank != 4 || memcmp(Y->dims, ent->out_dims, 4 * sizeof(int64_t)) != 0) {
        st = pr_kernelf(k, PRECIS_ERR_SHAPE, "output is not [%lld,%lld,%lld,%lld]",
                        (long long)ent->out_dims[0], (long long)ent->out_dims[1],
                        (long long)ent->out_dims[2], (long long)ent->out_dims[3]);
        goto done;
    }
    if (!ent->prim) goto done; /* empty output */
    if (ent->stage[0]) {
        st = run_staged(s, ent, X, Z, Y, x, k->err);
        goto done;
    }
    if (Z && Z->data != Y->data) memcpy(Y->data, Z->data, Y->nbytes);
    void *ptrs[4];
    int np = 0;
    ptrs[np++] = X->data;
    ptrs[np++] = ent->wei;
    if (s->bias) ptrs[np++] = s->bias;
    ptrs[np++] = Y->data;
    st = pr_dnnl_execute(ent, ptrs, x, k->err);
    if (st) pr_err_prefix(k->err, "node '%s' (%s)", k->node->name, k->node->op_type);
done:
    if (!st && ent->prim && (s->late.kind != PR_ACT_NONE || ent->flags))
        pr_cpu_act_f32(Y->data, Y->numel, ent->flags ? &s->act : &s->late,
                       x->num_threads > 0 ? x->num_threads : 1);
    if (temp) pr_dnnl_entry_free(ent);
    return st;
}

static const char *conv_describe(void *state) {
    conv_state *s = state;
    return s && s->desc[0] ? s->desc : (s && s->deconv ? "dnnl.deconv" : "dnnl.conv");
}

const pr_cpu_impl pr_cpu_impl_dnnl_conv = {
    .name = "dnnl.conv",
    .supports = conv_supports,
    .nhwc_ok = conv_nhwc_ok,
    .inplace_input = conv_inplace_input,
    .prepare = conv_prepare,
    .run = conv_run,
    .describe = conv_describe,
    .destroy = conv_destroy,
};

const pr_cpu_impl pr_cpu_impl_dnnl_deconv = {
    .name = "dnnl.deconv",
    .supports = deconv_supports,
    .nhwc_ok = conv_nhwc_ok,
    .inplace_input = NULL,
    .prepare = deconv_prepare,
    .run = conv_run,
    .describe = conv_describe,
    .destroy = conv_destroy,
};

#endif
