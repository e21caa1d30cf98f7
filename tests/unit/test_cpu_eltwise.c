/* The CPU backend's own elementwise and data-movement kernels
 * (src/backends/cpu/kernels.h) against ref, through cpu_check.h: every op x
 * float32/bfloat16/float16, vector tails (1, 15, 17, 1000003 elements), the
 * broadcast patterns, NHWC storage, 1 and 2 threads; the AVX-512 math
 * approximations against double-precision libm; in-place runs.
 *
 * The suite runs twice: with the detected ISA, then (re-executing itself
 * with PRECIS_CPU_ISA=scalar) on the portable fallbacks. `-v` (or
 * PRECIS_TEST_VERBOSE=1) adds timings and the bandwidth of Add and Sigmoid on
 * 4M floats against a plain C loop; `--bench` prints only the latter. */
#define _POSIX_C_SOURCE 200809L
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_check.h"

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec.h"

static bool verbose;
static const char *isa;
/* the long vector-tail case: 1000003 elements on the vector path, 100003 on
 * the scalar fallback (no vector tails there; keeps the suite quick) */
static int64_t BIG = 1000003;
#ifdef __SANITIZE_ADDRESS__
#define PR_TEST_SANITIZED 1 /* slow: the scalar-run sizes on both paths */
#endif
static const pr_dtype DTS[3] = {PRECIS_FLOAT32, PRECIS_BFLOAT16, PRECIS_FLOAT16};

#define LBL(...) (snprintf(label, sizeof label, __VA_ARGS__), label)
static char label[256];

static const char *dn(pr_dtype dt) { return pr_dtype_name(dt); }

/* ------------------------------------------------------------------ unary */

enum { A_NONE, A_LEAKY, A_CLIP6, A_HSIG, A_GELU_NONE, A_GELU_TANH };
typedef struct ucase {
    pr_op op;
    const char *name;
    int opset;
    float lo, hi;
    int attr;
} ucase;

static const ucase k_unary[] = {
    {PR_OP_Relu, "Relu", 14, -1, 1, A_NONE},
    {PR_OP_LeakyRelu, "LeakyRelu", 16, -2, 2, A_LEAKY},
    {PR_OP_Clip, "Clip", 6, -1, 1, A_CLIP6},
    {PR_OP_Sigmoid, "Sigmoid", 13, -12, 12, A_NONE},
    {PR_OP_HardSigmoid, "HardSigmoid", 6, -5, 5, A_HSIG},
    {PR_OP_HardSwish, "HardSwish", 14, -5, 5, A_NONE},
    {PR_OP_Tanh, "Tanh", 13, -6, 6, A_NONE},
    {PR_OP_Erf, "Erf", 13, -4, 4, A_NONE},
    {PR_OP_Exp, "Exp", 13, -10, 10, A_NONE},
    {PR_OP_Log, "Log", 13, 0.001f, 100, A_NONE},
    {PR_OP_Sqrt, "Sqrt", 13, 0, 100, A_NONE},
    {PR_OP_Reciprocal, "Reciprocal", 13, 0.1f, 4, A_NONE},
    {PR_OP_Neg, "Neg", 13, -1, 1, A_NONE},
    {PR_OP_Abs, "Abs", 13, -1, 1, A_NONE},
    {PR_OP_Gelu, "Gelu", 20, -8, 8, A_GELU_NONE},
    {PR_OP_Gelu, "Gelu", 20, -8, 8, A_GELU_TANH},
    {PR_OP_Softplus, "Softplus", 1, -20, 20, A_NONE},
    {PR_OP_Mish, "Mish", 18, -20, 20, A_NONE},
    {PR_OP_Identity, "Identity", 16, -1, 1, A_NONE},
};

static void unary_node(tnode *t, const ucase *c) {
    n_init(t, c->op, c->name, c->opset);
    switch (c->attr) {
    case A_LEAKY: n_float(t, "alpha", 0.1f); break;
    case A_CLIP6:
        n_float(t, "min", -0.5f);
        n_float(t, "max", 0.7f);
        break;
    case A_HSIG:
        n_float(t, "alpha", 0.3f);
        n_float(t, "beta", 0.4f);
        break;
    case A_GELU_NONE: n_str(t, "approximate", "none"); break;
    case A_GELU_TANH: n_str(t, "approximate", "tanh"); break;
    default: break;
    }
}

static void test_unary(void) {
    const int64_t lens[] = {1, 15, 17, 1000, BIG};
    const bool nhwc[1] = {true};
    for (size_t ci = 0; ci < sizeof k_unary / sizeof *k_unary; ci++) {
        const ucase *c = &k_unary[ci];
        tnode t;
        unary_node(&t, c);
        const char *what = c->attr == A_GELU_TANH ? "Gelu(tanh)" : c->name;
        for (int d = 0; d < 3; d++) {
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                cc_input in[] = {{"x", 1, {lens[li]}, .lo = c->lo, .hi = c->hi}};
                int th = lens[li] > 100000 ? 2 : 1;
                cc_run(
                    &t, 1, in, 1, NULL, DTS[d], &pr_cpu_impl_eltwise, th,
                    LBL("[%s] %s %s n=%lld t%d", isa, what, dn(DTS[d]), (long long)lens[li], th));
            }
            cc_input in4[] = {{"x", 4, {2, 5, 3, 7}, .nhwc = true, .lo = c->lo, .hi = c->hi}};
            cc_run(&t, 1, in4, 1, nhwc, DTS[d], &pr_cpu_impl_eltwise, 1,
                   LBL("[%s] %s %s nhwc", isa, what, dn(DTS[d])));
        }
    }
    /* a narrow range: tanh/erf/gelu near 0 where relative precision matters */
    static const pr_op small_ops[] = {PR_OP_Tanh, PR_OP_Erf, PR_OP_Sigmoid};
    static const char *small_names[] = {"Tanh", "Erf", "Sigmoid"};
    for (int i = 0; i < 3; i++) {
        tnode t;
        n_init(&t, small_ops[i], small_names[i], 13);
        cc_input in[] = {{"x", 1, {4099}, .lo = -0.01f, .hi = 0.01f}};
        cc_run_tol(&t, 1, in, 1, NULL, PRECIS_FLOAT32, &pr_cpu_impl_eltwise, 1,
                   (cc_tolerance){1e-12f, 2e-6f}, LBL("[%s] %s f32 near 0", isa, small_names[i]));
    }
}

