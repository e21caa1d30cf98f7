/* Checking the CPU backend's INT8 impls against the ref backend
 * (tests/unit/test_cpu_int8.c); the companion of cpu_check.h for cases whose
 * inputs are int8/uint8 (or any dtype given byte for byte):
 *
 *   qnode q; qn_init(&q, PR_OP_QConv, "QConv", 1, true); qn_float(&q, "x_scale", s);
 *   qc_in in[] = {q_act("x", 4, dims, PRECIS_UINT8, true),       // random, NHWC
 *                 q_init("w", 4, wdims, PRECIS_INT8, data), ...};
 *   qc_run(&q.t, n, in, 1, true, &impl, threads, 1, false, "label");
 *
 * Inputs are given in the logical (plain) order; the impl sees rank-4
 * non-initializer inputs marked nhwc stored N,H,W,C, the ref sees plain
 * tensors. Integer outputs may differ by tol_units (counted in q_total /
 * q_diff1 for the report; at most 2% of an output may differ); float outputs
 * within 1e-4 of their largest magnitude; exact: bit for bit (NaN == NaN).
 * qc_prepare / qc_exec / qc_release run one prepared state on several
 * concrete shapes (symbolic graph dims) or with the output in an input's
 * buffer (in place). Every mismatch is a failed CHECK naming the case.
 * time_runs() gives the median time of a prepared impl for speed prints;
 * q8_also_scalar() reruns the test binary with PRECIS_CPU_ISA=scalar. */
#ifndef PR_TESTS_UNIT_CPU_CHECK_Q8_H
#define PR_TESTS_UNIT_CPU_CHECK_Q8_H

#include <assert.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/dnnl_common.h"
#include "cpu_check.h"

/* ------------------------------------------------------------ nodes */

/* A tnode with room for more attributes than tnode.h keeps. */
#define QN_MAX 24
typedef struct qnode {
    tnode t; /* t.node.attrs points at attrs: never copy a qnode */
    pr_attr attrs[QN_MAX];
    int64_t ints[QN_MAX][8];
} qnode;

static inline void qn_init(qnode *q, pr_op op, const char *type, int64_t opset, bool fused) {
    n_init(&q->t, op, type, opset);
    if (fused) q->t.node.domain = PR_FUSED_DOMAIN;
    q->t.node.attrs = q->attrs;
}

static inline pr_attr *qn_attr(qnode *q, const char *name, pr_attr_type type) {
    assert(q->t.node.n_attrs < QN_MAX);
    pr_attr *a = &q->attrs[q->t.node.n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = name;
    a->type = type;
    return a;
}
static inline void qn_int(qnode *q, const char *name, int64_t v) {
    qn_attr(q, name, PR_ATTR_INT)->i = v;
}
static inline void qn_float(qnode *q, const char *name, float v) {
    qn_attr(q, name, PR_ATTR_FLOAT)->f = v;
}
static inline void qn_str(qnode *q, const char *name, const char *s) {
    pr_attr *a = qn_attr(q, name, PR_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
}
static inline void qn_ints(qnode *q, const char *name, const int64_t *v, int n) {
    assert(n <= 8);
    int k = q->t.node.n_attrs;
    pr_attr *a = qn_attr(q, name, PR_ATTR_INTS);
    memcpy(q->ints[k], v, (size_t)n * sizeof *v);
    a->ints = q->ints[k];
    a->n = n;
}
static inline void qn_act(qnode *q, const char *prefix, const char *act, float alpha, float beta) {
    bool two = !strcmp(prefix, "act2");
    qn_str(q, prefix, act);
    qn_float(q, two ? "act2_alpha" : "act_alpha", alpha);
    qn_float(q, two ? "act2_beta" : "act_beta", beta);
}

/* ------------------------------------------------------------ inputs */

typedef struct qc_in {
    const char *name; /* NULL: an omitted optional input */
    int rank;
    int64_t dims[PR_MAX_RANK];
    pr_dtype dt;
    bool init, nhwc;
    void *data; /* plain (logical) order, owned by the case */
} qc_in;

static inline int64_t qc_numel(const qc_in *q) { return pr_numel(q->rank, q->dims); }

/* Random contents: int8 in [lo, hi], uint8 likewise, float types in [flo, fhi). */
static inline void *rnd_data(pr_dtype dt, int64_t n, int lo, int hi, float flo, float fhi) {
    size_t es = pr_dtype_size(dt);
    unsigned char *d = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case PRECIS_INT8:
        case PRECIS_UINT8:
        case PRECIS_BOOL: {
            int v = lo + (int)floorf(cc_rand(0, 1) * (float)(hi - lo + 1));
            v = v > hi ? hi : v;
            d[i] = (unsigned char)(dt == PRECIS_INT8 ? (uint8_t)(int8_t)v : (uint8_t)v);
            break;
        }
        default: pr_store_f64(d, dt, i, cc_rand(flo, fhi)); break;
        }
    }
    return d;
}

