/* Unary elementwise kernels, Identity and float Cast (kernels.h).
 *
 * One C expression per op in two flavours (s_op: scalar float, v_op: __m512),
 * instantiated per op x dtype by macros into row functions
 * fn(x, y, n, param); the driver splits the flat element range over OpenMP
 * threads. Layout does not matter: input and output are read and written in
 * storage order (supports() demands equal layouts). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

enum {
    U_RELU,
    U_LEAKY,
    U_CLIP,
    U_SIGMOID,
    U_HSIGMOID,
    U_HSWISH,
    U_TANH,
    U_ERF,
    U_EXP,
    U_LOG,
    U_SQRT,
    U_RECIP,
    U_NEG,
    U_ABS,
    U_GELU,
    U_GELU_TANH,
    U_SOFTPLUS,
    U_MISH,
    U_COUNT,
    U_COPY = U_COUNT, /* Identity */
    U_CAST
};

typedef struct uparam {
    float alpha, beta; /* LeakyRelu alpha; HardSigmoid alpha, beta; Clip lo, hi */
} uparam;

typedef void (*un_fn)(const void *x, void *y, int64_t n, const uparam *p);

/* ------------------------------------------------------------------ scalar */

PR_INLINE float s_op(int op, float x, const uparam *p) {
    switch (op) {
    case U_RELU: return x < 0 ? 0.0f : x;
    case U_LEAKY: return x < 0 ? p->alpha * x : x;
    case U_CLIP: x = x < p->alpha ? p->alpha : x; return x > p->beta ? p->beta : x;
    case U_SIGMOID: return ps_sigmoid(x);
    case U_HSIGMOID: {
        float v = p->alpha * x + p->beta;
        return v < 0 ? 0.0f : v > 1 ? 1.0f : v;
    }
    case U_HSWISH: {
        float v = x * (1.0f / 6.0f) + 0.5f;
        return x * (v < 0 ? 0.0f : v > 1 ? 1.0f : v);
    }
    case U_TANH: return tanhf(x);
    case U_ERF: return erff(x);
    case U_EXP: return expf(x);
    case U_LOG: return logf(x);
    case U_SQRT: return sqrtf(x);
    case U_RECIP: return 1.0f / x;
    case U_NEG: return -x;
    case U_ABS: return fabsf(x);
    case U_GELU: return ps_gelu(x);
    case U_GELU_TANH: return ps_gelu_tanh(x);
    case U_SOFTPLUS: return ps_softplus(x);
    case U_MISH: return ps_mish(x);
    default: return x;
    }
}

PR_INLINE void s_unary_t(int op, pr_dtype dt, const void *x, void *y, int64_t n, const uparam *p) {
    for (int64_t i = 0; i < n; i++) ps_store(y, i, dt, s_op(op, ps_load(x, i, dt), p));
}

PR_INLINE void s_cast_t(pr_dtype sd, pr_dtype dd, const void *x, void *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) ps_store(y, i, dd, ps_load(x, i, sd));
}

/* ------------------------------------------------------------------ AVX-512 */
#ifdef PR_CPU_X86
PR_VINLINE __m512 v_op(int op, __m512 x, const uparam *p) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    switch (op) {
    case U_RELU: return _mm512_max_ps(zero, x); /* NaN and -0 pass as in ref */
    case U_LEAKY: {
        __mmask16 m = _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ);
        return _mm512_mask_mul_ps(x, m, x, _mm512_set1_ps(p->alpha));
    }
    case U_CLIP:
        return _mm512_min_ps(_mm512_set1_ps(p->beta), _mm512_max_ps(_mm512_set1_ps(p->alpha), x));
    case U_SIGMOID: return pv_sigmoid(x);
    case U_HSIGMOID: {
        __m512 v = _mm512_fmadd_ps(x, _mm512_set1_ps(p->alpha), _mm512_set1_ps(p->beta));
        return _mm512_min_ps(one, _mm512_max_ps(zero, v));
    }
    case U_HSWISH: {
        __m512 v = _mm512_fmadd_ps(x, _mm512_set1_ps(1.0f / 6.0f), _mm512_set1_ps(0.5f));
        return _mm512_mul_ps(x, _mm512_min_ps(one, _mm512_max_ps(zero, v)));
    }
    case U_TANH: return pv_tanh(x);
    case U_ERF: return pv_erf(x);
    case U_EXP: return pv_exp(x);
    case U_LOG: return pv_log(x);
    case U_SQRT: return _mm512_sqrt_ps(x);
    case U_RECIP: return _mm512_div_ps(one, x);
    case U_NEG: return pv_neg(x);
    case U_ABS: return _mm512_abs_ps(x);
    case U_GELU: return pv_gelu(x);
    case U_GELU_TANH: return pv_gelu_tanh(x);
    case U_SOFTPLUS: return pv_softplus(x);
    case U_MISH: return pv_mish(x);
    default: return x;
    }
}