/* NaN and infinities through the ops that must pass them as ref does. */
static void test_unary_special(void) {
    static const float v[] = {NAN,  -0.0f, 0.0f, 1.0f,  -1.0f,  0.5f, 3.0f,  -3.0f, NAN,
                              2.0f, -2.0f, NAN,  0.25f, -0.25f, 7.0f, -7.0f, NAN};
    static const pr_op ops[] = {PR_OP_Relu, PR_OP_Sigmoid,   PR_OP_Tanh,
                                PR_OP_Erf,  PR_OP_Exp,       PR_OP_Abs,
                                PR_OP_Neg,  PR_OP_HardSwish, PR_OP_Softplus};
    static const char *names[] = {"Relu", "Sigmoid", "Tanh",      "Erf",     "Exp",
                                  "Abs",  "Neg",     "HardSwish", "Softplus"};
    for (int i = 0; i < 9; i++) {
        tnode t;
        n_init(&t, ops[i], names[i], 14);
        for (int d = 0; d < 3; d++) {
            cc_input in[] = {{"x", 1, {17}, .data = v}};
            cc_run(&t, 1, in, 1, NULL, DTS[d], &pr_cpu_impl_eltwise, 1,
                   LBL("[%s] %s %s NaN", isa, names[i], dn(DTS[d])));
        }
    }
    /* Clip with NaN and Clip-13 bound variants */
    tnode t;
    n_init(&t, PR_OP_Clip, "Clip", 13);
    for (int d = 0; d < 3; d++) {
        cc_input both[] = {{"x", 1, {17}, .data = v},
                           {"min", 0, {0}, .init = true, .data = (float[]){-0.6f}},
                           {"max", 0, {0}, .init = true, .data = (float[]){0.3f}}};
        cc_run(&t, 3, both, 1, NULL, DTS[d], &pr_cpu_impl_eltwise, 1,
               LBL("[%s] Clip-13 const min,max %s", isa, dn(DTS[d])));
        cc_input rt[] = {{"x", 1, {1003}, .lo = -2, .hi = 2},
                         {"min", 0, {0}, .data = (float[]){-0.3f}}};
        cc_run(&t, 2, rt, 1, NULL, DTS[d], &pr_cpu_impl_eltwise, 1,
               LBL("[%s] Clip-13 runtime min %s", isa, dn(DTS[d])));
        cc_input hi[] = {{"x", 1, {33}, .lo = -2, .hi = 2},
                         {.name = NULL},
                         {"max", 1, {1}, .init = true, .data = (float[]){0.5f}}};
        cc_run(&t, 3, hi, 1, NULL, DTS[d], &pr_cpu_impl_eltwise, 1,
               LBL("[%s] Clip-13 max only %s", isa, dn(DTS[d])));
        cc_input none[] = {{"x", 1, {33}, .lo = -2, .hi = 2}};
        cc_run(&t, 1, none, 1, NULL, DTS[d], &pr_cpu_impl_eltwise, 1,
               LBL("[%s] Clip-13 no bounds %s", isa, dn(DTS[d])));
    }
}

/* Cast between the float types: exact (both sides round to nearest even). */
static void test_cast(void) {
    enum { N = 4133 };
    float *f = malloc(N * sizeof *f);
    void *raw = malloc(N * 4);
    for (int i = 0; i < N; i++) {
        /* magnitudes 2^-26 .. 2^15.8: f16 subnormals to near its maximum */
        float m = exp2f(cc_rand(-26.0f, 15.8f));
        f[i] = cc_rand(0, 1) < 0.5f ? -m : m;
        if (i % 97 == 5) { /* exact ties of the bf16 and f16 roundings */
            uint32_t b;
            memcpy(&b, &f[i], 4);
            b = (b & 0xffff0000u) | (i % 2 ? 0x8000u : 0x1000u);
            memcpy(&f[i], &b, 4);
        }
        if (i == 7) f[i] = NAN;
        if (i == 8) f[i] = 0.0f;
        if (i == 9) f[i] = -0.0f;
    }
    for (int s = 0; s < 3; s++) {
        for (int d = 0; d < 3; d++) {
            pr_dtype sd = DTS[s], dd = DTS[d];
            if (sd == PRECIS_FLOAT32)
                memcpy(raw, f, N * 4);
            else if (sd == PRECIS_BFLOAT16)
                for (int i = 0; i < N; i++) ((uint16_t *)raw)[i] = pr_f32_to_bf16(f[i]);
            else
                for (int i = 0; i < N; i++) ((uint16_t *)raw)[i] = pr_f32_to_f16(f[i]);
            tnode t;
            n_init(&t, PR_OP_Cast, "Cast", 19);
            n_int(&t, "to", dd);
            for (int th = 1; th <= 2; th++) {
                cc_input in[] = {{"x", 2, {N / 3, 3}, .dtype = sd, .raw = raw}};
                cc_run_tol(&t, 1, in, 1, NULL, PRECIS_FLOAT32, &pr_cpu_impl_eltwise, th,
                           (cc_tolerance){0, 0},
                           LBL("[%s] Cast %s->%s t%d", isa, dn(sd), dn(dd), th));
            }
        }
    }
    free(f);
    free(raw);
}

/* ------------------------------------------------------------------ binary */

typedef struct bop {
    pr_op op;
    const char *name;
} bop;
static const bop k_bin[] = {{PR_OP_Add, "Add"}, {PR_OP_Sub, "Sub"}, {PR_OP_Mul, "Mul"},
                            {PR_OP_Div, "Div"}, {PR_OP_Max, "Max"}, {PR_OP_Min, "Min"}};

typedef struct bshape {
    const char *what;
    int ra;
    int64_t a[4];
    int rb;
    int64_t b[4];
    bool a_nhwc, b_nhwc;
    int init; /* 1: b is an initializer (float32), 2: a is */
    bool out_nhwc;
    int threads;
} bshape;

static const bshape k_bshapes[] = {
    {"same n=1", 1, {1}, 1, {1}, 0, 0, 0, 0, 1},
    {"same n=15", 1, {15}, 1, {15}, 0, 0, 0, 0, 1},
    {"same n=17", 1, {17}, 1, {17}, 0, 0, 0, 0, 1},
    {"same n=BIG", 1, {-1}, 1, {-1}, 0, 0, 0, 0, 2},
    {"scalar b", 3, {2, 3, 17}, 0, {0}, 0, 0, 0, 0, 1},
    {"scalar b init", 1, {-1}, 1, {1}, 0, 0, 1, 0, 2},
    {"scalar a", 1, {1}, 2, {5, 33}, 0, 0, 0, 0, 1},
    {"bias [N]", 2, {7, 33}, 1, {33}, 0, 0, 0, 0, 1},
    {"bias [N] init", 3, {4, 5, 100}, 1, {100}, 0, 0, 1, 0, 1},
    {"bias [N] big", 2, {1000, 77}, 1, {77}, 0, 0, 1, 0, 2},
    {"per-channel plain", 4, {2, 8, 5, 7}, 4, {1, 8, 1, 1}, 0, 0, 0, 0, 1},
    {"per-channel plain init [C,1,1]", 4, {2, 8, 5, 7}, 3, {8, 1, 1}, 0, 0, 1, 0, 1},
    {"per-channel plain big", 4, {1, 32, 40, 40}, 4, {1, 32, 1, 1}, 0, 0, 1, 0, 2},
    {"per-channel nhwc", 4, {2, 8, 5, 7}, 4, {1, 8, 1, 1}, 1, 1, 0, 1, 1},
    {"per-channel nhwc init", 4, {2, 19, 5, 7}, 4, {1, 19, 1, 1}, 1, 0, 1, 1, 1},
    {"per-channel nhwc init [C,1,1]", 4, {2, 19, 5, 7}, 3, {19, 1, 1}, 1, 0, 1, 1, 1},
    {"per-channel nhwc big", 4, {1, 32, 40, 40}, 4, {1, 32, 1, 1}, 1, 0, 1, 1, 2},
    {"SE scale nhwc [N,C,1,1]", 4, {2, 24, 9, 9}, 4, {2, 24, 1, 1}, 1, 1, 0, 1, 1},
    {"SE scale plain [N,C,1,1]", 4, {2, 24, 9, 9}, 4, {2, 24, 1, 1}, 0, 0, 0, 0, 1},
    {"same nhwc", 4, {2, 8, 5, 7}, 4, {2, 8, 5, 7}, 1, 1, 0, 1, 1},
    {"same nhwc big", 4, {1, 32, 40, 40}, 4, {1, 32, 40, 40}, 1, 1, 0, 1, 2},
    {"general [3,1,5]x[4,1]", 3, {3, 1, 5}, 2, {4, 1}, 0, 0, 0, 0, 1},
    {"general [2,3,4,5]x[3,1,5]", 4, {2, 3, 4, 5}, 3, {3, 1, 5}, 0, 0, 0, 0, 1},
    {"general [1,4,1,6]x[5,1,3,1]", 4, {1, 4, 1, 6}, 4, {5, 1, 3, 1}, 0, 0, 0, 0, 1},
    {"general big [16,1,100]x[16,100,1]", 3, {16, 1, 100}, 3, {16, 100, 1}, 0, 0, 0, 0, 2},
    {"a broadcast [8,1,1]x[2,8,5,7]", 3, {8, 1, 1}, 4, {2, 8, 5, 7}, 0, 0, 0, 0, 1},
    {"a init [1,8,1,1] x nhwc", 4, {1, 8, 1, 1}, 4, {2, 8, 5, 7}, 0, 1, 2, 1, 1},
    {"a init [37] x [5,37]", 1, {37}, 2, {5, 37}, 0, 0, 2, 0, 1},
    {"rank 0 x rank 0", 0, {0}, 0, {0}, 0, 0, 0, 0, 1},
    {"nhwc x [H,W]", 4, {2, 6, 5, 7}, 2, {5, 7}, 1, 0, 0, 1, 1},
    {"nhwc x [W]", 4, {2, 6, 5, 7}, 1, {7}, 1, 0, 1, 1, 1},
    {"mixed nhwc a, plain b", 4, {2, 8, 5, 7}, 4, {2, 8, 5, 7}, 1, 0, 0, 1, 1},
    {"mixed plain a, nhwc b", 4, {2, 8, 5, 7}, 4, {2, 8, 5, 7}, 0, 1, 0, 0, 1},
    {"nhwc a -> plain out", 4, {2, 8, 5, 7}, 4, {1, 8, 1, 1}, 1, 0, 1, 0, 2},
};