static inline qc_in q_act(const char *name, int rank, const int64_t *dims, pr_dtype dt, bool nhwc) {
    qc_in q = {name, rank, {0}, dt, false, nhwc, NULL};
    if (rank > 0) memcpy(q.dims, dims, (size_t)rank * sizeof *dims);
    int lo = dt == PRECIS_UINT8 ? 0 : -128, hi = dt == PRECIS_UINT8 ? 255 : 127;
    q.data = rnd_data(dt, qc_numel(&q), lo, hi, -2, 2);
    return q;
}

static inline qc_in q_init(const char *name, int rank, const int64_t *dims, pr_dtype dt,
                           const void *src) {
    qc_in q = {name, rank, {0}, dt, true, false, NULL};
    if (rank > 0) memcpy(q.dims, dims, (size_t)rank * sizeof *dims);
    size_t nb = (size_t)qc_numel(&q) * pr_dtype_size(dt);
    q.data = malloc(nb ? nb : 1);
    if (nb) memcpy(q.data, src, nb);
    return q;
}

static inline void qc_free(qc_in *in, int n) {
    for (int i = 0; i < n; i++) {
        free(in[i].data);
        in[i].data = NULL;
    }
}

/* Byte-wise N,C,H,W <-> N,H,W,C of elements of es bytes. */
static inline void bytes_nhwc(const void *s, void *d, const int64_t *dm, size_t es, bool to_nhwc) {
    int64_t N = dm[0], C = dm[1], HW = dm[2] * dm[3];
    const unsigned char *sp = s;
    unsigned char *dp = d;
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++) {
                int64_t pl = (n * C + c) * HW + p, nh = (n * HW + p) * C + c;
                memcpy(dp + (to_nhwc ? nh : pl) * es, sp + (to_nhwc ? pl : nh) * es, es);
            }
}

/* ------------------------------------------------------------ runner */

/* Differences of int8/uint8 outputs of the q ops, over all cases. */
static int64_t q_total, q_diff1;
static double f_worst; /* worst |diff| / max|ref| of float32 outputs */

/* Names of the implementations oneDNN picked, with a case each. */
static char seen[32][160];
static int n_seen;
static inline void note_impl(const char *impl, const char *label) {
    for (int i = 0; i < n_seen; i++)
        if (!strncmp(seen[i], impl, strlen(impl)) && seen[i][strlen(impl)] == ' ') return;
    if (n_seen < 32) snprintf(seen[n_seen++], sizeof seen[0], "%s (%s)", impl, label);
}

/* threads of the next runs (as prepared) */
static int qc_threads = 1;

typedef struct qc_prep {
    const pr_cpu_impl *impl;
    const tnode *t;
    int n_in, n_out;
    bool out_nhwc;
    pr_graph *gi;
    void *state;
} qc_prep;

static inline void to_cc(const qc_in *in, int n, cc_input *cc, pr_dtype *dt, float **fd,
                         bool layouts) {
    memset(cc, 0, (size_t)n * sizeof *cc);
    for (int i = 0; i < n; i++) {
        dt[i] = in[i].dt;
        fd[i] = NULL;
        if (!in[i].name) continue;
        cc[i].name = in[i].name;
        cc[i].rank = in[i].rank;
        memcpy(cc[i].dims, in[i].dims, sizeof cc[i].dims);
        cc[i].init = in[i].init;
        cc[i].nhwc = layouts && in[i].nhwc;
        cc[i].dtype = in[i].dt;
        cc[i].raw = in[i].data;
        if (in[i].dt == PRECIS_FLOAT32) fd[i] = in[i].data;
    }
}