PR_VINLINE void v_unary_t(int op, pr_dtype dt, const void *x, void *y, int64_t n, const uparam *p) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 a = pv_load(x, i, dt), b = pv_load(x, i + 16, dt);
        pv_store(y, i, dt, v_op(op, a, p));
        pv_store(y, i + 16, dt, v_op(op, b, p));
    }
    for (; i + 16 <= n; i += 16) pv_store(y, i, dt, v_op(op, pv_load(x, i, dt), p));
    if (i < n) {
        __mmask16 m = pv_tail(n - i);
        pv_store_m(y, i, dt, v_op(op, pv_load_m(x, i, dt, m), p), m);
    }
}

PR_VINLINE void v_cast_t(pr_dtype sd, pr_dtype dd, const void *x, void *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) pv_store(y, i, dd, pv_load(x, i, sd));
    if (i < n) {
        __mmask16 m = pv_tail(n - i);
        pv_store_m(y, i, dd, pv_load_m(x, i, sd, m), m);
    }
}
#endif

/* ---------------------------------------------------------- instantiation */

#define DT_F32 PRECIS_FLOAT32
#define DT_BF16 PRECIS_BFLOAT16
#define DT_F16 PRECIS_FLOAT16

/* clang-format off */
#define UOPS(X)                                                                                    \
    X(U_RELU) X(U_LEAKY) X(U_CLIP) X(U_SIGMOID) X(U_HSIGMOID) X(U_HSWISH) X(U_TANH) X(U_ERF)     \
    X(U_EXP) X(U_LOG) X(U_SQRT) X(U_RECIP) X(U_NEG) X(U_ABS) X(U_GELU) X(U_GELU_TANH)            \
    X(U_SOFTPLUS) X(U_MISH)
/* clang-format on */

#define DEF_S1(op, dt)                                                                             \
    static void s_##op##_##dt(const void *x, void *y, int64_t n, const uparam *p) {                \
        s_unary_t(op, DT_##dt, x, y, n, p);                                                        \
    }
#define DEF_S(op) DEF_S1(op, F32) DEF_S1(op, BF16) DEF_S1(op, F16)
UOPS(DEF_S)
#define ENT_S(op) [op] = {s_##op##_F32, s_##op##_BF16, s_##op##_F16},
static const un_fn s_tab[U_COUNT][3] = {UOPS(ENT_S)};

#define DEF_SC(a, b)                                                                               \
    static void sc_##a##_##b(const void *x, void *y, int64_t n, const uparam *p) {                 \
        (void)p;                                                                                   \
        s_cast_t(DT_##a, DT_##b, x, y, n);                                                         \
    }
DEF_SC(F32, BF16)
DEF_SC(F32, F16)
DEF_SC(BF16, F32)
DEF_SC(BF16, F16)
DEF_SC(F16, F32)
DEF_SC(F16, BF16)
static const un_fn s_cast_tab[3][3] = {{NULL, sc_F32_BF16, sc_F32_F16},
                                       {sc_BF16_F32, NULL, sc_BF16_F16},
                                       {sc_F16_F32, sc_F16_BF16, NULL}};