static void test_binary(void) {
    for (size_t oi = 0; oi < sizeof k_bin / sizeof *k_bin; oi++) {
        tnode t;
        n_init(&t, k_bin[oi].op, k_bin[oi].name, 14);
        bool div = k_bin[oi].op == PR_OP_Div;
        for (size_t si = 0; si < sizeof k_bshapes / sizeof *k_bshapes; si++) {
            const bshape *s = &k_bshapes[si];
            for (int d = 0; d < 3; d++) {
                cc_input in[2] = {{"a", s->ra, {0}, .nhwc = s->a_nhwc, .init = s->init == 2},
                                  {"b", s->rb, {0}, .nhwc = s->b_nhwc, .init = s->init == 1}};
                memcpy(in[0].dims, s->a, sizeof s->a);
                memcpy(in[1].dims, s->b, sizeof s->b);
                if (in[0].dims[0] < 0) in[0].dims[0] = BIG;
                if (in[1].dims[0] < 0) in[1].dims[0] = BIG;
                if (div) in[1].lo = 0.5f, in[1].hi = 2.0f;
                bool on = s->out_nhwc;
                cc_run(
                    &t, 2, in, 1, &on, DTS[d], &pr_cpu_impl_binary, s->threads,
                    LBL("[%s] %s %s %s t%d", isa, k_bin[oi].name, s->what, dn(DTS[d]), s->threads));
            }
        }
        /* NaN on either side */
        static const float na[] = {NAN, 1, NAN, -0.0f, 0.0f, 2, -3, 4,  5,
                                   NAN, 1, 2,   3,     4,    5, 6,  NAN};
        static const float nb[] = {2, NAN, NAN, 0.0f, -0.0f, -2, 3, NAN, 5,
                                   1, NAN, 2,   3,    4,     5,  6, 1};
        for (int d = 0; d < 3; d++) {
            cc_input in[] = {{"a", 1, {17}, .data = na}, {"b", 1, {17}, .data = nb}};
            if (div) continue; /* x / 0 differs only by inf - inf in the comparison */
            cc_run(&t, 2, in, 1, NULL, DTS[d], &pr_cpu_impl_binary, 1,
                   LBL("[%s] %s NaN %s", isa, k_bin[oi].name, dn(DTS[d])));
        }
    }
}

static void test_pow(void) {
    static const float exps[] = {2, 0.5f, 3, -1, 1, 1.7f, 0, -2.5f};
    for (int ei = 0; ei < 8; ei++) {
        tnode t;
        n_init(&t, PR_OP_Pow, "Pow", 15);
        for (int d = 0; d < 3; d++) {
            for (int li = 0; li < 3; li++) {
                int64_t n = li == 0 ? 1 : li == 1 ? 17 : 100003;
                int th = li == 2 ? 2 : 1;
                cc_input in[] = {{"x", 1, {n}, .lo = 0.1f, .hi = 3},
                                 {"e", 0, {0}, .init = true, .data = &exps[ei]}};
                cc_run(&t, 2, in, 1, NULL, DTS[d], &pr_cpu_impl_binary, th,
                       LBL("[%s] Pow ^%g %s n=%lld", isa, exps[ei], dn(DTS[d]), (long long)n));
            }
        }
    }
    /* integer exponent, negative base, NHWC */
    tnode t;
    n_init(&t, PR_OP_Pow, "Pow", 15);
    static const int64_t two = 2;
    const bool on = true;
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 4, {2, 5, 3, 7}, .nhwc = true, .lo = -3, .hi = 3},
                         {"e", 1, {1}, .init = true, .dtype = PRECIS_INT64, .raw = &two}};
        cc_run(&t, 2, in, 1, &on, DTS[d], &pr_cpu_impl_binary, 1,
               LBL("[%s] Pow int64 ^2 nhwc %s", isa, dn(DTS[d])));
    }
}

/* ------------------------------------------------------------------ move */

static void test_reorder(void) {
    static const int64_t shapes[][4] = {{2, 19, 5, 7}, {1, 64, 56, 56}, {1, 3, 64, 64},
                                        {1, 1, 1, 1},  {3, 16, 16, 1},  {1, 33, 1, 17}};
    for (int si = 0; si < 6; si++) {
        for (int dir = 0; dir < 2; dir++) {
            tnode t;
            n_init(&t, PR_OP_Reorder, "Reorder", 1);
            t.node.domain = "ai.precis";
            n_str(&t, "to", dir ? "plain" : "nhwc");
            for (int d = 0; d < 3; d++) {
                for (int th = 1; th <= 2; th++) {
                    cc_input in[] = {{"x", 4, {0}, .nhwc = dir == 1}};
                    memcpy(in[0].dims, shapes[si], sizeof shapes[si]);
                    bool on = dir == 0;
                    cc_run(&t, 1, in, 1, &on, DTS[d], &pr_cpu_impl_move, th,
                           LBL("[%s] Reorder ->%s [%lld,%lld,%lld,%lld] %s t%d", isa,
                               dir ? "plain" : "nhwc", (long long)shapes[si][0],
                               (long long)shapes[si][1], (long long)shapes[si][2],
                               (long long)shapes[si][3], dn(DTS[d]), th));
                }
            }
        }
    }
}