/* Builds the impl's graph on gin (dims may be symbolic) and prepares it;
 * false (CHECKed) when the impl declines or fails. */
static inline bool qc_prepare(qc_prep *p, const tnode *t, int n_in, const qc_in *gin, int n_out,
                              bool out_nhwc, const pr_cpu_impl *impl, int threads,
                              const char *label) {
    memset(p, 0, sizeof *p);
    p->impl = impl;
    p->t = t;
    p->n_in = n_in;
    p->n_out = n_out;
    p->out_nhwc = out_nhwc;
    cc_input cc[CC_MAX_IO];
    pr_dtype dt[CC_MAX_IO];
    float *fd[CC_MAX_IO];
    to_cc(gin, n_in, cc, dt, fd, true);
    bool onh[CC_MAX_IO];
    for (int j = 0; j < CC_MAX_IO; j++) onh[j] = out_nhwc;
    p->gi = cc_graph(t, n_in, cc, dt, fd, n_out, onh, true);
    bool ok = p->gi && impl->supports(p->gi, &p->gi->nodes[0]);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "%s: %s does not support the case\n", label, impl->name);
        return false;
    }
    pr_err e = {0};
    pr_cpu_cfg cfg = {.num_threads = threads};
    precis_status st = impl->prepare(p->gi, &p->gi->nodes[0], &cfg, &p->state, &e);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: prepare failed: %s\n", label, e.msg);
        return false;
    }
    if (impl->describe) note_impl(impl->describe(p->state), label);
    return true;
}

static inline void qc_release(qc_prep *p) {
    if (p->state && p->impl->destroy) p->impl->destroy(p->state);
    pr_graph_destroy(p->gi);
    p->state = NULL;
    p->gi = NULL;
}

/* Compares output j; tol_units: allowed difference of integer outputs;
 * float outputs within 1e-4 of their largest magnitude (exact: 0). */
static inline bool qc_compare(const pr_buf *ref, const pr_buf *got, bool nhwc, int tol_units,
                              bool exact, const char *label) {
    int64_t ne = ref->numel;
    float *r = malloc((size_t)(ne ? ne : 1) * sizeof(float));
    float *v = malloc((size_t)(ne ? ne : 1) * sizeof(float));
    float *v2 = malloc((size_t)(ne ? ne : 1) * sizeof(float));
    pr_ref_to_f32(ref->data, ref->dtype, ne, r);
    pr_ref_to_f32(got->data, got->dtype, ne, v);
    if (nhwc && ref->rank == 4)
        cc_nhwc_to_nchw(v, v2, ref->dims);
    else
        memcpy(v2, v, (size_t)ne * sizeof(float));
    bool is_int = !pr_dtype_info(ref->dtype)->is_float;
    float mx = 0;
    for (int64_t q = 0; q < ne; q++) mx = fabsf(r[q]) > mx ? fabsf(r[q]) : mx;
    float tol = exact ? 0.0f : is_int ? (float)tol_units : 1e-4f * mx + 1e-6f;
    int bad = 0;
    int64_t diff = 0;
    float worst = 0;
    for (int64_t q = 0; q < ne; q++) {
        float d = fabsf(v2[q] - r[q]);
        bool same_nan = isnan(r[q]) && isnan(v2[q]);
        if (!same_nan && !(d <= tol) && v2[q] != r[q]) {
            if (bad++ < 3)
                fprintf(stderr, "%s: element %lld: impl %g, ref %g\n", label, (long long)q, v2[q],
                        r[q]);
        }
        if (!same_nan && d > 0) diff++;
        if (d > worst && !same_nan) worst = d;
    }
    if (is_int && !exact) {
        q_total += ne;
        q_diff1 += diff;
    } else if (!is_int && mx > 0 && worst / mx > f_worst) {
        f_worst = worst / mx;
    }
    CHECK(bad == 0);
    /* near-half roundings only: a tiny fraction */
    if (is_int && ne >= 200) CHECK(diff <= ne / 50);
    if (is_int && ne >= 200 && diff > ne / 50)
        fprintf(stderr, "%s: %lld of %lld differ by one\n", label, (long long)diff, (long long)ne);
    free(r);
    free(v);
    free(v2);
    return bad == 0;
}

