/* The eval set of a sensitivity analysis and running candidates over it
 * (sens_eval.h). */
#define _POSIX_C_SOURCE 200809L
#include "sens/sens_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tensor.h"

/* Reference data kept in memory; beyond it batches are reloaded and rerun. */
#define KEEP_BUDGET ((size_t)256 << 20)

precis_status pr_sens_eval_open(pr_sens_eval *ev, precis_ctx *ctx, const char *onnx_path,
                                const precis_build_options *o, const char *eval_data,
                                int max_batches) {
    pr_err *err = &ctx->err;
    memset(ev, 0, sizeof *ev);
    ev->ctx = ctx;
    precis_build_options fo = {0};
    fo.precision = "fp32";
    fo.backend = o->backend;
    fo.num_threads = o->num_threads;
    fo.shapes = o->shapes;
    precis_status st = pr_build_engine(ctx, onnx_path, &fo, false, &ev->ref);
    if (st) return st;
    const pr_graph *g = ev->ref->g;
    ev->ni = g->n_inputs;
    ev->no = g->n_outputs;
    if (ev->ni > PR_SENS_MAX_IO || ev->no > PR_SENS_MAX_IO)
        return pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                       "sensitivity: more than %d model inputs or outputs", PR_SENS_MAX_IO);
    pr_calib_input ins[PR_SENS_MAX_IO];
    for (int k = 0; k < ev->ni; k++) {
        const pr_tensor *x = &g->tensors[g->inputs[k]];
        ev->names[k] = x->name;
        ins[k].name = x->name;
        ins[k].dtype = x->dtype;
        ins[k].rank = x->rank;
        for (int d = 0; d < x->rank && d < PRECIS_MAX_RANK; d++)
            ins[k].dims[d] = pr_dim_known(x->dims[d]) ? x->dims[d] : -1;
    }
    for (int k = 0; k < ev->no; k++)
        if (g->tensors[g->outputs[k]].dtype == PRECIS_FLOAT32) ev->cmp[ev->n_cmp++] = k;
    if (!ev->n_cmp)
        return pr_errf(err, PRECIS_ERR_UNSUPPORTED,
                       "sensitivity: the model has no float32 output to compare");
    st = pr_calib_source_open(eval_data, o->calib_preprocess, ins, ev->ni, &ev->src, err);
    if (st) return pr_err_prefix(err, "--eval-data");
    ev->batches = pr_calib_source_batches(ev->src);
    if (ev->batches < 1)
        return pr_errf(err, PRECIS_ERR_INVALID_ARG, "--eval-data '%s': no samples", eval_data);
    if (max_batches > 0 && max_batches < ev->batches) ev->batches = max_batches;
    ev->keep = calloc((size_t)ev->batches, sizeof *ev->keep);
    if (!ev->keep) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    if ((st = precis_context_create(ctx, ev->ref, &ev->refc))) return st;
    return PRECIS_OK;
}

static void free_set(precis_tensor **t, int n) {
    for (int k = 0; t && k < n; k++) precis_tensor_destroy(t[k]), t[k] = NULL;
}

void pr_sens_eval_close(pr_sens_eval *ev) {
    for (int b = 0; ev->keep && b < ev->batches; b++) {
        free_set(ev->keep[b], ev->ni + ev->no);
        free(ev->keep[b]);
    }
    free(ev->keep);
    free_set(ev->tmp, ev->ni + ev->no);
    precis_context_destroy(ev->refc);
    precis_engine_destroy(ev->ref);
    pr_calib_source_close(ev->src);
    memset(ev, 0, sizeof *ev);
}

/* What applies to each compared output, judged on the first reference batch. */
static void decide(pr_sens_eval *ev, precis_tensor *const *ref) {
    for (int j = 0; j < ev->n_cmp; j++) {
        const precis_tensor *t = ref[ev->cmp[j]];
        int r = precis_tensor_rank(t);
        const int64_t *d = precis_tensor_dims(t);
        int64_t n = precis_tensor_numel(t), cols = r >= 1 ? d[r - 1] : 1;
        bool prob = r >= 1 && cols > 0 &&
                    pr_sens_is_prob(precis_tensor_data_const(t), n / cols, cols);
        ev->kl[j] = prob;
        ev->top1[j] = (r == 2 && cols >= 2) || (r > 2 && prob);
    }
    ev->decided = true;
}