/* DepthToSpace (deconv_s2d's), DCR and CRD, plain and NHWC */
static void test_depth_to_space(void) {
    static const struct {
        int64_t dims[4], b;
    } c[] = {{{2, 24, 5, 7}, 2}, {{1, 96, 40, 40}, 2}, {{1, 18, 3, 4}, 3}, {{1, 4, 1, 1}, 2}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (int m = 0; m < 2; m++)
            for (int l = 0; l < 2; l++)
                for (int d = 0; d < 3; d++) {
                    tnode t;
                    n_init(&t, PR_OP_DepthToSpace, "DepthToSpace", 13);
                    n_int(&t, "blocksize", c[i].b);
                    n_str(&t, "mode", m ? "CRD" : "DCR");
                    cc_input in[] = {{"x", 4, {0}, .nhwc = l == 1}};
                    memcpy(in[0].dims, c[i].dims, sizeof c[i].dims);
                    bool on = l == 1;
                    int th = 1 + (int)(i % 2);
                    cc_run(&t, 1, in, 1, &on, DTS[d], &pr_cpu_impl_move, th,
                           LBL("[%s] DepthToSpace %s b%lld [%lld,%lld,%lld,%lld] %s %s t%d", isa,
                               m ? "CRD" : "DCR", (long long)c[i].b, (long long)c[i].dims[0],
                               (long long)c[i].dims[1], (long long)c[i].dims[2],
                               (long long)c[i].dims[3], l ? "nhwc" : "plain", dn(DTS[d]), th));
                }
}

static void test_transpose(void) {
    /* every perm of a small 4-D tensor */
    int p[4];
    for (p[0] = 0; p[0] < 4; p[0]++)
        for (p[1] = 0; p[1] < 4; p[1]++)
            for (p[2] = 0; p[2] < 4; p[2]++)
                for (p[3] = 0; p[3] < 4; p[3]++) {
                    if (p[0] == p[1] || p[0] == p[2] || p[0] == p[3] || p[1] == p[2] ||
                        p[1] == p[3] || p[2] == p[3])
                        continue;
                    tnode t;
                    n_init(&t, PR_OP_Transpose, "Transpose", 13);
                    n_ints(&t, "perm", (int64_t[]){p[0], p[1], p[2], p[3]}, 4);
                    for (int d = 0; d < 3; d++) {
                        cc_input in[] = {{"x", 4, {2, 3, 17, 18}, .init = false}};
                        cc_run(&t, 1, in, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
                               LBL("[%s] Transpose %d%d%d%d %s", isa, p[0], p[1], p[2], p[3],
                                   dn(DTS[d])));
                    }
                }
    typedef struct tc {
        int r;
        int64_t dims[6];
        int np;
        int64_t perm[6];
        int th;
    } tc;
    static const tc cases[] = {
        {2, {37, 53}, 2, {1, 0}, 1},
        {2, {1000, 3}, 2, {1, 0}, 2},
        {2, {1003, 2}, 2, {1, 0}, 1},  /* few columns: the gathered path, a partial block */
        {2, {64, 15}, 2, {1, 0}, 1},
        {4, {1, 37, 41, 10}, 4, {0, 3, 1, 2}, 2},
        {4, {2, 16, 8, 1}, 4, {0, 3, 1, 2}, 1},
        {2, {512, 768}, 2, {1, 0}, 2},
        {4, {1, 32, 40, 48}, 4, {0, 2, 3, 1}, 2},
        {4, {1, 32, 40, 48}, 4, {0, 3, 1, 2}, 2},
        {4, {2, 12, 64, 32}, 4, {0, 2, 1, 3}, 2},
        {4, {1, 32, 40, 48}, 4, {3, 2, 1, 0}, 2},
        {3, {5, 6, 7}, -1, {0}, 1},
        {6, {2, 3, 1, 4, 5, 2}, 6, {4, 1, 5, 0, 3, 2}, 1},
        {5, {2, 1, 3, 1, 16}, 5, {4, 3, 2, 1, 0}, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const tc *c = &cases[ci];
        tnode t;
        n_init(&t, PR_OP_Transpose, "Transpose", 13);
        if (c->np > 0) n_ints(&t, "perm", c->perm, c->np);
        for (int d = 0; d < 3; d++) {
            cc_input in[] = {{"x", c->r, {0}, .init = false}};
            memcpy(in[0].dims, c->dims, sizeof c->dims);
            cc_run(&t, 1, in, 1, NULL, DTS[d], &pr_cpu_impl_move, c->th,
                   LBL("[%s] Transpose case %zu %s", isa, ci, dn(DTS[d])));
        }
    }
    /* NHWC-stored input, plain output */
    tnode t;
    n_init(&t, PR_OP_Transpose, "Transpose", 13);
    n_ints(&t, "perm", (int64_t[]){0, 2, 3, 1}, 4);
    const bool off = false;
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 4, {2, 9, 5, 6}, .nhwc = true}};
        cc_run(&t, 1, in, 1, &off, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Transpose nhwc input %s", isa, dn(DTS[d])));
    }
}

static void test_concat(void) {
    for (int axis = -1; axis < 4; axis++) {
        tnode t;
        n_init(&t, PR_OP_Concat, "Concat", 13);
        n_int(&t, "axis", axis);
        int ax = axis < 0 ? 3 : axis;
        for (int d = 0; d < 3; d++) {
            cc_input in[3];
            for (int i = 0; i < 3; i++) {
                int64_t dims[4] = {2, 3, 4, 5};
                dims[ax] = i + 1 + (i == 2 ? 7 : 0);
                in[i] = (cc_input){i == 0 ? "a" : i == 1 ? "b" : "c", 4, {0}, .init = false};
                memcpy(in[i].dims, dims, sizeof dims);
            }
            cc_run(&t, 3, in, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
                   LBL("[%s] Concat axis %d %s", isa, axis, dn(DTS[d])));
            bool on = true;
            for (int i = 0; i < 3; i++) in[i].nhwc = true;
            cc_run(&t, 3, in, 1, &on, DTS[d], &pr_cpu_impl_move, 1,
                   LBL("[%s] Concat nhwc axis %d %s", isa, axis, dn(DTS[d])));
        }
    }
    tnode t;
    n_init(&t, PR_OP_Concat, "Concat", 13);
    n_int(&t, "axis", 1);
    for (int d = 0; d < 3; d++)
        for (int nh = 0; nh < 2; nh++) {
            cc_input in[] = {{"a", 4, {1, 32, 40, 40}, .nhwc = nh},
                             {"b", 4, {1, 16, 40, 40}, .nhwc = nh}};
            bool on = nh;
            cc_run(&t, 2, in, 1, &on, DTS[d], &pr_cpu_impl_move, 2,
                   LBL("[%s] Concat big %s %s t2", isa, nh ? "nhwc" : "plain", dn(DTS[d])));
        }
    n_init(&t, PR_OP_Concat, "Concat", 13);
    n_int(&t, "axis", 0);
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"a", 1, {BIG}, .init = false}, {"b", 1, {17}, .init = false}};
        cc_run(&t, 2, in, 1, NULL, DTS[d], &pr_cpu_impl_move, 2,
               LBL("[%s] Concat 1-D big %s t2", isa, dn(DTS[d])));
    }
}

#define I64(...) ((const int64_t[]){__VA_ARGS__})

