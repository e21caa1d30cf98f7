/* Fused INT8 blocks (qblock.h). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/qblock.h"
#include "backends/cpu/k_qdwconv.h"
#include "backends/cpu/k_qfc.h"

struct pr_cpu_block {
    int len;
    const pr_cpu_impl *impl[PR_CPU_BLOCK_MAX];
    void *state[PR_CPU_BLOCK_MAX];
    pr_seproj *sp; /* the last two members (gate Mul, projection) fused, or NULL */
};

/* Members must be our own kernels: each thread of the block's parallel
 * region runs them on its share of the images, on a per-thread exec without
 * a oneDNN stream. */
static bool own(const pr_cpu_impl *im, const char *name) {
    return im && im->name && strcmp(im->name, name) == 0;
}

static bool is_op(const pr_node *n, pr_op op, const char *kind) {
    return n->op == op && (!kind || strcmp(pr_attr_str(n, "kind", ""), kind) == 0);
}

/* out0 of node a is input i of node b */
static bool feeds(const pr_node *a, const pr_node *b, int i) {
    return a->n_outputs >= 1 && a->outputs[0] >= 0 && i < b->n_inputs &&
           b->inputs[i] == a->outputs[0];
}

int pr_cpu_block_match(const pr_graph *g, const pr_node *const *nodes,
                       const pr_cpu_impl *const *impls, void *const *states, int n,
                       pr_cpu_block **out, pr_err *e) {
    *out = NULL;
    const char *off = getenv("PRECIS_QBLOCK");
    if (off && strcmp(off, "0") == 0) return 0;
    /* [expand 1x1 (q1x1)] -> depthwise (qdwconv) -> GAP (pool) -> FC (qfc)
     * -> FC (qfc) -> Mul(dw out, gate) (qbinary) */
    int i = 0;
    if (n >= 1 && own(impls[0], "q1x1") && nodes[0]->op == PR_OP_QConv) i = 1;
    if (n < i + 5) return 0;
    const pr_node *d = nodes[i], *p = nodes[i + 1], *f1 = nodes[i + 2], *f2 = nodes[i + 3],
                  *m = nodes[i + 4];
    if (!own(impls[i], "qdwconv") || !is_op(d, PR_OP_QConv, NULL)) return 0;
    if (!pr_qdw_block_ok(states[i])) return 0; /* its large images run oneDNN */
    if (i == 1 && !feeds(nodes[0], d, 0)) return 0;
    if (!own(impls[i + 1], "pool") || !is_op(p, PR_OP_QPool, "GlobalAveragePool") ||
        !feeds(d, p, 0))
        return 0;
    if (!own(impls[i + 2], "qfc") || !feeds(p, f1, 0)) return 0;
    if (!own(impls[i + 3], "qfc") || !feeds(f1, f2, 0)) return 0;
    if (!own(impls[i + 4], "qbinary") || !is_op(m, PR_OP_QBinary, "Mul") || m->n_inputs != 2 ||
        !((feeds(d, m, 0) && feeds(f2, m, 1)) || (feeds(d, m, 1) && feeds(f2, m, 0))))
        return 0;
    int len = i + 5;
    /* the projection after the gate: fused with it when it qualifies */
    const bool sp = n > len && pr_seproj_ok(g, m, nodes[len]);
    if (sp) len++;
    pr_cpu_block *b = calloc(1, sizeof *b);
    if (!b || (sp && !(b->sp = pr_seproj_new(g, m, nodes[len - 1])))) {
        free(b);
        pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        return -1;
    }
    b->len = len;
    for (int k = 0; k < len; k++) {
        b->impl[k] = impls[k];
        b->state[k] = states[k];
    }
    *out = b;
    return len;
}

const char *pr_cpu_block_member(const pr_cpu_block *b, int i) {
    if (!b || !b->sp || i < b->len - 2 || i >= b->len) return NULL;
    return i == b->len - 2 ? "seproj (gate folded into the next step's weights; not stored)"
           : pr_seproj_amx(b->sp) ? "seproj.amx_int8 (gate x weights per image)"
                                   : "seproj.avx512_vnni (gate x weights per image)";
}
void pr_cpu_block_destroy(pr_cpu_block *b) { /* the states are the steps' */
    if (b) pr_seproj_free(b->sp);
    free(b);
}

void pr_cpu_exec_free_subs(pr_cpu_exec *x) {
    if (!x || !x->subs) return;
    for (int t = 0; t < x->n_subs; t++) free(x->subs[t].scratch);
    free(x->subs);
    x->subs = NULL;
    x->n_subs = 0;
}

/* Images [n0, n1) of b when b is an activation of the batch (not an
 * initializer, leading dim N); else b itself. */
static const pr_buf *slice(const pr_graph *g, int t, const pr_buf *b, int64_t N, int64_t n0,
                           int64_t n1, pr_buf *tmp) {
    if (!b || t < 0 || (g->tensors[t].flags & PR_T_INIT) || b->rank < 1 || b->dims[0] != N)
        return b;
    *tmp = *b;
    const int64_t per = b->numel / N;
    tmp->dims[0] = n1 - n0;
    tmp->numel = per * (n1 - n0);
    tmp->nbytes = b->nbytes / (size_t)N * (size_t)(n1 - n0);
    tmp->data = (unsigned char *)b->data + (size_t)n0 * (b->nbytes / (size_t)N);
    return tmp;
}

