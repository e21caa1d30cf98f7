/* Reference kernels for the 'elem' family: arithmetic, unary math and
 * activations, comparisons, logic, Clip, Where and the variadic ops.
 * Cast, Identity, Dropout and (de)quantization are in ref_elem_cast.c.
 *
 * Design. Every op is one C expression over x (and y) in a compute type
 * (float for float32/float16/bfloat16, double for float64, the integer type
 * itself for integers). X-macros over dtype lists instantiate it as a typed
 * "row" function per dtype and a table indexed by dtype; <tgmath.h> makes
 * exp/sqrt/pow/... resolve to the float or double function. A row function
 * processes n elements of one innermost run with per-input element strides
 * (0 or 1 in practice: equal shapes and scalar operands are tight loops).
 * bcast_run() iterates a broadcast output once: it gives every input its
 * numpy-broadcast strides, drops size-1 dims, merges dims that stay
 * contiguous for all operands, and calls the row function per run.
 *
 * Integer semantics without UB: Add/Sub/Mul/Neg/Abs wrap (computed in
 * uint64); division and Mod by 0 give 0 (as numpy); INT_MIN / -1 wraps;
 * shifts by >= the width give 0.
 */
#include <string.h>
#include <tgmath.h>

#include "backends/ref/ref.h"

/* Parameters of a row function (attributes and the like). */
typedef struct eparam {
    pr_dtype da, db; /* generic (double) paths: input dtypes */
    float alpha, beta, gamma, lambd, bias;
    int flag_a, flag_b;
    double d;
    const void *lo, *hi; /* Clip bounds: one element of the input's dtype */
} eparam;

typedef void (*row_fn)(void *o, const void *const *in, const int64_t *s, int64_t n,
                       const eparam *P);

#define NDT (PR_DTYPE_MAX + 1)
#define MAXIN 3

/* ---------------------------------------------------------- dtype X-macros
 * X(tag, dtype, storage type, compute type, load, store, ...) */
#define LD_(v) (v)
#define ST_(v) (v)
#define FLOAT_TYPES(X, ...)                                                                        \
    X(f32, PRECIS_FLOAT32, float, float, LD_, ST_, __VA_ARGS__)                                    \
    X(f64, PRECIS_FLOAT64, double, double, LD_, ST_, __VA_ARGS__)                                  \
    X(f16, PRECIS_FLOAT16, uint16_t, float, pr_f16_to_f32, pr_f32_to_f16, __VA_ARGS__)             \
    X(bf16, PRECIS_BFLOAT16, uint16_t, float, pr_bf16_to_f32, pr_f32_to_bf16, __VA_ARGS__)
#define SINT_TYPES(X, ...)                                                                         \
    X(i8, PRECIS_INT8, int8_t, int8_t, LD_, ST_, __VA_ARGS__)                                      \
    X(i16, PRECIS_INT16, int16_t, int16_t, LD_, ST_, __VA_ARGS__)                                  \
    X(i32, PRECIS_INT32, int32_t, int32_t, LD_, ST_, __VA_ARGS__)                                  \
    X(i64, PRECIS_INT64, int64_t, int64_t, LD_, ST_, __VA_ARGS__)
#define UINT_TYPES(X, ...)                                                                         \
    X(u8, PRECIS_UINT8, uint8_t, uint8_t, LD_, ST_, __VA_ARGS__)                                   \
    X(u16, PRECIS_UINT16, uint16_t, uint16_t, LD_, ST_, __VA_ARGS__)                               \
    X(u32, PRECIS_UINT32, uint32_t, uint32_t, LD_, ST_, __VA_ARGS__)                               \
    X(u64, PRECIS_UINT64, uint64_t, uint64_t, LD_, ST_, __VA_ARGS__)
#define INT_TYPES(X, ...) SINT_TYPES(X, __VA_ARGS__) UINT_TYPES(X, __VA_ARGS__)
#define BOOL_TYPES(X, ...) X(b, PRECIS_BOOL, uint8_t, uint8_t, LD_, ST_, __VA_ARGS__)

/* Output kind K: SAME (the input's dtype) or BOOL. */
#define OT_SAME(S) S
#define OT_BOOL(S) uint8_t
#define OS_SAME(ST, v) ST(v)
#define OS_BOOL(ST, v) ((uint8_t)((v) ? 1 : 0))