static void test_slice(void) {
    typedef struct sc {
        int n;
        int64_t starts[4], ends[4], axes[4], steps[4];
    } sc;
    static const sc cases[] = {
        {2, {2, -5}, {15, 1000}, {1, 2}, {3, 1}},
        {1, {-1}, {-1000}, {0}, {-2}},
        {3, {0, 1, 29}, {10, 19, 0}, {0, 1, 2}, {1, 2, -4}},
        {1, {3}, {4}, {2}, {1}},
        {1, {0}, {5}, {-1}, {1}},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const sc *c = &cases[ci];
        tnode t;
        n_init(&t, PR_OP_Slice, "Slice", 13);
        for (int d = 0; d < 3; d++)
            for (int th = 1; th <= 2; th++) {
                cc_input in[] = {
                    {"x", 3, {10, 20, 30}, .init = false},
                    {"starts", 1, {c->n}, .init = true, .dtype = PRECIS_INT64, .raw = c->starts},
                    {"ends", 1, {c->n}, .init = true, .dtype = PRECIS_INT64, .raw = c->ends},
                    {"axes", 1, {c->n}, .init = true, .dtype = PRECIS_INT64, .raw = c->axes},
                    {"steps", 1, {c->n}, .init = true, .dtype = PRECIS_INT64, .raw = c->steps}};
                cc_run(&t, 5, in, 1, NULL, DTS[d], &pr_cpu_impl_move, th,
                       LBL("[%s] Slice case %zu %s t%d", isa, ci, dn(DTS[d]), th));
            }
    }
    /* opset 9: attributes */
    tnode t;
    n_init(&t, PR_OP_Slice, "Slice", 9);
    n_ints(&t, "starts", I64(1, 0), 2);
    n_ints(&t, "ends", I64(-1, 7), 2);
    n_ints(&t, "axes", I64(0, 1), 2);
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 2, {9, 11}, .init = false}};
        cc_run(&t, 1, in, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Slice-9 %s", isa, dn(DTS[d])));
    }
    /* NHWC in and out: channels and width */
    n_init(&t, PR_OP_Slice, "Slice", 13);
    const bool on = true;
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 4, {2, 12, 5, 9}, .nhwc = true},
                         {"starts", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(3, 1)},
                         {"ends", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(11, 8)},
                         {"axes", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(1, 3)}};
        cc_run(&t, 4, in, 1, &on, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Slice nhwc %s", isa, dn(DTS[d])));
    }
    /* big: a row range of a large 2-D tensor */
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {
            {"x", 2, {2000, 700}, .init = false},
            {"starts", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(5, 3)},
            {"ends", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(1990, 699)}};
        cc_run(&t, 3, in, 1, NULL, DTS[d], &pr_cpu_impl_move, 2,
               LBL("[%s] Slice big %s t2", isa, dn(DTS[d])));
    }
}

static void test_split(void) {
    tnode t;
    n_init(&t, PR_OP_Split, "Split", 13);
    n_int(&t, "axis", 1);
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {
            {"x", 3, {4, 10, 6}, .init = false},
            {"split", 1, {3}, .init = true, .dtype = PRECIS_INT64, .raw = I64(2, 3, 5)}};
        cc_run(&t, 2, in, 3, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Split-13 %s", isa, dn(DTS[d])));
    }
    n_init(&t, PR_OP_Split, "Split", 11);
    n_int(&t, "axis", -1);
    n_ints(&t, "split", I64(1, 16, 4), 3);
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 2, {7, 21}, .init = false}};
        cc_run(&t, 1, in, 3, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Split-11 attr %s", isa, dn(DTS[d])));
    }
    n_init(&t, PR_OP_Split, "Split", 18);
    n_int(&t, "axis", 1);
    n_int(&t, "num_outputs", 3);
    const bool on[3] = {true, true, true};
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 4, {2, 8, 5, 3}, .nhwc = true}};
        cc_run(&t, 1, in, 3, on, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Split-18 nhwc uneven %s", isa, dn(DTS[d])));
    }
    n_init(&t, PR_OP_Split, "Split", 18);
    n_int(&t, "axis", 0);
    n_int(&t, "num_outputs", 2);
    for (int d = 0; d < 3; d++) {
        cc_input in[] = {{"x", 2, {600, 1001}, .init = false}};
        cc_run(&t, 1, in, 2, NULL, DTS[d], &pr_cpu_impl_move, 2,
               LBL("[%s] Split big %s t2", isa, dn(DTS[d])));
    }
}