#ifdef PR_CPU_X86
#define DEF_V1(op, dt)                                                                             \
    static PR_AVX512 void v_##op##_##dt(const void *x, void *y, int64_t n, const uparam *p) {      \
        v_unary_t(op, DT_##dt, x, y, n, p);                                                        \
    }
#define DEF_V(op) DEF_V1(op, F32) DEF_V1(op, BF16) DEF_V1(op, F16)
UOPS(DEF_V)
#define ENT_V(op) [op] = {v_##op##_F32, v_##op##_BF16, v_##op##_F16},
static const un_fn v_tab[U_COUNT][3] = {UOPS(ENT_V)};

#define DEF_VC(a, b)                                                                               \
    static PR_AVX512 void vc_##a##_##b(const void *x, void *y, int64_t n, const uparam *p) {       \
        (void)p;                                                                                   \
        v_cast_t(DT_##a, DT_##b, x, y, n);                                                         \
    }
DEF_VC(F32, BF16)
DEF_VC(F32, F16)
DEF_VC(BF16, F32)
DEF_VC(BF16, F16)
DEF_VC(F16, F32)
DEF_VC(F16, BF16)
static const un_fn v_cast_tab[3][3] = {{NULL, vc_F32_BF16, vc_F32_F16},
                                       {vc_BF16_F32, NULL, vc_BF16_F16},
                                       {vc_F16_F32, vc_F16_BF16, NULL}};
#endif

static int dt_index(pr_dtype dt) {
    return dt == PRECIS_FLOAT32 ? 0 : dt == PRECIS_BFLOAT16 ? 1 : dt == PRECIS_FLOAT16 ? 2 : -1;
}

/* ------------------------------------------------------------------ driver */

/* Elements per OpenMP work chunk (a multiple of 16: chunks start 64-byte
 * aligned for every element size when the buffers are). */
#define CHUNK 16384

static void copy_fn(const void *x, void *y, int64_t n, const uparam *p) {
    (void)p;
    memcpy(y, x, (size_t)n);
}

/* fn over n elements (x: xes bytes each, y: yes bytes each) on up to nt
 * threads. copy_fn counts bytes (xes = yes = 1). */
static void run_flat(un_fn fn, const void *x, size_t xes, void *y, size_t yes, int64_t n,
                     const uparam *p, int nt) {
    bool copy = fn == copy_fn; /* counts bytes */
    int64_t chunk = copy ? 4 * CHUNK : CHUNK;
    int64_t nch = (n + chunk - 1) / chunk;
    if (nt > nch) nt = (int)nch;
    if (nt <= 1 || n < (copy ? 32 * PR_CPU_PAR_MIN : PR_CPU_PAR_MIN)) {
        if (n > 0) fn(x, y, n, p);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (int64_t c = 0; c < nch; c++) {
        int64_t s = c * chunk, len = n - s < chunk ? n - s : chunk;
        fn((const char *)x + (size_t)s * xes, (char *)y + (size_t)s * yes, len, p);
    }
}

/* ------------------------------------------------------------------ act */

#ifdef PR_CPU_X86
static PR_AVX512 void act_512(float *x, int64_t n, const pr_act *a) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, pv_act(a, _mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 m = pv_tail(n - i);
        _mm512_mask_storeu_ps(x + i, m, pv_act(a, _mm512_maskz_loadu_ps(m, x + i)));
    }
}
#endif

void pr_cpu_act_f32(float *x, int64_t n, const pr_act *a, int threads) {
    if (a->kind == PR_ACT_NONE || n <= 0) return;
    bool v512 = false;
#ifdef PR_CPU_X86
    v512 = pr_cpu_use_avx512();
#endif
    int64_t nch = (n + CHUNK - 1) / CHUNK;
    int nt = threads > 1 && n >= PR_CPU_PAR_MIN ? (nch < threads ? (int)nch : threads) : 1;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t c = 0; c < nch; c++) {
        int64_t s = c * CHUNK, len = n - s < CHUNK ? n - s : CHUNK;
#ifdef PR_CPU_X86
        if (v512) {
            act_512(x + s, len, a);
            continue;
        }
#endif
        for (int64_t i = s; i < s + len; i++) x[i] = pr_act_apply(a, x[i]);
    }
}