/* In expressions: elem_t / comp_t are the storage / compute types, P the
 * parameters, CT(c) a constant in the compute type. */
#define CT(c) ((comp_t)(c))
#define ROW_PROLOGUE(S, C)                                                                         \
    typedef S elem_t;                                                                              \
    typedef C comp_t;                                                                              \
    (void)sizeof(elem_t), (void)sizeof(comp_t), (void)P, (void)s

#define DEF_BIN(tag, E, S, C, LD, ST, op, K, ...)                                                  \
    static void op##_##tag(void *o_, const void *const *in, const int64_t *s, int64_t n,           \
                           const eparam *P) {                                                      \
        ROW_PROLOGUE(S, C);                                                                        \
        OT_##K(S) *o = o_;                                                                         \
        const S *a = in[0], *b = in[1];                                                            \
        if (s[0] == 1 && s[1] == 1) {                                                              \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C x = LD(a[i]), y = LD(b[i]);                                                      \
                o[i] = OS_##K(ST, (__VA_ARGS__));                                                  \
            }                                                                                      \
        } else if (s[0] == 1 && s[1] == 0) {                                                       \
            C y = LD(b[0]);                                                                        \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C x = LD(a[i]);                                                                    \
                o[i] = OS_##K(ST, (__VA_ARGS__));                                                  \
            }                                                                                      \
        } else if (s[0] == 0 && s[1] == 1) {                                                       \
            C x = LD(a[0]);                                                                        \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C y = LD(b[i]);                                                                    \
                o[i] = OS_##K(ST, (__VA_ARGS__));                                                  \
            }                                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C x = LD(a[i * s[0]]), y = LD(b[i * s[1]]);                                        \
                o[i] = OS_##K(ST, (__VA_ARGS__));                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#define DEF_UN(tag, E, S, C, LD, ST, op, K, ...)                                                   \
    static void op##_##tag(void *o_, const void *const *in, const int64_t *s, int64_t n,           \
                           const eparam *P) {                                                      \
        ROW_PROLOGUE(S, C);                                                                        \
        OT_##K(S) *o = o_;                                                                         \
        const S *a = in[0];                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                          \
            C x = LD(a[i]);                                                                        \
            o[i] = OS_##K(ST, (__VA_ARGS__));                                                      \
        }                                                                                          \
    }

#define ENT(tag, E, S, C, LD, ST, op, ...) [E] = op##_##tag,
/* BIN(class, Op, K, expr): define Op's row functions for a dtype class. */
#define BIN(cls, op, K, ...) cls##_TYPES(DEF_BIN, op, K, __VA_ARGS__)
#define UN(cls, op, K, ...) cls##_TYPES(DEF_UN, op, K, __VA_ARGS__)
/* TAB(Op, ENTS(class, Op) ...): the dtype -> row function table tab_Op. */
#define TAB(op, ...) static const row_fn tab_##op[NDT] = {__VA_ARGS__};
#define ENTS(cls, op) cls##_TYPES(ENT, op, 0)

static inline float clamp01f(float v) { return v < 0 ? 0 : v > 1 ? 1 : v; }
static inline double clamp01d(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }
#define CLAMP01(v) _Generic((v), double: clamp01d, default: clamp01f)(v)