static void test_reshape(void) {
    tnode t;
    for (int d = 0; d < 3; d++) {
        n_init(&t, PR_OP_Reshape, "Reshape", 14);
        cc_input r[] = {{"x", 4, {2, 3, 4, 5}, .init = false},
                        {"shape", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(6, -1)}};
        cc_run(&t, 2, r, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Reshape %s", isa, dn(DTS[d])));
        cc_input rb[] = {{"x", 2, {1000, 1003}, .init = false},
                         {"shape", 1, {1}, .init = true, .dtype = PRECIS_INT64, .raw = I64(-1)}};
        cc_run(&t, 2, rb, 1, NULL, DTS[d], &pr_cpu_impl_move, 2,
               LBL("[%s] Reshape big %s", isa, dn(DTS[d])));
        n_init(&t, PR_OP_Flatten, "Flatten", 13);
        n_int(&t, "axis", 2);
        cc_input f[] = {{"x", 4, {2, 3, 4, 5}, .init = false}};
        cc_run(&t, 1, f, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Flatten %s", isa, dn(DTS[d])));
        n_init(&t, PR_OP_Squeeze, "Squeeze", 13);
        cc_input s[] = {{"x", 4, {2, 1, 4, 1}, .init = false},
                        {"axes", 1, {1}, .init = true, .dtype = PRECIS_INT64, .raw = I64(1)}};
        cc_run(&t, 2, s, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Squeeze %s", isa, dn(DTS[d])));
        n_init(&t, PR_OP_Unsqueeze, "Unsqueeze", 13);
        cc_input u[] = {{"x", 2, {3, 4}, .init = false},
                        {"axes", 1, {2}, .init = true, .dtype = PRECIS_INT64, .raw = I64(0, 3)}};
        cc_run(&t, 2, u, 1, NULL, DTS[d], &pr_cpu_impl_move, 1,
               LBL("[%s] Unsqueeze %s", isa, dn(DTS[d])));
    }
}

/* ------------------------------------------------------------------ graph-level contract */

/* A one-node graph with known dims for supports/nhwc_ok/inplace checks. */
static pr_graph *mini(pr_op op, const char *name, int n_in, const pr_dtype *dt, const int *rank,
                      const int64_t (*dims)[4], const bool *init, pr_dtype out_dt, int out_rank,
                      const int64_t *out_dims) {
    pr_err e = {0};
    pr_graph *g = pr_graph_create();
    int ni = pr_graph_add_node(g, n_in, 1, 0, &e);
    pr_node *n = &g->nodes[ni];
    n->name = "n";
    n->op_type = name;
    n->domain = "";
    n->op = op;
    n->opset = 14;
    for (int i = 0; i < n_in; i++) {
        char nm[8];
        snprintf(nm, sizeof nm, "i%d", i);
        int ti = pr_graph_get_tensor(g, nm, &e);
        pr_tensor *x = &g->tensors[ti];
        x->dtype = dt[i];
        x->rank = rank[i];
        memcpy(x->dims, dims[i], sizeof dims[i]);
        if (init && init[i]) {
            x->flags |= PR_T_INIT;
            x->nbytes = (size_t)pr_numel(x->rank, x->dims) * pr_dtype_size(x->dtype);
            x->data = calloc(1, x->nbytes ? x->nbytes : 1);
            pr_graph_own(g, x->data);
        }
        g->nodes[ni].inputs[i] = ti;
    }
    int to = pr_graph_get_tensor(g, "y", &e);
    g->tensors[to].dtype = out_dt;
    g->tensors[to].rank = out_rank;
    memcpy(g->tensors[to].dims, out_dims, (size_t)out_rank * sizeof(int64_t));
    g->tensors[to].producer = ni;
    g->nodes[ni].outputs[0] = to;
    return g;
}

static void test_contract(void) {
    const pr_dtype F = PRECIS_FLOAT32, B = PRECIS_BFLOAT16, L = PRECIS_INT64;
    const int64_t d4[4] = {1, 8, 5, 5}, pc[4] = {1, 8, 1, 1}, hw[4] = {1, 1, 5, 5};
    /* Add: same shape -> in place, nhwc ok */
    pr_graph *g = mini(PR_OP_Add, "Add", 2, (pr_dtype[]){B, B}, (int[]){4, 4},
                       (const int64_t[][4]){{1, 8, 5, 5}, {1, 8, 5, 5}}, NULL, B, 4, d4);
    CHECK(pr_cpu_impl_binary.supports(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_binary.nhwc_ok(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_binary.inplace_input(g, &g->nodes[0]) == 0);
    pr_graph_destroy(g);
    /* broadcast input 0: no in place; per-channel constant: nhwc ok */
    g = mini(PR_OP_Mul, "Mul", 2, (pr_dtype[]){B, F}, (int[]){4, 4},
             (const int64_t[][4]){{1, 8, 1, 1}, {1, 8, 5, 5}}, NULL, B, 4, d4);
    CHECK(pr_cpu_impl_binary.inplace_input(g, &g->nodes[0]) == -1);
    pr_graph_destroy(g);
    g = mini(PR_OP_Mul, "Mul", 2, (pr_dtype[]){B, F}, (int[]){4, 4},
             (const int64_t[][4]){{1, 8, 5, 5}, {1, 8, 1, 1}}, (bool[]){false, true}, B, 4, d4);
    CHECK(pr_cpu_impl_binary.nhwc_ok(g, &g->nodes[0]));
    pr_graph_destroy(g);
    (void)pc;
    /* a non-per-channel constant rank-4 operand: not nhwc */
    g = mini(PR_OP_Add, "Add", 2, (pr_dtype[]){F, F}, (int[]){4, 4},
             (const int64_t[][4]){{1, 8, 5, 5}, {1, 1, 5, 5}}, (bool[]){false, true}, F, 4, d4);
    CHECK(!pr_cpu_impl_binary.nhwc_ok(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_binary.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    (void)hw;
    /* int64 math is left to ref */
    g = mini(PR_OP_Add, "Add", 2, (pr_dtype[]){L, L}, (int[]){1, 1}, (const int64_t[][4]){{4}, {4}},
             NULL, L, 1, (const int64_t[]){4});
    CHECK(!pr_cpu_impl_binary.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    g = mini(PR_OP_Relu, "Relu", 1, (pr_dtype[]){L}, (int[]){1}, (const int64_t[][4]){{4}}, NULL, L,
             1, (const int64_t[]){4});
    CHECK(!pr_cpu_impl_eltwise.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    g = mini(PR_OP_Reshape, "Reshape", 2, (pr_dtype[]){L, L}, (int[]){1, 1},
             (const int64_t[][4]){{4}, {2}}, (bool[]){false, true}, L, 2, (const int64_t[]){2, 2});
    CHECK(!pr_cpu_impl_move.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    /* unary: in place, nhwc ok; Pow with a runtime exponent: no */
    g = mini(PR_OP_Sigmoid, "Sigmoid", 1, (pr_dtype[]){B}, (int[]){4},
             (const int64_t[][4]){{1, 8, 5, 5}}, NULL, B, 4, d4);
    CHECK(pr_cpu_impl_eltwise.supports(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_eltwise.nhwc_ok(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_eltwise.inplace_input(g, &g->nodes[0]) == 0);
    pr_graph_destroy(g);
    g = mini(PR_OP_Pow, "Pow", 2, (pr_dtype[]){F, F}, (int[]){1, 0}, (const int64_t[][4]){{4}, {0}},
             NULL, F, 1, (const int64_t[]){4});
    CHECK(!pr_cpu_impl_binary.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    /* move: Reshape in place, plain only; Concat nhwc on axis 1 only */
    g = mini(PR_OP_Reshape, "Reshape", 2, (pr_dtype[]){F, L}, (int[]){4, 1},
             (const int64_t[][4]){{1, 8, 5, 5}, {2}}, (bool[]){false, true}, F, 2,
             (const int64_t[]){8, 25});
    CHECK(pr_cpu_impl_move.supports(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_move.inplace_input(g, &g->nodes[0]) == 0);
    CHECK(!pr_cpu_impl_move.nhwc_ok(g, &g->nodes[0]));
    g->tensors[g->nodes[0].inputs[0]].layout = PR_LAYOUT_NHWC;
    CHECK(!pr_cpu_impl_move.supports(g, &g->nodes[0]));
    pr_graph_destroy(g);
    g = mini(PR_OP_Concat, "Concat", 2, (pr_dtype[]){F, F}, (int[]){4, 4},
             (const int64_t[][4]){{1, 8, 5, 5}, {1, 8, 5, 5}}, NULL, F, 4,
             (const int64_t[]){1, 16, 5, 5});
    pr_attr ax = {.name = "axis", .type = PR_ATTR_INT, .i = 1};
    g->nodes[0].attrs = &ax;
    g->nodes[0].n_attrs = 1;
    CHECK(pr_cpu_impl_move.nhwc_ok(g, &g->nodes[0]));
    CHECK(pr_cpu_impl_move.inplace_input(g, &g->nodes[0]) == -1);
    ax.i = 2; /* any axis runs on NHWC storage (the layout pass may keep it) */
    CHECK(pr_cpu_impl_move.nhwc_ok(g, &g->nodes[0]));
    g->nodes[0].attrs = NULL;
    g->nodes[0].n_attrs = 0;
    pr_graph_destroy(g);

    /* describe() follows the ISA */
    g = mini(PR_OP_Relu, "Relu", 1, (pr_dtype[]){F}, (int[]){1}, (const int64_t[][4]){{4}}, NULL, F,
             1, (const int64_t[]){4});
    void *st = NULL;
    pr_err e = {0};
    pr_cpu_cfg cfg = {.num_threads = 1};
    CHECK(pr_cpu_impl_eltwise.prepare(g, &g->nodes[0], &cfg, &st, &e) == PRECIS_OK);
    const char *want = strcmp(pr_cpu_isa_name(), "scalar") && strcmp(pr_cpu_isa_name(), "avx2")
                           ? "eltwise.avx512"
                           : "eltwise.scalar";
    CHECK(st && !strcmp(pr_cpu_impl_eltwise.describe(st), want));
    pr_cpu_impl_eltwise.destroy(st);
    pr_graph_destroy(g);
}

/* In place: output 0 on input 0's buffer gives what a separate output gives. */
static void inplace_case(const pr_cpu_impl *impl, tnode *t, int n_in, cc_input *ins, pr_dtype dt,
                         int threads, const char *what) {
    pr_err e = {0};
    pr_dtype dts[CC_MAX_IO];
    float *data[CC_MAX_IO] = {0};
    pr_buf in[CC_MAX_IO], out;
    const pr_buf *inp[CC_MAX_IO];
    memset(in, 0, sizeof in);
    for (int i = 0; i < n_in; i++) {
        dts[i] = ins[i].init ? PRECIS_FLOAT32 : dt;
        int64_t ne = pr_numel(ins[i].rank, ins[i].dims);
        data[i] = malloc((size_t)ne * sizeof(float));
        for (int64_t q = 0; q < ne; q++) data[i][q] = cc_rand(-2, 2);
        pr_buf_alloc(&in[i], dts[i], ins[i].rank, ins[i].dims, "x", &e);
        pr_ref_from_f32(data[i], ne, dts[i], in[i].data);
        inp[i] = &in[i];
    }
    pr_graph *g = cc_graph(t, n_in, ins, dts, data, 1, NULL, true);
    void *st = NULL;
    pr_cpu_cfg cfg = {.num_threads = threads};
    CHECK(impl->supports(g, &g->nodes[0]));
    CHECK(impl->prepare(g, &g->nodes[0], &cfg, &st, &e) == PRECIS_OK);
    pr_buf_alloc(&out, dt, in[0].rank, in[0].dims, "y", &e);
    pr_cpu_exec x = {threads, NULL, NULL, 0, NULL, 0};
    pr_buf *outp = &out;
    pr_kernel k = {g, &g->nodes[0], n_in, inp, 1, &outp, &e, threads};
    CHECK(impl->run(st, &k, &x) == PRECIS_OK);
    pr_buf *self = &in[0];
    pr_kernel k2 = {g, &g->nodes[0], n_in, inp, 1, &self, &e, threads};
    CHECK(impl->run(st, &k2, &x) == PRECIS_OK);
    CHECK(memcmp(out.data, in[0].data, out.nbytes) == 0);
    if (memcmp(out.data, in[0].data, out.nbytes)) fprintf(stderr, "in place %s differs\n", what);
    free(x.scratch);
    impl->destroy(st);
    pr_buf_free(&out);
    for (int i = 0; i < n_in; i++) {
        pr_buf_free(&in[i]);
        free(data[i]);
    }
    pr_graph_destroy(g);
}

static void test_inplace(void) {
    tnode t;
    for (int d = 0; d < 3; d++) {
        n_init(&t, PR_OP_Sigmoid, "Sigmoid", 13);
        cc_input u[] = {{"x", 1, {300001}, .init = false}};
        inplace_case(&pr_cpu_impl_eltwise, &t, 1, u, DTS[d], 2, "sigmoid");
        n_init(&t, PR_OP_Add, "Add", 14);
        cc_input b[] = {{"a", 4, {1, 64, 40, 40}, .init = false},
                        {"b", 4, {1, 64, 1, 1}, .init = true}};
        inplace_case(&pr_cpu_impl_binary, &t, 2, b, DTS[d], 2, "add per-channel");
        n_init(&t, PR_OP_Mul, "Mul", 14);
        cc_input m[] = {{"a", 2, {999, 37}, .init = false}, {"b", 1, {37}, .init = false}};
        inplace_case(&pr_cpu_impl_binary, &t, 2, m, DTS[d], 1, "mul bias");
    }
}

/* ------------------------------------------------------------------ math accuracy */
#ifdef PR_CPU_X86
enum { F_EXP, F_SIGMOID, F_TANH, F_ERF, F_LOG, F_GELU, F_GELU_TANH, F_SOFTPLUS, F_MISH, F_COUNT };
static const char *const k_fn[] = {"exp",  "sigmoid",   "tanh",     "erf", "log",
                                   "gelu", "gelu_tanh", "softplus", "mish"};

static PR_AVX512 void eval16(int f, const float *x, float *y) {
    __m512 v = _mm512_loadu_ps(x), r;
    switch (f) {
    case F_EXP: r = pv_exp(v); break;
    case F_SIGMOID: r = pv_sigmoid(v); break;
    case F_TANH: r = pv_tanh(v); break;
    case F_ERF: r = pv_erf(v); break;
    case F_LOG: r = pv_log(v); break;
    case F_GELU: r = pv_gelu(v); break;
    case F_GELU_TANH: r = pv_gelu_tanh(v); break;
    case F_SOFTPLUS: r = pv_softplus(v); break;
    default: r = pv_mish(v); break;
    }
    _mm512_storeu_ps(y, r);
}

static double ref_fn(int f, double x) {
    switch (f) {
    case F_EXP: return exp(x);
    case F_SIGMOID: return 1 / (1 + exp(-x));
    case F_TANH: return tanh(x);
    case F_ERF: return erf(x);
    case F_LOG: return log(x);
    case F_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    case F_GELU_TANH: return x / (1 + exp(-2 * 0.79788456080286536 * (x + 0.044715 * x * x * x)));
    case F_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    default: return x * tanh(x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)));
    }
}

static void test_math(void) {
    if (!pr_cpu_use_avx512()) return;
    /* sweep ranges: [lo, hi] linear, plus a log-spaced magnitude sweep */
    static const float lohi[F_COUNT][2] = {{-87, 88}, {-80, 40}, {-9, 9},   {-4, 4},  {0, 0},
                                           {-13, 10}, {-5, 8},   {-80, 80}, {-30, 40}};
    /* allowed relative error (gelu_tanh inherits the rounding of its cubic) */
    static const double tol[F_COUNT] = {2e-6, 2e-6, 2e-6, 2e-6, 2e-6, 4e-6, 1e-5, 2e-6, 4e-6};
    enum { N = 1 << 18 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    for (int f = 0; f < F_COUNT; f++) {
        for (int i = 0; i < N; i++) {
            if (f == F_LOG)
                x[i] = exp2f(-149.0f + 276.0f * (float)i / N); /* denormals to 2^127 */
            else if (i < N / 2)
                x[i] = lohi[f][0] + (lohi[f][1] - lohi[f][0]) * (float)i / (N / 2);
            else { /* +-2^-30 .. 2^3 */
                float m = exp2f(-30.0f + 33.0f * (float)(i - N / 2) / (N / 2));
                x[i] = i % 2 ? -m : m;
            }
        }
        for (int i = 0; i < N; i += 16) eval16(f, x + i, y + i);
        double worst = 0;
        float wx = 0;
        for (int i = 0; i < N; i++) {
            double r = ref_fn(f, x[i]);
            if (fabs(r) < 1e-37 || !isfinite(r)) continue; /* denormal results, overflow */
            double err = fabs(y[i] - r) / fabs(r);
            if (err > worst) worst = err, wx = x[i];
        }
        CHECK(worst <= tol[f]);
        if (verbose || worst > tol[f])
            printf("  math %-9s max rel err %.2e at x=%g (allowed %.0e)\n", k_fn[f], worst, wx,
                   tol[f]);
    }
    /* specials */
    float s[16] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-40f, -1e-40f, 100,
                   -100,     1,         -1,  0.5f, -0.5f, 20,     -20,     3};
    float o[16];
    eval16(F_EXP, s, o);
    CHECK(o[0] == INFINITY && o[1] == 0 && isnan(o[2]) && o[3] == 1 && o[7] == INFINITY &&
          o[8] > 0 && o[8] < 1e-43f);
    eval16(F_SIGMOID, s, o);
    CHECK(o[0] == 1 && o[1] == 0 && isnan(o[2]) && o[3] == 0.5f);
    eval16(F_TANH, s, o);
    CHECK(o[0] == 1 && o[1] == -1 && isnan(o[2]) && o[3] == 0 && signbit(o[4]) && o[5] == -o[6]);
    eval16(F_ERF, s, o);
    CHECK(o[0] == 1 && o[1] == -1 && isnan(o[2]) && o[3] == 0 && o[7] == 1 && o[8] == -1);
    eval16(F_LOG, s, o);
    CHECK(o[0] == INFINITY && isnan(o[1]) && isnan(o[2]) && o[3] == -INFINITY &&
          o[4] == -INFINITY && isnan(o[6]) && o[9] == 0 && fabsf(o[5] - logf(1e-40f)) < 1e-4f);
    eval16(F_GELU, s, o);
    CHECK(o[0] == INFINITY && isnan(o[2]) && o[3] == 0 && o[7] == 100 && o[8] == 0);
    eval16(F_SOFTPLUS, s, o);
    CHECK(o[0] == INFINITY && o[1] == 0 && isnan(o[2]) && o[7] == 100);
    eval16(F_MISH, s, o);
    CHECK(o[0] == INFINITY && isnan(o[2]) && o[3] == 0 && o[7] == 100);
    free(x);
    free(y);
}
#else
static void test_math(void) {}
#endif

/* ------------------------------------------------------------------ bandwidth */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void __attribute__((noinline))
plain_add(const float *a, const float *b, float *o, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = a[i] + b[i];
}
static void __attribute__((noinline)) plain_sigmoid(const float *a, float *o, int64_t n) {
    for (int64_t i = 0; i < n; i++) o[i] = 1.0f / (1.0f + expf(-a[i]));
}

/* best time of `reps` runs of the impl on in[0..n_in) -> *out; layouts:
 * input nhwc_in, output nhwc_out */
static double time_impl_l(const pr_cpu_impl *impl, tnode *t, int n_in, pr_buf *in, pr_buf *out,
                          int threads, int reps, bool nhwc_in, bool nhwc_out) {
    pr_err e = {0};
    pr_dtype dts[2] = {in[0].dtype, in[0].dtype};
    cc_input ci[2] = {{"a", in[0].rank, {0}, .nhwc = nhwc_in}, {"b", in[0].rank, {0}, .nhwc = nhwc_in}};
    for (int i = 0; i < 2; i++) memcpy(ci[i].dims, in[0].dims, sizeof in[0].dims);
    pr_graph *g = cc_graph(t, n_in, ci, dts, NULL, 1, &nhwc_out, true);
    void *st = NULL;
    pr_cpu_cfg cfg = {.num_threads = threads};
    impl->prepare(g, &g->nodes[0], &cfg, &st, &e);
    const pr_buf *inp[2] = {&in[0], &in[1]};
    pr_kernel k = {g, &g->nodes[0], n_in, inp, 1, &out, &e, threads};
    pr_cpu_exec x = {threads, NULL, NULL, 0, NULL, 0};
    impl->run(st, &k, &x);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        impl->run(st, &k, &x);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    impl->destroy(st);
    pr_graph_destroy(g);
    return best;
}

static double time_impl(const pr_cpu_impl *impl, tnode *t, int n_in, pr_buf *in, pr_buf *out,
                        int threads, int reps) {
    return time_impl_l(impl, t, n_in, in, out, threads, reps, false, false);
}

static void bench(void) {
    const int64_t n = 4 << 20;
    const int reps = 20;
    pr_err e = {0};
    pr_buf in[2], out;
    for (int i = 0; i < 2; i++) pr_buf_alloc(&in[i], PRECIS_FLOAT32, 1, &n, "x", &e);
    pr_buf_alloc(&out, PRECIS_FLOAT32, 1, &n, "y", &e);
    for (int64_t i = 0; i < n; i++) {
        ((float *)in[0].data)[i] = cc_rand(-4, 4);
        ((float *)in[1].data)[i] = cc_rand(-4, 4);
    }
    const float *a = in[0].data, *b = in[1].data;
    float *o = out.data;
    double mb = (double)n * 4;
    plain_add(a, b, o, n);
    double tp = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        plain_add(a, b, o, n);
        double dt = now() - t0;
        if (dt < tp) tp = dt;
    }
    tnode t;
    pr_buf *op = &out;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("  bench [%s] Add f32 4M same shape (3 x 16 MB moved): plain C loop %.1f GB/s\n", isa,
           3 * mb / tp / 1e9);
    n_init(&t, PR_OP_Add, "Add", 14);
    for (int th = 1; th <= 8 && th <= ncpu; th *= 2)
        printf("  bench [%s]   binary impl, %d thread%s: %.1f GB/s\n", isa, th, th > 1 ? "s" : "",
               3 * mb / time_impl(&pr_cpu_impl_binary, &t, 2, in, op, th, reps) / 1e9);
    plain_sigmoid(a, o, n);
    tp = 1e30;
    for (int r = 0; r < reps / 4; r++) {
        double t0 = now();
        plain_sigmoid(a, o, n);
        double dt = now() - t0;
        if (dt < tp) tp = dt;
    }
    printf("  bench [%s] Sigmoid f32 4M (2 x 16 MB moved): plain C loop (expf) %.1f GB/s\n", isa,
           2 * mb / tp / 1e9);
    n_init(&t, PR_OP_Sigmoid, "Sigmoid", 13);
    for (int th = 1; th <= 8 && th <= ncpu; th *= 2)
        printf("  bench [%s]   eltwise impl, %d thread%s: %.1f GB/s\n", isa, th, th > 1 ? "s" : "",
               2 * mb / time_impl(&pr_cpu_impl_eltwise, &t, 1, in, op, th, reps) / 1e9);
    for (int i = 0; i < 2; i++) pr_buf_free(&in[i]);
    pr_buf_free(&out);
    /* Reorder plain -> NHWC of 1x64x160x160 (a 2-D transpose per image) */
    const int64_t dims[4] = {1, 64, 160, 160};
    for (int d = 0; d < 2; d++) {
        pr_buf_alloc(&in[0], DTS[d], 4, dims, "x", &e);
        pr_buf_alloc(&out, DTS[d], 4, dims, "y", &e);
        n_init(&t, PR_OP_Reorder, "Reorder", 1);
        t.node.domain = "ai.precis";
        n_str(&t, "to", "nhwc");
        double bytes = 2.0 * (double)in[0].nbytes;
        for (int th = 1; th <= 8 && th <= ncpu; th *= 2)
            printf("  bench [%s] Reorder ->nhwc 1x64x160x160 %s, %d thread%s: %.1f GB/s\n", isa,
                   dn(DTS[d]), th, th > 1 ? "s" : "",
                   bytes / time_impl_l(&pr_cpu_impl_move, &t, 1, in, op, th, reps, false, true) /
                       1e9);
        pr_buf_free(&in[0]);
        pr_buf_free(&out);
    }
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
    const char *v = getenv("PRECIS_TEST_VERBOSE");
    verbose = (v && *v && strcmp(v, "0")) || (argc > 1 && !strcmp(argv[1], "-v"));
    const char *cap = getenv("PRECIS_CPU_ISA");
    isa = pr_cpu_isa_name();
    if (!strcmp(isa, "scalar") || !strcmp(isa, "avx2")) BIG = 100003;
#ifdef PR_TEST_SANITIZED
    BIG = 100003;
#endif
    if (argc > 1 && !strcmp(argv[1], "--bench")) { /* the bandwidth numbers only */
        bench();
        return 0;
    }
    double t0 = now();
#define STEP(f)                                                                                    \
    do {                                                                                           \
        double ts_ = now();                                                                        \
        f();                                                                                       \
        if (verbose) printf("  %-20s %.2f s\n", #f, now() - ts_);                                  \
    } while (0)
    STEP(test_contract);
    STEP(test_math);
    STEP(test_unary);
    STEP(test_unary_special);
    STEP(test_cast);
    STEP(test_binary);
    STEP(test_pow);
    STEP(test_reorder);
    STEP(test_transpose);
    STEP(test_depth_to_space);
    STEP(test_concat);
    STEP(test_slice);
    STEP(test_split);
    STEP(test_reshape);
    STEP(test_inplace);
    if (verbose) bench();
    printf("[%s] %d passed, %d failed in %.1f s\n", isa, n_pass, n_fail, now() - t0);
    int rc = check_report(NULL);
    if (cap) return rc; /* the re-executed (capped) run, or capped by the caller */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("PRECIS_CPU_ISA", "scalar", 1);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the PRECIS_CPU_ISA=scalar run failed\n");
        rc = 1;
    }
    printf("test_cpu_eltwise: %s\n", rc ? "FAILED" : "ok (both ISA paths)");
    return rc;
}