/* ------------------------------------------------------------------ impl */

typedef struct estate {
    int op;
    bool avx512;
    bool clip_inputs; /* Clip-11+: bounds from inputs 1 and 2 at run time */
    uparam p;
} estate;

static int op_of(const pr_node *n) {
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return -1;
    switch (n->op) {
    case PR_OP_Relu: return U_RELU;
    case PR_OP_LeakyRelu: return U_LEAKY;
    case PR_OP_Clip: return U_CLIP;
    case PR_OP_Sigmoid: return U_SIGMOID;
    case PR_OP_HardSigmoid: return U_HSIGMOID;
    case PR_OP_HardSwish: return U_HSWISH;
    case PR_OP_Tanh: return U_TANH;
    case PR_OP_Erf: return U_ERF;
    case PR_OP_Exp: return U_EXP;
    case PR_OP_Log: return U_LOG;
    case PR_OP_Sqrt: return U_SQRT;
    case PR_OP_Reciprocal: return U_RECIP;
    case PR_OP_Neg: return U_NEG;
    case PR_OP_Abs: return U_ABS;
    case PR_OP_Gelu: {
        const char *a = pr_attr_str(n, "approximate", "none");
        return !strcmp(a, "none") ? U_GELU : !strcmp(a, "tanh") ? U_GELU_TANH : -1;
    }
    case PR_OP_Softplus: return U_SOFTPLUS;
    case PR_OP_Mish: return U_MISH;
    case PR_OP_Identity: return U_COPY;
    case PR_OP_Cast: return U_CAST;
    default: return -1;
    }
}

/* NHWC only means something at rank 4; an output's rank may not be known */
static int layout_of(const pr_tensor *t) {
    return t && (t->rank == 4 || t->rank < 0) ? t->layout : PR_LAYOUT_PLAIN;
}

static bool e_supports(const pr_graph *g, const pr_node *n) {
    int op = op_of(n);
    const pr_tensor *x = pr_node_tin(g, n, 0), *y = pr_node_tout(g, n, 0);
    if (op < 0 || !x || !y || n->n_outputs != 1) return false;
    if (layout_of(x) != layout_of(y)) return false;
    if (op == U_COPY) return pr_dtype_size(x->dtype) > 0 && n->n_inputs == 1;
    if (!pr_cpu_float_dt(x->dtype)) return false;
    if (op == U_CAST) {
        const pr_attr *to = pr_attr_find(n, "to");
        return to && to->type == PR_ATTR_INT && pr_cpu_float_dt((pr_dtype)to->i);
    }
    if (op == U_CLIP && n->opset >= 11) {
        for (int i = 1; i <= 2; i++) {
            const pr_tensor *b = pr_node_tin(g, n, i);
            if (!b) continue;
            if (!pr_cpu_float_dt(b->dtype)) return false;
            int64_t ne = b->rank >= 0 ? pr_numel(b->rank, b->dims) : -1;
            if (ne >= 0 && ne != 1) return false;
        }
        return n->n_inputs <= 3;
    }
    return n->n_inputs == 1;
}

static bool e_nhwc_ok(const pr_graph *g, const pr_node *n) { return e_supports(g, n); }

static int e_inplace(const pr_graph *g, const pr_node *n) {
    int op = op_of(n);
    if (op == U_CAST) {
        const pr_tensor *x = pr_node_tin(g, n, 0);
        return x && pr_attr_int(n, "to", 0) == (int64_t)x->dtype ? 0 : -1;
    }
    return op < 0 ? -1 : 0;
}