/* Python-style (floored) remainder: the sign of the divisor. */
static inline int64_t pymod(int64_t x, int64_t y) {
    if (y == 0 || y == -1) return 0;
    int64_t r = x % y;
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

/* Wrapping integer power (numpy semantics); negative exponents truncate. */
static uint64_t ipow(int64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? UINT64_MAX : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    for (; e; e >>= 1, x *= x)
        if (e & 1) r *= x;
    return r;
}

#define WRAP(op) (elem_t)((uint64_t)x op(uint64_t) y)

/* ------------------------------------------------------------- arithmetic */
BIN(FLOAT, Add, SAME, x + y)
BIN(INT, Add, SAME, WRAP(+))
TAB(Add, ENTS(FLOAT, Add) ENTS(INT, Add))
BIN(FLOAT, Sub, SAME, x - y)
BIN(INT, Sub, SAME, WRAP(-))
TAB(Sub, ENTS(FLOAT, Sub) ENTS(INT, Sub))
BIN(FLOAT, Mul, SAME, x * y)
BIN(INT, Mul, SAME, WRAP(*))
TAB(Mul, ENTS(FLOAT, Mul) ENTS(INT, Mul))
BIN(FLOAT, Div, SAME, x / y)
BIN(SINT, Div, SAME, y == 0 ? 0 : y == -1 ? (elem_t)(0 - (uint64_t)x) : (elem_t)(x / y))
BIN(UINT, Div, SAME, y == 0 ? 0 : (elem_t)(x / y))
TAB(Div, ENTS(FLOAT, Div) ENTS(INT, Div))
BIN(SINT, Mod, SAME, (elem_t)pymod(x, y))
BIN(UINT, Mod, SAME, y == 0 ? 0 : (elem_t)(x % y))
TAB(Mod, ENTS(INT, Mod))
BIN(FLOAT, FMod, SAME, fmod(x, y))
BIN(SINT, FMod, SAME, (y == 0 || y == -1) ? 0 : (elem_t)(x % y))
BIN(UINT, FMod, SAME, y == 0 ? 0 : (elem_t)(x % y))
TAB(FMod, ENTS(FLOAT, FMod) ENTS(INT, FMod))
BIN(FLOAT, Pow, SAME, pow(x, y))
TAB(Pow, ENTS(FLOAT, Pow))
BIN(FLOAT, Min, SAME, (x < y || x != x) ? x : y)
BIN(INT, Min, SAME, x < y ? x : y)
TAB(Min, ENTS(FLOAT, Min) ENTS(INT, Min))
BIN(FLOAT, Max, SAME, (x > y || x != x) ? x : y)
BIN(INT, Max, SAME, x > y ? x : y)
TAB(Max, ENTS(FLOAT, Max) ENTS(INT, Max))
BIN(FLOAT, PRelu, SAME, x < 0 ? x * y : x)
BIN(SINT, PRelu, SAME, x < 0 ? WRAP(*) : x)
BIN(UINT, PRelu, SAME, ((void)y, x))
TAB(PRelu, ENTS(FLOAT, PRelu) ENTS(INT, PRelu))
BIN(UINT, Shl, SAME, (uint64_t)y >= 8 * sizeof(elem_t) ? 0 : (elem_t)((uint64_t)x << y))
BIN(UINT, Shr, SAME, (uint64_t)y >= 8 * sizeof(elem_t) ? 0 : (elem_t)(x >> y))
TAB(Shl, ENTS(UINT, Shl))
TAB(Shr, ENTS(UINT, Shr))

/* ------------------------------------------------------ comparison, logic */
BIN(FLOAT, Equal, BOOL, x == y)
BIN(INT, Equal, BOOL, x == y)
BIN(BOOL, Equal, BOOL, (x != 0) == (y != 0))
TAB(Equal, ENTS(FLOAT, Equal) ENTS(INT, Equal) ENTS(BOOL, Equal))
#define CMP(op, expr)                                                                              \
    BIN(FLOAT, op, BOOL, expr)                                                                     \
    BIN(INT, op, BOOL, expr)                                                                       \
    TAB(op, ENTS(FLOAT, op) ENTS(INT, op))
CMP(Less, x < y)
CMP(LessOrEqual, x <= y)
CMP(Greater, x > y)
CMP(GreaterOrEqual, x >= y)
BIN(BOOL, And, SAME, (uint8_t)((x != 0) & (y != 0)))
BIN(BOOL, Or, SAME, (uint8_t)((x != 0) | (y != 0)))
BIN(BOOL, Xor, SAME, (uint8_t)((x != 0) ^ (y != 0)))
TAB(And, ENTS(BOOL, And))
TAB(Or, ENTS(BOOL, Or))
TAB(Xor, ENTS(BOOL, Xor))
UN(BOOL, Not, SAME, (uint8_t)(x == 0))
TAB(Not, ENTS(BOOL, Not))
UN(FLOAT, IsNaN, BOOL, x != x)
TAB(IsNaN, ENTS(FLOAT, IsNaN))
UN(FLOAT, IsInf, BOOL, isinf(x) && (x > 0 ? P->flag_a : P->flag_b))
TAB(IsInf, ENTS(FLOAT, IsInf))

/* ------------------------------------------------------------------ unary */
#define FUN(op, expr)                                                                              \
    UN(FLOAT, op, SAME, expr)                                                                      \
    TAB(op, ENTS(FLOAT, op))
FUN(Sqrt, sqrt(x))
FUN(Exp, exp(x))
FUN(Log, log(x))
FUN(Reciprocal, CT(1) / x)
FUN(Floor, floor(x))
FUN(Ceil, ceil(x))
FUN(Round, nearbyint(x)) /* half to even in the default rounding mode */
FUN(Sin, sin(x))
FUN(Cos, cos(x))
FUN(Tan, tan(x))
FUN(Asin, asin(x))
FUN(Acos, acos(x))
FUN(Atan, atan(x))
FUN(Sinh, sinh(x))
FUN(Cosh, cosh(x))
FUN(Asinh, asinh(x))
FUN(Acosh, acosh(x))
FUN(Atanh, atanh(x))
FUN(Tanh, tanh(x))
FUN(Sigmoid, CT(1) / (CT(1) + exp(-x)))
FUN(LeakyRelu, x < 0 ? P->alpha * x : x)
FUN(Elu, x < 0 ? P->alpha * expm1(x) : x)
FUN(Selu, x > 0 ? P->gamma * x : P->gamma * (P->alpha * exp(x) - P->alpha))
FUN(Celu, x > 0 ? x : P->alpha * expm1(x / P->alpha))
#define SOFTPLUS(x) ((x) > 0 ? (x) + log1p(exp(-(x))) : log1p(exp(x)))
FUN(Softplus, SOFTPLUS(x))
FUN(Mish, x * tanh(SOFTPLUS(x)))
FUN(Softsign, x / (CT(1) + fabs(x)))
FUN(ThresholdedRelu, x > P->alpha ? x : CT(0))
FUN(HardSigmoid, CLAMP01(P->alpha * x + P->beta))
FUN(HardSwish, x * CLAMP01(x * CT(1.0 / 6.0) + CT(0.5)))
FUN(Gelu, P->flag_a ? CT(0.5) * x *
                          (CT(1) + tanh(CT(0.7978845608028654) * (x + CT(0.044715) * x * x * x)))
                    : CT(0.5) * x * (CT(1) + erf(x * CT(0.70710678118654752))))
FUN(DivD, x / (comp_t)P->d) /* Mean: divide by n */
UN(FLOAT, Erf, SAME, erf(x))
TAB(Erf, ENTS(FLOAT, Erf))
UN(FLOAT, Shrink, SAME, x < -P->lambd ? x + P->bias : x > P->lambd ? x - P->bias : CT(0))
TAB(Shrink, ENTS(FLOAT, Shrink))
UN(FLOAT, Neg, SAME, -x)
UN(SINT, Neg, SAME, (elem_t)(0 - (uint64_t)x))
TAB(Neg, ENTS(FLOAT, Neg) ENTS(SINT, Neg))
UN(FLOAT, Abs, SAME, fabs(x))
UN(SINT, Abs, SAME, x < 0 ? (elem_t)(0 - (uint64_t)x) : x)
UN(UINT, Abs, SAME, x)
TAB(Abs, ENTS(FLOAT, Abs) ENTS(INT, Abs))
UN(FLOAT, Sign, SAME, x > 0 ? CT(1) : x < 0 ? CT(-1) : x) /* NaN stays NaN */
UN(SINT, Sign, SAME, (x > 0) - (x < 0))
UN(UINT, Sign, SAME, x > 0)
TAB(Sign, ENTS(FLOAT, Sign) ENTS(INT, Sign))
UN(FLOAT, Relu, SAME, x < 0 ? CT(0) : x) /* NaN stays NaN */
UN(SINT, Relu, SAME, x < 0 ? 0 : x)
TAB(Relu, ENTS(FLOAT, Relu) ENTS(SINT, Relu))

/* Clip: bounds are elements of the input's dtype; NaN passes through. */
#define DEF_CLIP(tag, E, S, C, LD, ST, op, ...)                                                    \
    static void Clip_##tag(void *o_, const void *const *in, const int64_t *s, int64_t n,           \
                           const eparam *P) {                                                      \
        S *o = o_;                                                                                 \
        const S *a = in[0];                                                                        \
        (void)s;                                                                                   \
        C lo = P->lo ? LD(*(const S *)P->lo) : 0, hi = P->hi ? LD(*(const S *)P->hi) : 0;          \
        if (P->lo && P->hi) {                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C x = LD(a[i]);                                                                    \
                x = x < lo ? lo : x;                                                               \
                o[i] = ST(x > hi ? hi : x);                                                        \
            }                                                                                      \
        } else if (P->lo) {                                                                        \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C x = LD(a[i]);                                                                    \
                o[i] = ST(x < lo ? lo : x);                                                        \
            }                                                                                      \
        } else if (P->hi) {                                                                        \
            for (int64_t i = 0; i < n; i++) {                                                      \
                C x = LD(a[i]);                                                                    \
                o[i] = ST(x > hi ? hi : x);                                                        \
            }                                                                                      \
        } else if (o != a) {                                                                       \
            memcpy(o, a, (size_t)n * sizeof(S));                                                   \
        }                                                                                          \
    }
