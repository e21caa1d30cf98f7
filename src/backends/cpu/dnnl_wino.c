/* Winograd path of dnnl.conv: see dnnl_wino.h. */
#include "backends/cpu/dnnl_wino.h"

#ifdef PRECIS_HAVE_DNNL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int pr_dnnl_wino_mode(void) {
    const char *v = getenv("PRECIS_WINOGRAD");
    if (v && v[0] == '0') return 0;
    if (v && strcmp(v, "force") == 0) return 2;
    return 1;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* One primitive of a timed sequence with its arguments. */
typedef struct tstep {
    dnnl_primitive_t prim;
    int n;
    dnnl_exec_arg_t args[6];
} tstep;

static void targ(tstep *t, int arg, dnnl_memory_t m) {
    t->args[t->n].arg = arg;
    t->args[t->n].memory = m;
    t->n++;
}

/* Best time in ms of running the sequence, over a few repetitions. */
static precis_status time_seq(const tstep *seq, int n, dnnl_stream_t strm, double *best,
                              pr_err *e) {
    *best = 1e30;
    for (int rep = 0; rep < 7; rep++) {
        double t0 = now_ms();
        dnnl_status_t ds = dnnl_success;
        for (int i = 0; i < n && ds == dnnl_success; i++)
            ds = dnnl_primitive_execute(seq[i].prim, strm, seq[i].n, seq[i].args);
        if (ds == dnnl_success) ds = dnnl_stream_wait(strm);
        if (ds != dnnl_success) return pr_dnnl_check(ds, e, "timing a convolution");
        double t = now_ms() - t0;
        if (rep >= 2 && t < *best) *best = t; /* two warm-up runs */
    }
    return PRECIS_OK;
}

/* Everything the trial allocates, freed in one place. */
typedef struct trial {
    dnnl_primitive_desc_t pd, rpd[3];
    dnnl_primitive_t prim, rprim[3], dprim;
    void *wino_wei, *direct_wei, *buf[6]; /* x, y, staged x, staged y, bias, scratch */
    dnnl_memory_t mem[10];
    int nmem;
    dnnl_stream_t strm;
} trial;

static void trial_free(trial *t) {
    for (int i = 0; i < t->nmem; i++) dnnl_memory_destroy(t->mem[i]);
    if (t->strm) dnnl_stream_destroy(t->strm);
    if (t->pd) dnnl_primitive_desc_destroy(t->pd);
    if (t->prim) dnnl_primitive_destroy(t->prim);
    if (t->dprim) dnnl_primitive_destroy(t->dprim);
    for (int i = 0; i < 3; i++) {
        if (t->rpd[i]) dnnl_primitive_desc_destroy(t->rpd[i]);
        if (t->rprim[i]) dnnl_primitive_destroy(t->rprim[i]);
    }
    free(t->wino_wei);
    free(t->direct_wei);
    for (int i = 0; i < 6; i++) free(t->buf[i]);
}

static dnnl_memory_t tmem(trial *t, const dnnl_memory_desc_t *md, void *p, dnnl_engine_t eng) {
    dnnl_memory_t m = NULL;
    if (t->nmem >= 10 || dnnl_memory_create(&m, md, eng, p) != dnnl_success) return NULL;
    t->mem[t->nmem++] = m;
    return m;
}

static void *zalloc(size_t bytes) {
    void *p = pr_dnnl_alloc(bytes ? bytes : 64);
    if (p) memset(p, 0, bytes ? bytes : 64);
    return p;
}

static size_t md_bytes(const dnnl_memory_desc_t *md) { return dnnl_memory_desc_get_size(md); }

static size_t pd_scratch(const_dnnl_primitive_desc_t pd) {
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return sp ? md_bytes(sp) : 0;
}

/* A child entry running a reorder primitive (FROM, TO). */
static precis_status stage_entry(dnnl_primitive_t *prim, const dnnl_memory_desc_t *from,
                                 const dnnl_memory_desc_t *to, pr_dnnl_entry **out, pr_err *e) {
    pr_dnnl_entry *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->prim = *prim;
    *prim = NULL;
    snprintf(s->impl, sizeof s->impl, "reorder");
    pr_dnnl_entry_arg(s, DNNL_ARG_FROM, from);
    pr_dnnl_entry_arg(s, DNNL_ARG_TO, to);
    *out = s;
    return PRECIS_OK;
}