/* Inputs and reference outputs of batch b: *set has ni + no handles. */
precis_status pr_sens_eval_batch(pr_sens_eval *ev, int b, precis_tensor ***set) {
    pr_err *err = &ev->ctx->err;
    if (ev->keep[b]) {
        *set = ev->keep[b];
        return PRECIS_OK;
    }
    precis_tensor **t = ev->tmp;
    free_set(t, ev->ni + ev->no);
    precis_status st = pr_calib_source_load(ev->src, b, t, err);
    if (st) return pr_err_prefix(err, "--eval-data");
    st = precis_context_run(ev->ctx, ev->refc, ev->ni, ev->names,
                            (const precis_tensor *const *)t, t + ev->ni);
    if (st) return pr_err_prefix(err, "--eval-data batch %d (fp32 reference)", b + 1);
    if (!ev->decided) decide(ev, t + ev->ni);
    size_t bytes = 0;
    for (int k = 0; k < ev->ni + ev->no; k++) bytes += precis_tensor_nbytes(t[k]);
    *set = t;
    if (ev->kept_bytes + bytes > KEEP_BUDGET) return PRECIS_OK;
    precis_tensor **k = malloc((size_t)(ev->ni + ev->no) * sizeof *k);
    if (!k) return PRECIS_OK; /* not kept: recomputed next time */
    memcpy(k, t, (size_t)(ev->ni + ev->no) * sizeof *k);
    memset(t, 0, (size_t)(ev->ni + ev->no) * sizeof *t);
    ev->keep[b] = k;
    ev->kept_bytes += bytes;
    *set = k;
    return PRECIS_OK;
}

precis_status pr_sens_eval_run(pr_sens_eval *ev, precis_engine *e, pr_sens_acc *acc,
                               precis_engine *cap_engine, pr_sens_local *cap,
                               pr_sens_local *cmp) {
    precis_ctx *ctx = ev->ctx;
    pr_err *err = &ctx->err;
    precis_context *c = NULL, *cc = NULL;
    precis_tensor *out[PR_SENS_MAX_IO] = {0};
    precis_status st = PRECIS_OK;
    if (e && (st = precis_context_create(ctx, e, &c))) return st;
    if (cap_engine && (st = precis_context_create(ctx, cap_engine, &cc))) goto done;
    if (cc) pr_context_observe(cc, pr_sens_local_observe, cap);
    if (c && cmp) pr_context_observe(c, pr_sens_local_observe, cmp);
    bool counting = !ev->counted;
    for (int b = 0; b < ev->batches; b++) {
        precis_tensor **set = NULL;
        if ((st = pr_sens_eval_batch(ev, b, &set))) goto done;
        if (counting && ev->ni)
            ev->samples += precis_tensor_rank(set[0]) >= 1 ? precis_tensor_dims(set[0])[0] : 1;
        const precis_tensor *const *in = (const precis_tensor *const *)set;
        if (cc) {
            cap->capture = true;
            cap->seen = false;
            st = precis_context_run(ctx, cc, ev->ni, ev->names, in, out);
            free_set(out, ev->no);
            if (st) goto done;
        }
        precis_tensor **got = set + ev->ni;
        if (c) {
            if (cmp) {
                cmp->capture = false;
                cmp->ref = cap ? cap->ref : NULL;
                cmp->n = cap && cap->seen ? cap->n : -1;
            }
            if ((st = precis_context_run(ctx, c, ev->ni, ev->names, in, out))) goto done;
            got = out;
        }
        for (int j = 0; j < ev->n_cmp; j++) {
            const precis_tensor *r = set[ev->ni + ev->cmp[j]], *x = got[ev->cmp[j]];
            int rank = precis_tensor_rank(r);
            if (precis_tensor_dtype(x) != PRECIS_FLOAT32 || precis_tensor_rank(x) != rank ||
                memcmp(precis_tensor_dims(x), precis_tensor_dims(r),
                       (size_t)rank * sizeof(int64_t)) != 0) {
                st = pr_errf(err, PRECIS_ERR_INTERNAL,
                             "sensitivity: output %d of a candidate differs in type or shape "
                             "from the fp32 engine's", ev->cmp[j]);
                goto done;
            }
            pr_sens_acc_add(&acc[j], precis_tensor_data_const(r), precis_tensor_data_const(x),
                            rank, precis_tensor_dims(r), ev->kl[j], ev->top1[j]);
        }
        if (ev->hook &&
            (st = ev->hook(ev->hook_user, b, ev->no, (const precis_tensor *const *)got,
                           (const precis_tensor *const *)(set + ev->ni))))
            goto done;
        free_set(out, ev->no);
    }
    ev->counted = true;
done:
    if (cmp) cmp->ref = NULL; /* borrowed from cap */
    free_set(out, ev->no);
    precis_context_destroy(cc);
    precis_context_destroy(c);
    return st;
}