FLOAT_TYPES(DEF_CLIP, 0)
INT_TYPES(DEF_CLIP, 0)
TAB(Clip, ENTS(FLOAT, Clip) ENTS(INT, Clip))

/* Where: by element size. */
#define DEF_WHERE(T)                                                                               \
    static void where_##T(void *o_, const void *const *in, const int64_t *s, int64_t n,            \
                          const eparam *P) {                                                       \
        T *o = o_;                                                                                 \
        const uint8_t *c = in[0];                                                                  \
        const T *x = in[1], *y = in[2];                                                            \
        (void)P;                                                                                   \
        for (int64_t i = 0; i < n; i++) o[i] = c[i * s[0]] ? x[i * s[1]] : y[i * s[2]];           \
    }
DEF_WHERE(uint8_t)
DEF_WHERE(uint16_t)
DEF_WHERE(uint32_t)
DEF_WHERE(uint64_t)

/* Generic slow paths through double (rare dtype combinations). */
static void pow_f64(void *o, const void *const *in, const int64_t *s, int64_t n, const eparam *P) {
    for (int64_t i = 0; i < n; i++)
        pr_store_f64(o, P->da, i,
                     pow(pr_load_f64(in[0], P->da, i * s[0]), pr_load_f64(in[1], P->db, i * s[1])));
}