precis_status pr_dnnl_wino_try(const pr_wino_req *r, const_dnnl_primitive_desc_t direct,
                               pr_dnnl_entry *ent, bool *won, pr_err *e) {
    *won = false;
    dnnl_engine_t eng = pr_dnnl_engine(e);
    if (!eng) return e->status;
    trial t = {0};
    precis_status st = PRECIS_OK;
    int saved = pr_dnnl_threads_set(r->threads);

    /* the Winograd primitive on blocked src/dst; absent: not an error */
    dnnl_memory_desc_t bs, bd, wmd;
    if (dnnl_memory_desc_init_by_tag(&bs, 4, r->src->dims, dnnl_f32, dnnl_nChw16c) ||
        dnnl_memory_desc_init_by_tag(&bd, 4, r->dst->dims, dnnl_f32, dnnl_nChw16c) ||
        dnnl_memory_desc_init_by_tag(&wmd, 4, r->user_wei->dims, dnnl_f32, dnnl_format_tag_any))
        goto done;
    dnnl_convolution_desc_t cd;
    dnnl_dims_t strides = {1, 1};
    if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_winograd,
                                           &bs, &wmd, r->bias, &bd, strides, *r->pad_l,
                                           *r->pad_r) != dnnl_success ||
        dnnl_primitive_desc_create(&t.pd, &cd, r->attr, eng, NULL) != dnnl_success)
        goto done;
    const char *impl = NULL;
    dnnl_primitive_desc_query(t.pd, dnnl_query_impl_info_str, 0, &impl);
    if (!impl || !strstr(impl, "wino")) goto done;
    const dnnl_memory_desc_t *wwmd = dnnl_primitive_desc_query_md(t.pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *dwmd = dnnl_primitive_desc_query_md(direct, dnnl_query_weights_md, 0);
    /* reorders: input in, residual in, output out; none may need a scratchpad
     * (the staging buffers sit right after the convolution's) */
    const dnnl_memory_desc_t *rf[3] = {r->src, r->dst, &bd}, *rt[3] = {&bs, &bd, r->dst};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && !r->has_z) continue;
        if (dnnl_reorder_primitive_desc_create(&t.rpd[i], rf[i], eng, rt[i], eng, NULL) !=
                dnnl_success ||
            pd_scratch(t.rpd[i]) != 0)
            goto done;
        PR_TRY(pr_dnnl_check(dnnl_primitive_create(&t.rprim[i], t.rpd[i]), e, "reorder"));
    }
    PR_TRY(pr_dnnl_check(dnnl_primitive_create(&t.prim, t.pd), e, "winograd convolution"));
    PR_TRY(pr_dnnl_check(dnnl_primitive_create(&t.dprim, direct), e, "convolution"));

    /* weights for both, buffers (zeros: float timing does not depend on values) */
    t.wino_wei = pr_dnnl_alloc(md_bytes(wwmd));
    t.direct_wei = pr_dnnl_alloc(md_bytes(dwmd));
    size_t scr = pd_scratch(t.pd) > pd_scratch(direct) ? pd_scratch(t.pd) : pd_scratch(direct);
    size_t sz[6] = {md_bytes(r->src), md_bytes(r->dst), md_bytes(&bs), md_bytes(&bd),
                    r->bias ? md_bytes(r->bias) : 0, scr};
    for (int i = 0; i < 6; i++) t.buf[i] = zalloc(sz[i]);
    for (int i = 0; i < 6; i++)
        if (!t.buf[i]) st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (!t.wino_wei || !t.direct_wei) st = pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (st) goto fail;
    PR_TRY(pr_dnnl_reorder(r->user_wei, r->user, wwmd, t.wino_wei, e));
    PR_TRY(pr_dnnl_reorder(r->user_wei, r->user, dwmd, t.direct_wei, e));

    dnnl_memory_desc_t smd;
    const dnnl_dims_t sd = {(dnnl_dim_t)(scr ? scr : 64)};
    PR_TRY(pr_dnnl_check(dnnl_memory_desc_init_by_tag(&smd, 1, sd, dnnl_u8, dnnl_a), e, "scratch"));
    PR_TRY(pr_dnnl_check(dnnl_stream_create(&t.strm, eng, dnnl_stream_default_flags), e,
                         "stream"));
    dnnl_memory_t mx = tmem(&t, r->src, t.buf[0], eng), my = tmem(&t, r->dst, t.buf[1], eng);
    dnnl_memory_t mbx = tmem(&t, &bs, t.buf[2], eng), mby = tmem(&t, &bd, t.buf[3], eng);
    dnnl_memory_t mb = r->bias ? tmem(&t, r->bias, t.buf[4], eng) : NULL;
    dnnl_memory_t msc = tmem(&t, &smd, t.buf[5], eng);
    dnnl_memory_t mww = tmem(&t, wwmd, t.wino_wei, eng), mdw = tmem(&t, dwmd, t.direct_wei, eng);
    if (!mx || !my || !mbx || !mby || (r->bias && !mb) || !msc || !mww || !mdw) {
        st = pr_errf(e, PRECIS_ERR_OOM, "timing a convolution: oneDNN memory");
        goto fail;
    }
    tstep dseq = {.prim = t.dprim}, wseq[4];
    targ(&dseq, DNNL_ARG_SRC, mx);
    targ(&dseq, DNNL_ARG_WEIGHTS, mdw);
    if (mb) targ(&dseq, DNNL_ARG_BIAS, mb);
    targ(&dseq, DNNL_ARG_DST, my);
    if (pd_scratch(direct)) targ(&dseq, DNNL_ARG_SCRATCHPAD, msc);
    int nw = 0;
    wseq[nw] = (tstep){.prim = t.rprim[0]};
    targ(&wseq[nw], DNNL_ARG_FROM, mx);
    targ(&wseq[nw++], DNNL_ARG_TO, mbx);
    if (r->has_z) {
        wseq[nw] = (tstep){.prim = t.rprim[1]};
        targ(&wseq[nw], DNNL_ARG_FROM, my);
        targ(&wseq[nw++], DNNL_ARG_TO, mby);
    }
    wseq[nw] = (tstep){.prim = t.prim};
    targ(&wseq[nw], DNNL_ARG_SRC, mbx);
    targ(&wseq[nw], DNNL_ARG_WEIGHTS, mww);
    if (mb) targ(&wseq[nw], DNNL_ARG_BIAS, mb);
    targ(&wseq[nw], DNNL_ARG_DST, mby);
    if (pd_scratch(t.pd)) targ(&wseq[nw], DNNL_ARG_SCRATCHPAD, msc);
    nw++;
    wseq[nw] = (tstep){.prim = t.rprim[2]};
    targ(&wseq[nw], DNNL_ARG_FROM, mby);
    targ(&wseq[nw++], DNNL_ARG_TO, my);
    double td = 0, tw = 0;
    if (!r->take) {
        PR_TRY(time_seq(&dseq, 1, t.strm, &td, e));
        PR_TRY(time_seq(wseq, nw, t.strm, &tw, e));
        if (!(tw < 0.95 * td) && pr_dnnl_wino_mode() != 2) goto done;
    }

    /* the Winograd path wins: ent takes the primitive, weights and stages */
    PR_TRY(pr_dnnl_entry_set_prim(ent, t.pd, e));
    pr_dnnl_entry_arg(ent, DNNL_ARG_SRC, &bs);
    pr_dnnl_entry_arg(ent, DNNL_ARG_WEIGHTS, wwmd);
    if (r->bias) pr_dnnl_entry_arg(ent, DNNL_ARG_BIAS, r->bias);
    pr_dnnl_entry_arg(ent, DNNL_ARG_DST, &bd);
    ent->wei = t.wino_wei;
    ent->own_wei = true;
    t.wino_wei = NULL;
    for (int i = 0; i < 3; i++)
        if (t.rprim[i]) PR_TRY(stage_entry(&t.rprim[i], rf[i], rt[i], &ent->stage[i], e));
    ent->stage_bytes[0] = md_bytes(&bs);
    ent->stage_bytes[1] = md_bytes(&bd);
    char name[96];
    if (r->take)
        snprintf(name, sizeof name, "%s+nChw16c (chosen by the plan)", ent->impl);
    else
        snprintf(name, sizeof name, "%s+nChw16c (%.2f vs direct %.2f ms)", ent->impl, tw, td);
    snprintf(ent->impl, sizeof ent->impl, "%s", name);
    *won = true;
done:
fail:
    pr_dnnl_threads_restore(saved);
    trial_free(&t);
    return st;
}

#endif
