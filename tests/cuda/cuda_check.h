/* Checking one CUDA-backend impl against the ref backend, the way
 * tests/unit/cpu_check.h checks the CPU impls (and with its cases: cc_input,
 * cc_graph, cc_tol, cc_rand, cc_round):
 *
 *   cu_run(&t, 2, in, 1, PRECIS_FLOAT16, &pr_cuda_impl_conv, "conv fp16");
 *
 * Inputs are random (rounded to the tested dtype so ref and the impl see the
 * same values); ref runs the node in float32 on the host; the impl runs on
 * the GPU with activations in act_dt, initializers uploaded as float32 (or
 * packed by the impl), and an output poisoned with NaN before the launch so
 * that an element never written fails. Every mismatch is a failed CHECK
 * naming the case, output and element. */
#ifndef PR_TESTS_CUDA_CUDA_CHECK_H
#define PR_TESTS_CUDA_CUDA_CHECK_H

#include <cuda_runtime.h>

#include "../unit/cpu_check.h"
#include "backends/cuda/cuda.h"

static pr_cuda_dev *cu_dev;
static pr_cuda_exec cu_x;
/* Biased uint8 storage (backends/cuda/cuda_qbias.h) in the device copies:
 * bit i set, input i is uploaded as its bytes XOR 0x80; bit 16 + j, output
 * j is read back so. With PRECIS_CUDA_U8_BIAS=all (cuda_qbias.c). */
static unsigned cu_bias_io;

static inline void cu_flip_bytes(void *p, size_t n) {
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) b[i] ^= 0x80;
}

/* 0: ready; 77 (ctest skip): no usable GPU. */
static inline int cu_setup(void) {
    pr_err e = {0};
    if (pr_cuda_dev_open(&cu_dev, &e)) {
        printf("SKIP: %s\n", e.msg);
        return 77;
    }
    if (pr_cuda_exec_init(&cu_x, &e)) {
        printf("SKIP: %s\n", e.msg);
        return 77;
    }
    return 0;
}

static inline void cu_teardown(void) {
    pr_cuda_exec_fini(&cu_x);
    pr_cuda_dev_close(cu_dev);
}

/* N,C,H,W -> N,H,W,C of elements of esz bytes (raw, non-float inputs). */
static inline void cu_bytes_to_nhwc(const void *src, void *dst, const int64_t *dm, size_t esz) {
    const char *s = src;
    char *d = dst;
    int64_t N = dm[0], C = dm[1], HW = dm[2] * dm[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++)
                memcpy(d + (size_t)((n * HW + p) * C + c) * esz,
                       s + (size_t)((n * C + c) * HW + p) * esz, esz);
}