static void pow_int(void *o, const void *const *in, const int64_t *s, int64_t n, const eparam *P) {
    for (int64_t i = 0; i < n; i++) {
        int64_t b = pr_load_i64(in[0], P->da, i * s[0]), e = pr_load_i64(in[1], P->db, i * s[1]);
        pr_store_u64_wrap(o, P->da, i, ipow(b, e));
    }
}

static double f_erf(double x, const eparam *P) {
    (void)P;
    return erf(x);
}

static double f_shrink(double x, const eparam *P) {
    return x < -P->lambd ? x + P->bias : x > P->lambd ? x - P->bias : 0;
}

/* ----------------------------------------------------------------- driver */

/* Iterate the output `o` once; input j has data[j], element size esz[j] and
 * dims (rank[j], dims[j]) broadcast (numpy rules) to o's dims. */
static void bcast_run(pr_buf *o, int nin, const void *const *data, const size_t *esz,
                      const int *rank, const int64_t *const *dims, row_fn fn, const eparam *p) {
    int r = o->rank, nr = 0;
    int64_t st[MAXIN][PR_MAX_RANK], cd[PR_MAX_RANK], cs[MAXIN][PR_MAX_RANK];
    if (o->numel <= 0) return;
    for (int j = 0; j < nin; j++) {
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int jd = d - (r - rank[j]);
            int64_t dim = jd >= 0 ? dims[j][jd] : 1;
            st[j][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    /* innermost first: drop size-1 dims, merge a dim into the run inside it
     * when every operand stays contiguous (or stays broadcast) across it */
    for (int d = r - 1; d >= 0; d--) {
        if (o->dims[d] == 1) continue;
        bool merge = nr > 0;
        for (int j = 0; merge && j < nin; j++) merge = st[j][d] == cs[j][nr - 1] * cd[nr - 1];
        if (merge) {
            cd[nr - 1] *= o->dims[d];
            continue;
        }
        cd[nr] = o->dims[d];
        for (int j = 0; j < nin; j++) cs[j][nr] = st[j][d];
        nr++;
    }
    if (nr == 0) {
        cd[0] = 1;
        for (int j = 0; j < nin; j++) cs[j][0] = 0;
        nr = 1;
    }
    int64_t n = cd[0], rows = o->numel / n, idx[PR_MAX_RANK] = {0}, off[MAXIN] = {0}, s0[MAXIN];
    for (int j = 0; j < nin; j++) s0[j] = cs[j][0];
    char *out = o->data;
    size_t oes = pr_dtype_size(o->dtype);
    for (int64_t row = 0; row < rows; row++) {
        const void *ptr[MAXIN];
        for (int j = 0; j < nin; j++) ptr[j] = (const char *)data[j] + off[j] * (int64_t)esz[j];
        fn(out + (size_t)(row * n) * oes, ptr, s0, n, p);
        for (int d = 1; d < nr; d++) {
            for (int j = 0; j < nin; j++) off[j] += cs[j][d];
            if (++idx[d] < cd[d]) break;
            for (int j = 0; j < nin; j++) off[j] -= cs[j][d] * cd[d];
            idx[d] = 0;
        }
    }
}

static precis_status bad_dtype(pr_kernel *k, pr_dtype dt) {
    return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "dtype %s is not supported", pr_dtype_name(dt));
}

static row_fn pick(const row_fn *tab, pr_dtype dt) {
    return (int)dt > 0 && (int)dt < NDT ? tab[dt] : NULL;
}

/* o = fn(a, b) broadcast. Opset < 7 with broadcast=1 and an explicit axis:
 * b is aligned with a at axis (trailing dims padded with 1). */
static void run2(const pr_kernel *k, pr_buf *o, const pr_buf *a, const pr_buf *b, row_fn fn,
                 const eparam *p) {
    int rb = b->rank;
    int64_t db[PR_MAX_RANK];
    if (rb > 0) memcpy(db, b->dims, (size_t)rb * sizeof(int64_t));
    const pr_attr *ax = NULL;
    /* PRelu before opset 7 applies a 1-D slope per channel (axis 1). */
    bool prelu_legacy = k->node->op == PR_OP_PRelu && k->node->opset < 7 && rb == 1 &&
                        a->rank >= 2 && b->dims[0] == a->dims[1] && b->dims[0] != 1;
    if (prelu_legacy || (k->node->opset < 7 && pr_attr_int(k->node, "broadcast", 0) &&
                         (ax = pr_attr_find(k->node, "axis")))) {
        int64_t axis = prelu_legacy ? 1 : ax->i < 0 ? ax->i + a->rank : ax->i;
        if (axis >= 0 && a->rank - axis >= rb) {
            for (int j = rb; j < a->rank - axis; j++) db[j] = 1;
            rb = (int)(a->rank - axis);
        }
    }
    const void *data[2] = {a->data, b->data};
    size_t esz[2] = {pr_dtype_size(a->dtype), pr_dtype_size(b->dtype)};
    int rank[2] = {a->rank, rb};
    const int64_t *dims[2] = {a->dims, db};
    bcast_run(o, 2, data, esz, rank, dims, fn, p);
}

static precis_status binary(pr_kernel *k, const row_fn *tab, const eparam *p) {
    const pr_buf *a = pr_kin(k, 0), *b = pr_kin(k, 1);
    row_fn fn = pick(tab, a->dtype);
    if (!fn) return bad_dtype(k, a->dtype);
    run2(k, k->out[0], a, b, fn, p);
    return PRECIS_OK;
}

static const int64_t k_unit_strides[MAXIN] = {1, 1, 1};

static precis_status unary(pr_kernel *k, const row_fn *tab, const eparam *p) {
    const pr_buf *x = pr_kin(k, 0);
    row_fn fn = pick(tab, x->dtype);
    if (!fn) return bad_dtype(k, x->dtype);
    const void *in[1] = {x->data};
    fn(k->out[0]->data, in, k_unit_strides, x->numel, p);
    return PRECIS_OK;
}

/* Unary op with a typed float path and a double path for other types. */
static precis_status unary_or_f64(pr_kernel *k, const row_fn *tab, const eparam *p,
                                  double (*f)(double, const eparam *)) {
    const pr_buf *x = pr_kin(k, 0);
    if (pick(tab, x->dtype)) return unary(k, tab, p);
    pr_buf *y = k->out[0];
    for (int64_t i = 0; i < x->numel; i++)
        pr_store_f64(y->data, y->dtype, i, f(pr_load_f64(x->data, x->dtype, i), p));
    return PRECIS_OK;
}

/* Min, Max, Sum, Mean: fold the inputs pairwise into the output. */
static precis_status variadic(pr_kernel *k, const row_fn *tab, bool mean) {
    pr_buf *o = k->out[0];
    for (int i = 0; i < k->n_in; i++)
        if (!k->in[i]) return pr_kernelf(k, PRECIS_ERR_INVALID_ARG, "input %d is missing", i);
    row_fn fn = pick(tab, o->dtype);
    if (!fn) return bad_dtype(k, o->dtype);
    if (k->n_in == 1) {
        if (o->nbytes) memcpy(o->data, k->in[0]->data, o->nbytes);
    } else {
        run2(k, o, k->in[0], k->in[1], fn, NULL);
        for (int i = 2; i < k->n_in; i++) run2(k, o, o, k->in[i], fn, NULL);
    }
    if (mean && k->n_in > 1) {
        eparam p = {.d = k->n_in};
        const void *in[1] = {o->data};
        if (!(fn = pick(tab_DivD, o->dtype))) return bad_dtype(k, o->dtype);
        fn(o->data, in, k_unit_strides, o->numel, &p);
    }
    return PRECIS_OK;
}

/* ---------------------------------------------------------------- kernels */

#define BINARY_K(op)                                                                               \
    precis_status ref_##op(pr_kernel *k) { return binary(k, tab_##op, NULL); }
BINARY_K(Add)
BINARY_K(Sub)
BINARY_K(Mul)
BINARY_K(Div)
BINARY_K(PRelu)
BINARY_K(Equal)
BINARY_K(Less)
BINARY_K(LessOrEqual)
BINARY_K(Greater)
BINARY_K(GreaterOrEqual)
BINARY_K(And)
BINARY_K(Or)
BINARY_K(Xor)

precis_status ref_Mod(pr_kernel *k) {
    return binary(k, pr_attr_int(k->node, "fmod", 0) ? tab_FMod : tab_Mod, NULL);
}

precis_status ref_BitShift(pr_kernel *k) {
    bool left = strcmp(pr_attr_str(k->node, "direction", ""), "LEFT") == 0;
    return binary(k, left ? tab_Shl : tab_Shr, NULL);
}

precis_status ref_Pow(pr_kernel *k) {
    const pr_buf *a = pr_kin(k, 0), *b = pr_kin(k, 1);
    eparam p = {.da = a->dtype, .db = b->dtype};
    const pr_dtype_traits *ta = pr_dtype_info(a->dtype), *tb = pr_dtype_info(b->dtype);
    if (a->dtype == b->dtype && pick(tab_Pow, a->dtype)) return binary(k, tab_Pow, NULL);
    if (!ta->size || !tb->size || a->dtype == PRECIS_BOOL || b->dtype == PRECIS_BOOL)
        return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "Pow of %s by %s is not supported",
                          pr_dtype_name(a->dtype), pr_dtype_name(b->dtype));
    run2(k, k->out[0], a, b, ta->is_int && tb->is_int ? pow_int : pow_f64, &p);
    return PRECIS_OK;
}