static precis_status e_prepare(const pr_graph *g, const pr_node *n, const pr_cpu_cfg *cfg,
                               void **state, pr_err *e) {
    (void)g, (void)cfg;
    estate *s = calloc(1, sizeof *s);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    s->op = op_of(n);
#ifdef PR_CPU_X86
    s->avx512 = pr_cpu_use_avx512();
#endif
    switch (s->op) {
    case U_LEAKY: s->p.alpha = pr_attr_float(n, "alpha", 0.01f); break;
    case U_HSIGMOID:
        s->p.alpha = pr_attr_float(n, "alpha", 0.2f);
        s->p.beta = pr_attr_float(n, "beta", 0.5f);
        break;
    case U_CLIP:
        s->p.alpha = -INFINITY;
        s->p.beta = INFINITY;
        if (n->opset >= 11) {
            s->clip_inputs = true;
        } else {
            s->p.alpha = pr_attr_float(n, "min", -INFINITY);
            s->p.beta = pr_attr_float(n, "max", INFINITY);
        }
        break;
    default: break;
    }
    *state = s;
    return PRECIS_OK;
}

static precis_status e_run(void *state, pr_kernel *k, pr_cpu_exec *xc) {
    const estate *s = state;
    const pr_buf *x = pr_kin(k, 0);
    pr_buf *y = k->n_out > 0 ? k->out[0] : NULL;
    if (!x || !y) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input or output is missing");
    if (x->numel != y->numel)
        return pr_kernelf(k, PRECIS_ERR_INTERNAL, "output has %lld elements, input %lld",
                          (long long)y->numel, (long long)x->numel);
    int nt = xc && xc->num_threads > 0 ? xc->num_threads : 1;
    int op = s->op;
    if (op == U_COPY || (op == U_CAST && x->dtype == y->dtype)) {
        if (x->dtype != y->dtype && op == U_COPY)
            return pr_kernelf(k, PRECIS_ERR_INTERNAL, "Identity changes dtype");
        if (y->data != x->data)
            run_flat(copy_fn, x->data, 1, y->data, 1, (int64_t)x->nbytes, NULL, nt);
        return PRECIS_OK;
    }
    int ix = dt_index(x->dtype), iy = dt_index(y->dtype);
    if (ix < 0 || iy < 0 || (op != U_CAST && ix != iy))
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtypes %s -> %s are not supported",
                          pr_dtype_name(x->dtype), pr_dtype_name(y->dtype));
    uparam p = s->p;
    if (s->clip_inputs) {
        for (int i = 1; i <= 2; i++) {
            const pr_buf *b = pr_kin(k, i);
            if (!b) continue;
            if (b->numel != 1 || !pr_cpu_float_dt(b->dtype))
                return pr_kernelf(
                    k, PRECIS_ERR_INVALID_ARG, "%s must be a float scalar, got %lld elements of %s",
                    i == 1 ? "min" : "max", (long long)b->numel, pr_dtype_name(b->dtype));
            float v = ps_load(b->data, 0, b->dtype);
            if (i == 1)
                p.alpha = v;
            else
                p.beta = v;
        }
    }
    un_fn fn;
#ifdef PR_CPU_X86
    if (s->avx512)
        fn = op == U_CAST ? v_cast_tab[ix][iy] : v_tab[op][ix];
    else
#endif
        fn = op == U_CAST ? s_cast_tab[ix][iy] : s_tab[op][ix];
    run_flat(fn, x->data, pr_dtype_size(x->dtype), y->data, pr_dtype_size(y->dtype), x->numel, &p,
             nt);
    return PRECIS_OK;
}

static const char *e_describe(void *state) {
    return ((const estate *)state)->avx512 ? "eltwise.avx512" : "eltwise.scalar";
}

static void e_destroy(void *state) { free(state); }

const pr_cpu_impl pr_cpu_impl_eltwise = {
    .name = "eltwise",
    .supports = e_supports,
    .nhwc_ok = e_nhwc_ok,
    .inplace_input = e_inplace,
    .prepare = e_prepare,
    .run = e_run,
    .describe = e_describe,
    .destroy = e_destroy,
};