/* Runs the prepared impl on concrete inputs; compares with ref. inplace >=
 * 0: output 0 is written into that input's (impl) buffer. out_dt: the
 * impl's output dtype (PRECIS_UNDEFINED: ref's); ref's float32 is rounded
 * to it before comparing. */
static inline void qc_exec(qc_prep *p, const qc_in *in, int inplace, pr_dtype out_dt, int tol_units,
                           bool exact, const char *label) {
    cc_input cc[CC_MAX_IO];
    pr_dtype dt[CC_MAX_IO];
    float *fd[CC_MAX_IO];
    to_cc(in, p->n_in, cc, dt, fd, false);
    pr_graph *gr = cc_graph(p->t, p->n_in, cc, dt, fd, p->n_out, NULL, false);
    pr_err e = {0};
    pr_buf rin[CC_MAX_IO], iin[CC_MAX_IO], rout[CC_MAX_IO], iout[CC_MAX_IO];
    const pr_buf *rinp[CC_MAX_IO], *iinp[CC_MAX_IO];
    pr_buf *ioutp[CC_MAX_IO];
    memset(rin, 0, sizeof rin);
    memset(iin, 0, sizeof iin);
    memset(rout, 0, sizeof rout);
    memset(iout, 0, sizeof iout);
    for (int i = 0; i < p->n_in; i++) {
        rinp[i] = iinp[i] = NULL;
        if (!in[i].name) continue;
        pr_buf_alloc(&rin[i], in[i].dt, in[i].rank, in[i].dims, in[i].name, &e);
        pr_buf_alloc(&iin[i], in[i].dt, in[i].rank, in[i].dims, in[i].name, &e);
        if (rin[i].nbytes) memcpy(rin[i].data, in[i].data, rin[i].nbytes);
        if (in[i].nhwc && !in[i].init && in[i].rank == 4)
            bytes_nhwc(in[i].data, iin[i].data, in[i].dims, pr_dtype_size(in[i].dt), true);
        else if (iin[i].nbytes)
            memcpy(iin[i].data, in[i].data, iin[i].nbytes);
        rinp[i] = &rin[i];
        iinp[i] = &iin[i];
    }
    precis_status st = pr_exec_node(gr, &gr->nodes[0], rinp, rout, 1, &e);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: ref failed: %s\n", label, e.msg);
        goto done;
    }
    for (int j = 0; j < p->n_out; j++) {
        pr_dtype od = out_dt != PRECIS_UNDEFINED ? out_dt : rout[j].dtype;
        if (j == 0 && inplace >= 0) {
            /* the input's memory as the output (same element size) */
            iout[0] = iin[inplace];
            iout[0].dtype = od;
            CHECK(iout[0].nbytes == (size_t)rout[0].numel * pr_dtype_size(od));
        } else {
            pr_buf_alloc(&iout[j], od, rout[j].rank, rout[j].dims, "y", &e);
        }
        ioutp[j] = &iout[j];
        if (od != rout[j].dtype && pr_dtype_info(od)->is_float) {
            /* round ref through the impl's output dtype */
            float *f = malloc((size_t)(rout[j].numel ? rout[j].numel : 1) * sizeof(float));
            pr_ref_to_f32(rout[j].data, rout[j].dtype, rout[j].numel, f);
            pr_buf r2;
            pr_buf_alloc(&r2, od, rout[j].rank, rout[j].dims, "r", &e);
            pr_ref_from_f32(f, rout[j].numel, od, r2.data);
            free(f);
            pr_buf_free(&rout[j]);
            rout[j] = r2;
        }
    }
    pr_cpu_exec x = {qc_threads, NULL, NULL, 0, NULL, 0};
    if (!strncmp(p->impl->name, "dnnl", 4)) x.dnnl_stream = pr_dnnl_stream_create(&e);
    pr_kernel k = {p->gi, &p->gi->nodes[0], p->n_in, iinp, p->n_out, ioutp, &e, x.num_threads};
    st = p->impl->run(p->state, &k, &x);
    pr_dnnl_stream_destroy(x.dnnl_stream);
    free(x.scratch);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: run failed: %s\n", label, e.msg);
    } else {
        for (int j = 0; j < p->n_out; j++)
            qc_compare(&rout[j], &iout[j], p->out_nhwc, tol_units, exact, label);
    }