precis_status ref_Min(pr_kernel *k) { return variadic(k, tab_Min, false); }
precis_status ref_Max(pr_kernel *k) { return variadic(k, tab_Max, false); }
precis_status ref_Sum(pr_kernel *k) { return variadic(k, tab_Add, false); }
precis_status ref_Mean(pr_kernel *k) { return variadic(k, tab_Add, true); }

/* Unary kernels; the initializers may read the node's attributes. */
#define UNARY_K(op, ...)                                                                           \
    precis_status ref_##op(pr_kernel *k) {                                                         \
        eparam p = {__VA_ARGS__};                                                                  \
        return unary(k, tab_##op, &p);                                                             \
    }
#define UNARY0(op)                                                                                 \
    precis_status ref_##op(pr_kernel *k) { return unary(k, tab_##op, NULL); }
#define ATTR(name, def) pr_attr_float(k->node, name, def)
UNARY0(Sqrt)
UNARY0(Exp)
UNARY0(Log)
UNARY0(Neg)
UNARY0(Abs)
UNARY0(Reciprocal)
UNARY0(Floor)
UNARY0(Ceil)
UNARY0(Round)
UNARY0(Sign)
UNARY0(Sin)
UNARY0(Cos)
UNARY0(Tan)
UNARY0(Asin)
UNARY0(Acos)
UNARY0(Atan)
UNARY0(Sinh)
UNARY0(Cosh)
UNARY0(Asinh)
UNARY0(Acosh)
UNARY0(Atanh)
UNARY0(Tanh)
UNARY0(Sigmoid)
UNARY0(Relu)
UNARY0(Softplus)
UNARY0(Softsign)
UNARY0(Mish)
UNARY0(HardSwish)
UNARY0(Not)
UNARY0(IsNaN)
UNARY_K(LeakyRelu, .alpha = ATTR("alpha", 0.01f))
UNARY_K(Elu, .alpha = ATTR("alpha", 1.0f))
UNARY_K(Selu, .alpha = ATTR("alpha", 1.67326319217681884765625f),
        .gamma = ATTR("gamma", 1.05070102214813232421875f))