/* out_nhwc (may be NULL): outputs stored N,H,W,C; inputs say so with .nhwc. */
static inline float cu_run_lay(const tnode *t, int n_in, const cc_input *ins, int n_out,
                               const bool *out_nhwc, pr_dtype act_dt, const pr_cuda_impl *impl,
                               cc_tolerance tol, const char *label) {
    float worst = 0;
    float *plain[CC_MAX_IO] = {0};
    pr_dtype ref_dt[CC_MAX_IO], imp_dt[CC_MAX_IO];
    cc_inputs_prepare(n_in, ins, act_dt, ref_dt, imp_dt, plain);
    pr_graph *gr = cc_graph(t, n_in, ins, ref_dt, plain, n_out, NULL, false);
    pr_graph *gi = cc_graph(t, n_in, ins, imp_dt, plain, n_out, out_nhwc, true);
    pr_err e = {0};
    pr_buf rin[CC_MAX_IO], iin[CC_MAX_IO], rout[CC_MAX_IO], iout[CC_MAX_IO];
    const pr_buf *rinp[CC_MAX_IO], *iinp[CC_MAX_IO];
    pr_buf *ioutp[CC_MAX_IO];
    memset(rin, 0, sizeof rin);
    memset(iin, 0, sizeof iin);
    memset(rout, 0, sizeof rout);
    memset(iout, 0, sizeof iout);
    void *state = NULL;
    precis_status st;
    for (int i = 0; i < n_in; i++) {
        rinp[i] = iinp[i] = NULL;
        if (!ins[i].name) continue;
        pr_buf_alloc(&rin[i], ref_dt[i], ins[i].rank, ins[i].dims, ins[i].name, &e);
        if (plain[i]) memcpy(rin[i].data, plain[i], rin[i].nbytes);
        else memcpy(rin[i].data, ins[i].raw, rin[i].nbytes);
        /* the device copy: as the engine would hold it */
        iin[i] = rin[i];
        iin[i].dtype = imp_dt[i];
        iin[i].nbytes = (size_t)rin[i].numel * pr_dtype_size(imp_dt[i]);
        iin[i].data = NULL;
        bool packed = impl->packs && impl->packs(gi, &gi->nodes[0], i);
        if (!packed) {
            void *h = malloc(iin[i].nbytes ? iin[i].nbytes : 1);
            float *tmp = plain[i] ? malloc((size_t)(rin[i].numel ? rin[i].numel : 1) * 4) : NULL;
            if (tmp && ins[i].nhwc && !ins[i].init) cc_nchw_to_nhwc(plain[i], tmp, ins[i].dims);
            else if (tmp) memcpy(tmp, plain[i], rin[i].nbytes);
            if (plain[i]) pr_ref_from_f32(tmp, rin[i].numel, imp_dt[i], h);
            else if (ins[i].nhwc && !ins[i].init) cu_bytes_to_nhwc(ins[i].raw, h, ins[i].dims,
                                                                   pr_dtype_size(imp_dt[i]));
            else memcpy(h, ins[i].raw, iin[i].nbytes);
            if (cu_bias_io >> i & 1) cu_flip_bytes(h, iin[i].nbytes);
            free(tmp);
            cudaMalloc(&iin[i].data, iin[i].nbytes ? iin[i].nbytes : 1);
            cudaMemcpy(iin[i].data, h, iin[i].nbytes, cudaMemcpyHostToDevice);
            free(h);
        }
        rinp[i] = &rin[i];
        iinp[i] = &iin[i];
    }
    st = pr_exec_node(gr, &gr->nodes[0], rinp, rout, 1, &e);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: ref failed: %s\n", label, e.msg);
        worst = INFINITY;
        goto done;
    }
    for (int j = 0; j < n_out; j++) { /* the plan's output: act_dt for float results */
        pr_tensor *y = &gi->tensors[gi->nodes[0].outputs[j]];
        y->dtype = rout[j].dtype == PRECIS_FLOAT32 ? act_dt : rout[j].dtype;
        y->rank = rout[j].rank;
        memcpy(y->dims, rout[j].dims, sizeof y->dims);
    }
    bool sup = impl->supports(gi, &gi->nodes[0]);
    if (sup && out_nhwc && out_nhwc[0]) sup = impl->nhwc_ok && impl->nhwc_ok(gi, &gi->nodes[0]);
    CHECK(sup);
    if (!sup) {
        fprintf(stderr, "%s: %s does not support the case\n", label, impl->name);
        worst = INFINITY;
        goto done;
    }
    pr_cuda_cfg cfg = {pr_cuda_dev_exec(cu_dev), NULL};
    st = impl->prepare(gi, &gi->nodes[0], &cfg, &state, &e);
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: prepare failed: %s\n", label, e.msg);
        worst = INFINITY;
        goto done;
    }
    for (int j = 0; j < n_out; j++) {
        pr_dtype od = rout[j].dtype == PRECIS_FLOAT32 ? act_dt : rout[j].dtype;
        iout[j] = rout[j];
        iout[j].dtype = od;
        iout[j].nbytes = (size_t)rout[j].numel * pr_dtype_size(od);
        iout[j].data = NULL;
        cudaMalloc(&iout[j].data, iout[j].nbytes ? iout[j].nbytes : 1);
        cudaMemset(iout[j].data, 0xff, iout[j].nbytes); /* NaN poison */
        ioutp[j] = &iout[j];
    }
    pr_kernel k = {gi, &gi->nodes[0], n_in, iinp, n_out, ioutp, &e, 1};
    /* twice: the second run uses what the first cached (algorithms, scratch) */
    for (int rep = 0; rep < 2 && !st; rep++) {
        st = impl->run(state, &k, &cu_x);
        cudaError_t r = cudaStreamSynchronize((cudaStream_t)cu_x.stream);
        if (!st && r != cudaSuccess) {
            snprintf(e.msg, sizeof e.msg, "CUDA error after the launch: %s", cudaGetErrorString(r));
            st = PRECIS_ERR_INTERNAL;
        }
    }
    CHECK(st == PRECIS_OK);
    if (st) {
        fprintf(stderr, "%s: run failed: %s\n", label, e.msg);
        worst = INFINITY;
        goto done;
    }
    printf("  %-44s %s\n", label, impl->describe ? impl->describe(state) : impl->name);
    for (int j = 0; j < n_out; j++) {
        int64_t ne = rout[j].numel;
        float *r = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        float *v = malloc((size_t)(ne ? ne : 1) * sizeof(float));
        void *h = malloc(iout[j].nbytes ? iout[j].nbytes : 1);
        cudaMemcpy(h, iout[j].data, iout[j].nbytes, cudaMemcpyDeviceToHost);
        if (cu_bias_io >> (16 + j) & 1) cu_flip_bytes(h, iout[j].nbytes);
        pr_ref_to_f32(rout[j].data, rout[j].dtype, ne, r);
        pr_ref_to_f32(h, iout[j].dtype, ne, v);
        if (out_nhwc && out_nhwc[j]) {
            float *v2 = malloc((size_t)(ne ? ne : 1) * sizeof(float));
            cc_nhwc_to_nchw(v, v2, rout[j].dims);
            free(v);
            v = v2;
        }
        int bad = 0;
        for (int64_t q = 0; q < ne; q++) {
            float d = fabsf(v[q] - r[q]);
            if (!(d <= tol.abs + tol.rel * fabsf(r[q])) && v[q] != r[q]) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: output %d element %lld: cuda %g, ref %g\n", label, j,
                            (long long)q, v[q], r[q]);
                worst = INFINITY;
            } else if (d > worst) {
                worst = d;
            }
        }
        CHECK(bad == 0);
        free(r);
        free(v);
        free(h);
    }