done:
    for (int i = 0; i < CC_MAX_IO; i++) {
        if (i < p->n_in && in[i].name) {
            pr_buf_free(&rin[i]);
            pr_buf_free(&iin[i]);
        }
        if (i < p->n_out) {
            pr_buf_free(&rout[i]);
            if (!(i == 0 && inplace >= 0)) pr_buf_free(&iout[i]);
        }
    }
    pr_graph_destroy(gr);
}

/* One case: prepare on the concrete dims, run, compare. */
static inline void qc_run(const tnode *t, int n_in, const qc_in *in, int n_out, bool out_nhwc,
                          const pr_cpu_impl *impl, int threads, int tol_units, bool exact,
                          const char *label) {
    qc_prep p;
    qc_threads = threads;
    if (qc_prepare(&p, t, n_in, in, n_out, out_nhwc, impl, threads, label))
        qc_exec(&p, in, -1, PRECIS_UNDEFINED, tol_units, exact, label);
    qc_release(&p);
}

/* Whether impl takes the node (graph from in, layouts as given). */
static inline bool qc_supports(const tnode *t, int n_in, const qc_in *in, bool out_nhwc,
                               const pr_cpu_impl *impl) {
    cc_input cc[CC_MAX_IO];
    pr_dtype dt[CC_MAX_IO];
    float *fd[CC_MAX_IO];
    to_cc(in, n_in, cc, dt, fd, true);
    bool onh[1] = {out_nhwc};
    pr_graph *g = cc_graph(t, n_in, cc, dt, fd, 1, onh, true);
    bool ok = g && impl->supports(g, &g->nodes[0]);
    pr_graph_destroy(g);
    return ok;
}


/* ------------------------------------------------------------ misc */

static inline const char *dn(pr_dtype d) { return d == PRECIS_UNDEFINED ? "-" : pr_dtype_name(d); }

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median ms of `reps` runs of a prepared impl (after warm-up). */
static inline double time_runs(const pr_cpu_impl *impl, void *state, const pr_graph *g, int n_in,
                               const pr_buf *const *in, pr_buf *out, int threads, int reps) {
    pr_err e = {0};
    pr_cpu_exec x = {threads, pr_dnnl_stream_create(&e), NULL, 0, NULL, 0};
    pr_buf *outs[1] = {out};
    pr_kernel k = {g, &g->nodes[0], n_in, in, 1, outs, &e, threads};
    double t[64];
    if (reps > 64) reps = 64;
    for (int i = 0; i < 5; i++) CHECK(impl->run(state, &k, &x) == PRECIS_OK);
    for (int i = 0; i < reps; i++) {
        double t0 = now_s();
        impl->run(state, &k, &x);
        t[i] = now_s() - t0;
    }
    pr_dnnl_stream_destroy(x.dnnl_stream);
    free(x.scratch);
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    return 1e3 * t[reps / 2];
}

/* The test binary again with PRECIS_CPU_ISA=scalar and --own-kernels (our
 * kernels' portable paths; the oneDNN impls do not depend on the cap), after
 * a run without a cap; rc: this run's. Prints "<name>: ok (both ISA paths)"
 * or FAILED; the exit status for main. */
static inline int q8_also_scalar(char **argv, int rc, const char *name) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("PRECIS_CPU_ISA", "scalar", 1);
        static char own[] = "--own-kernels";
        char *args[3] = {argv[0], own, NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the PRECIS_CPU_ISA=scalar run failed\n");
        rc = 1;
    }
    printf("%s: %s\n", name, rc ? "FAILED" : "ok (both ISA paths)");
    return rc;
}

#endif