/* Member i on images [n0, n1), one thread, exec x. */
static precis_status run_images(const pr_cpu_block *b, int i, const pr_kernel *k, int64_t N,
                                int64_t n0, int64_t n1, pr_cpu_exec *x, pr_err *e) {
    enum { IO = 8 };
    const pr_node *nd = k->node;
    if (k->n_in > IO || k->n_out > IO)
        return pr_errf(e, PRECIS_ERR_INTERNAL, "qblock: too many io");
    pr_buf ti[IO], to[IO];
    const pr_buf *in[IO];
    pr_buf *outp[IO];
    for (int j = 0; j < k->n_in; j++)
        in[j] = slice(k->g, nd->inputs[j], k->in[j], N, n0, n1, &ti[j]);
    for (int j = 0; j < k->n_out; j++)
        outp[j] = (pr_buf *)slice(k->g, nd->outputs[j], k->out[j], N, n0, n1, &to[j]);
    pr_kernel kk = {k->g, nd, k->n_in, in, k->n_out, outp, e, 1};
    return b->impl[i]->run(b->state[i], &kk, x);
}

/* x->subs holds at least nt per-thread execs (false: OOM). */
static bool need_subs(pr_cpu_exec *x, int nt) {
    if (x->n_subs >= nt) return true;
    pr_cpu_exec_free_subs(x);
    x->subs = calloc((size_t)nt, sizeof *x->subs);
    if (!x->subs) return false;
    x->n_subs = nt;
    return true;
}

/* The fused SE tail of all N images; with threads and enough work (cls's
 * 88- to 200-channel blocks at batch 1), each thread a part of every image's
 * pixels (the per-image weights made by each). */
#define SEPROJ_PAR_MIN 400000 /* output values x input channels */
static precis_status run_seproj(const pr_cpu_block *b, pr_kernel *km, pr_kernel *kp,
                                int64_t N, pr_cpu_exec *x) {
    int nt = x->num_threads > 0 ? x->num_threads : 1;
    const pr_buf *W = kp->in[1], *Y = kp->out[0];
    if (nt < 2 || !W || W->rank != 4 || Y->numel * W->dims[1] < SEPROJ_PAR_MIN)
        return pr_seproj_run(b->sp, km, kp, 0, N, 0, 1, x);
    if (nt > 64) nt = 64;
    if (!need_subs(x, nt)) return pr_kernelf(kp, PRECIS_ERR_OOM, "out of memory");
    precis_status sts[64] = {0};
    pr_err errs[64];
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        pr_err_clear(&errs[t]);
        pr_kernel m = *km, p = *kp;
        m.err = p.err = &errs[t];
        x->subs[t].num_threads = 1;
        sts[t] = pr_seproj_run(b->sp, &m, &p, 0, N, t, nt, &x->subs[t]);
    }
    for (int t = 0; t < nt; t++)
        if (sts[t]) {
            *kp->err = errs[t];
            return sts[t];
        }
    return PRECIS_OK;
}

precis_status pr_cpu_block_run(const pr_cpu_block *b, pr_kernel *ks, pr_cpu_exec *x) {
    const pr_buf *X = ks[0].in[0];
    const int64_t N = X && X->rank == 4 ? X->dims[0] : 1;
    int nt = x->num_threads > 0 ? x->num_threads : 1;
    if (nt > N) nt = (int)N;
    /* one image or images too large for a core's cache (q1x1 hands those to
     * oneDNN, which needs the context's stream): the members one by one */
    bool whole = nt < 2 || X->dims[2] * X->dims[3] > Q1X1_MAX_PIX;
    for (int i = 0; !whole && i < b->len; i++) {
        const pr_buf *Y = ks[i].out[0];
        whole = !Y || Y->rank != 4 || Y->dims[0] != N;
    }
    const int nm = b->sp ? b->len - 2 : b->len; /* members run by their impls */
    if (whole) {
        for (int i = 0; i < nm; i++) {
            precis_status st = b->impl[i]->run(b->state[i], &ks[i], x);
            if (st) return st;
        }
        return b->sp ? run_seproj(b, &ks[nm], &ks[nm + 1], N, x) : PRECIS_OK;
    }
    if (!need_subs(x, nt)) return pr_kernelf(&ks[0], PRECIS_ERR_OOM, "out of memory");
    precis_status sts[64] = {0};
    pr_err errs[64];
    if (nt > 64) nt = 64;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        const int t = omp_get_thread_num();
        pr_cpu_exec *sx = &x->subs[t];
        sx->num_threads = 1;
        sx->dnnl_stream = NULL;
        pr_err_clear(&errs[t]);
        /* each thread its share of the images through every member (one
         * image at a time cost ~0.5 us of kernel setup per member and image:
         * cls b8 t1 1.12 -> 1.30 ms) */
        const int64_t n0 = N * t / nt, n1 = N * (t + 1) / nt;
        for (int i = 0; i < nm && !sts[t] && n1 > n0; i++)
            sts[t] = run_images(b, i, &ks[i], N, n0, n1, sx, &errs[t]);
        if (b->sp && !sts[t] && n1 > n0) {
            pr_kernel km = ks[nm], kp = ks[nm + 1];
            km.err = kp.err = &errs[t];
            sts[t] = pr_seproj_run(b->sp, &km, &kp, n0, n1, 0, 1, sx);
        }
    }
    for (int t = 0; t < nt; t++)
        if (sts[t]) {
            *ks[0].err = errs[t];
            return sts[t];
        }
    return PRECIS_OK;
}