done:
    if (state && impl->destroy) impl->destroy(state);
    for (int i = 0; i < CC_MAX_IO; i++) {
        if (i < n_in && ins[i].name) {
            pr_buf_free(&rin[i]);
            if (iin[i].data) cudaFree(iin[i].data);
        }
        if (i < n_out) {
            pr_buf_free(&rout[i]);
            if (iout[i].data) cudaFree(iout[i].data);
        }
        free(plain[i]);
    }
    pr_graph_destroy(gr);
    pr_graph_destroy(gi);
    return worst;
}

static inline float cu_run_tol(const tnode *t, int n_in, const cc_input *ins, int n_out,
                               pr_dtype act_dt, const pr_cuda_impl *impl, cc_tolerance tol,
                               const char *label) {
    return cu_run_lay(t, n_in, ins, n_out, NULL, act_dt, impl, tol, label);
}

static inline float cu_run(const tnode *t, int n_in, const cc_input *ins, int n_out,
                           pr_dtype act_dt, const pr_cuda_impl *impl, const char *label) {
    return cu_run_tol(t, n_in, ins, n_out, act_dt, impl, cc_tol(act_dt), label);
}

/* A node of precis's fused domain (QConv, QMatMul, QBinary, ...). */
static inline void cu_fused_node(tnode *t, pr_op op, const char *name) {
    n_init(t, op, name, 1);
    t->node.domain = PR_FUSED_DOMAIN;
}

static inline const char *cu_dtn(pr_dtype d) {
    return d == PRECIS_FLOAT16 ? "fp16" : d == PRECIS_BFLOAT16 ? "bf16" : "fp32";
}

/* Convolutions: cuDNN's fused path rounds twice in 16-bit types (our kernels
 * once, within the same bound). */
static inline cc_tolerance cu_conv_tol(pr_dtype d) {
    return d == PRECIS_FLOAT16    ? (cc_tolerance){4e-3f, 8e-3f}
           : d == PRECIS_BFLOAT16 ? (cc_tolerance){3.2e-2f, 6e-2f}
                                  : cc_tol(d);
}

#endif