/* The scale of int8 tensor t of engine e: its producing step's y_scale (or
 * a QuantizeLinear's scale input); 0 when unknown. */
static float q8_scale(const precis_engine *e, int t) {
    int k = e->first_def[t];
    if (k < 0) return 0;
    const pr_node *n = &e->g->nodes[e->steps[k].node];
    if (n->op == PR_OP_QuantizeLinear) {
        int s = n->n_inputs > 1 ? n->inputs[1] : -1;
        const pr_tensor *x = s >= 0 ? &e->g->tensors[s] : NULL;
        if (!x || !x->data || x->dtype != PRECIS_FLOAT32 || x->nbytes != sizeof(float)) return 0;
        float v;
        memcpy(&v, x->data, sizeof v);
        return v;
    }
    return pr_attr_float(n, "y_scale", 0);
}

/* v as plain float32 into *dst (grown to *cap); false when it cannot be read. */
static bool to_plain(const pr_sens_local *l, const pr_graph *g, int t, const pr_buf *v,
                     float **dst, int64_t *cap) {
    float scale = 1;
    if (v->dtype == PRECIS_INT8 || v->dtype == PRECIS_UINT8) {
        if ((scale = q8_scale(l->e, t)) == 0) return false;
    } else if (v->dtype != PRECIS_FLOAT32) {
        return false;
    }
    if (*cap < v->numel) {
        float *p = realloc(*dst, (size_t)(v->numel ? v->numel : 1) * sizeof *p);
        if (!p) return false;
        *dst = p;
        *cap = v->numel;
    }
    bool nhwc = g->tensors[t].layout == PR_LAYOUT_NHWC && v->rank == 4;
    int64_t C = nhwc ? v->dims[1] : 1;
    int64_t HW = nhwc ? v->dims[2] * v->dims[3] : 1;
    for (int64_t i = 0; i < v->numel; i++) {
        /* i indexes the logical (NCHW) order; src the stored one */
        int64_t src = i;
        if (nhwc) {
            int64_t n = i / (C * HW), c = i / HW % C, hw = i % HW;
            src = (n * HW + hw) * C + c;
        }
        float x = v->dtype == PRECIS_FLOAT32 ? ((const float *)v->data)[src]
                  : v->dtype == PRECIS_INT8  ? scale * ((const int8_t *)v->data)[src]
                                             : scale * ((const uint8_t *)v->data)[src];
        (*dst)[i] = x;
    }
    return true;
}

precis_status pr_sens_local_observe(void *user, const pr_graph *g, int t, const pr_buf *v,
                                    pr_err *e) {
    pr_sens_local *l = user;
    if (t != l->target) return PRECIS_OK;
    if (l->capture) {
        l->seen = to_plain(l, g, t, v, &l->ref, &l->cap_ref);
        l->n = l->seen ? v->numel : -1;
        l->mismatch |= !l->seen;
        return PRECIS_OK;
    }
    if (!l->ref || l->n != v->numel || !to_plain(l, g, t, v, &l->cur, &l->cap_cur)) {
        l->mismatch = true;
        return PRECIS_OK;
    }
    pr_sens_energy(l->ref, l->cur, v->numel, &l->sig, &l->noise);
    l->seen = true;
    return PRECIS_OK;
}

void pr_sens_local_free(pr_sens_local *l) {
    free(l->ref);
    free(l->cur);
    l->ref = l->cur = NULL;
    l->cap_ref = l->cap_cur = 0;
}