UNARY_K(Celu, .alpha = ATTR("alpha", 1.0f))
UNARY_K(ThresholdedRelu, .alpha = ATTR("alpha", 1.0f))
UNARY_K(HardSigmoid, .alpha = ATTR("alpha", 0.2f), .beta = ATTR("beta", 0.5f))
UNARY_K(Gelu, .flag_a = strcmp(pr_attr_str(k->node, "approximate", "none"), "tanh") == 0)
UNARY_K(IsInf, .flag_a = (int)pr_attr_int(k->node, "detect_positive", 1),
        .flag_b = (int)pr_attr_int(k->node, "detect_negative", 1))

precis_status ref_Erf(pr_kernel *k) { return unary_or_f64(k, tab_Erf, NULL, f_erf); }

precis_status ref_Shrink(pr_kernel *k) {
    eparam p = {.lambd = ATTR("lambd", 0.5f), .bias = ATTR("bias", 0.0f)};
    return unary_or_f64(k, tab_Shrink, &p, f_shrink);
}

precis_status ref_Clip(pr_kernel *k) {
    const pr_buf *x = pr_kin(k, 0);
    eparam p = {0};
    union {
        double f64;
        float f32;
        uint16_t u16;
    } lo, hi; /* Clip-1/6: attribute bounds converted to x's (float) dtype */
    if (k->node->opset < 11) {
        const pr_attr *mn = pr_attr_find(k->node, "min"), *mx = pr_attr_find(k->node, "max");
        if (mn) {
            pr_store_f64(&lo, x->dtype, 0, mn->f);
            p.lo = &lo;
        }
        if (mx) {
            pr_store_f64(&hi, x->dtype, 0, mx->f);
            p.hi = &hi;
        }
    } else {
        for (int i = 1; i <= 2; i++) {
            const pr_buf *b = pr_kin(k, i);
            if (!b) continue;
            if (b->numel != 1 || b->dtype != x->dtype)
                return pr_kernelf(k, PRECIS_ERR_INVALID_ARG,
                                  "%s must be a scalar of dtype %s, got %lld elements of %s",
                                  i == 1 ? "min" : "max", pr_dtype_name(x->dtype),
                                  (long long)b->numel, pr_dtype_name(b->dtype));
            *(i == 1 ? &p.lo : &p.hi) = b->data;
        }
    }
    return unary(k, tab_Clip, &p);
}

precis_status ref_Where(pr_kernel *k) {
    const pr_buf *c = pr_kin(k, 0), *x = pr_kin(k, 1), *y = pr_kin(k, 2);
    size_t es = pr_dtype_size(x->dtype);
    row_fn fn = es == 1 ? where_uint8_t : es == 2 ? where_uint16_t : es == 4 ? where_uint32_t
              : es == 8 ? where_uint64_t : NULL;
    if (!fn || c->dtype != PRECIS_BOOL) return bad_dtype(k, fn ? c->dtype : x->dtype);
    const void *data[3] = {c->data, x->data, y->data};
    size_t esz[3] = {1, es, es};
    int rank[3] = {c->rank, x->rank, y->rank};
    const int64_t *dims[3] = {c->dims, x->dims, y->dims};
    bcast_run(k->out[0], 3, data, esz, rank, dims, fn, NULL);
    return PRECIS_OK;
}
