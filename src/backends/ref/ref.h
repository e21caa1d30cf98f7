/* The reference backend: portable C11 kernels, the oracle every fast kernel
 * is checked against. Clarity over speed, but no gratuitous slowness (a
 * 640x640 PP-OCR detection must run in seconds).
 *
 * Each op in ops.inc has   precis_status ref_<Op>(pr_kernel *k);
 * The executor has already run pr_infer_<Op> on the concrete inputs and
 * allocated every output with the inferred dtype and dims; the kernel fills
 * out[i]->data. Kernels must handle any dtype the ONNX spec allows that is
 * practical (at least float32, and the integer/bool types the op needs;
 * float16/float64 where ONNX tests use them) and fail with pr_kernelf(...,
 * PRECIS_ERR_UNSUPPORTED, "...") naming what is missing otherwise.
 */
#ifndef PR_BACKENDS_REF_REF_H
#define PR_BACKENDS_REF_REF_H

#include "ir/graph.h"

typedef struct pr_buf {
    pr_dtype dtype;
    int rank;
    int64_t dims[PR_MAX_RANK];
    int64_t numel;
    void *data;    /* numel * pr_dtype_size(dtype) bytes, 64-byte aligned */
    size_t nbytes;
} pr_buf;

typedef struct pr_kernel {
    const pr_graph *g;
    const pr_node *node;
    int n_in;
    const pr_buf *const *in; /* in[i] == NULL for an omitted optional input */
    int n_out;
    pr_buf *const *out;      /* out[i] == NULL for an omitted optional output */
    pr_err *err;
    int num_threads;
} pr_kernel;

typedef precis_status (*pr_kernel_fn)(pr_kernel *k);

#define PR_OP(name, family) precis_status ref_##name(pr_kernel *k);
#include "ir/ops.inc"
#undef PR_OP

extern const pr_kernel_fn pr_ref_table[PR_OP_COUNT];

/* Fails with "node 'name' (Op): <message>". Returns the status. */
precis_status pr_kernelf(pr_kernel *k, precis_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Present input i or NULL. */
static inline const pr_buf *pr_kin(const pr_kernel *k, int i) {
    return i < k->n_in ? k->in[i] : NULL;
}

/* Normalise an axis in [-rank, rank) to [0, rank) into *out; fails (SHAPE)
 * with "axis A out of range for rank R" otherwise (as pr_infer_axis). */
precis_status pr_kernel_axis(pr_kernel *k, int64_t axis, int rank, int *out);

/* Row-major strides (in elements) of dims. */
void pr_strides(int rank, const int64_t *dims, int64_t *strides);
/* Strides of `in` broadcast to an output of rank out_rank/out_dims: 0 where the
 * input dim is 1 (or missing on the left). */
void pr_bcast_strides(const pr_buf *in, int out_rank, const int64_t *out_dims, int64_t *strides);

/* Geometry of an Attention node (ops.inc), shared by ref_Attention and the
 * fast kernels. Operands o = 0..3 are Q, K, V, M (M absent: has_mask false,
 * its strides 0). Sq, Sk are the rows and columns of the scores after the
 * mask's broadcast. The leading dims of Y (nbd of them, nb elements in all)
 * are the broadcast batch; bst[o] holds operand o's element strides along
 * them, rs[o] / cs[o] its strides along its last two dims as broadcast to
 * Q [Sq, D], K [Sk, D] (kt false) or [D, Sk] (kt true), V [Sk, Dv],
 * M [Sq, Sk]: 0 where the operand has 1 there. */
typedef struct pr_attn_geom {
    int nbd;
    int64_t bdims[PR_MAX_RANK], nb;
    int64_t Sq, Sk, D, Dv;
    bool kt, has_mask;
    float scale;
    int64_t bst[4][PR_MAX_RANK];
    int64_t rs[4], cs[4];
    int64_t ybst[PR_MAX_RANK], yrs; /* Y's batch and row strides (its columns contiguous) */
    int64_t off0[3]; /* element offsets of Q, K, V in their buffers (qkv_heads: 0, HD, 2HD) */
} pr_attn_geom;

/* Fills a from the node and its input / output buffers; fails (SHAPE)
 * naming the mismatch. */
precis_status pr_attn_geom_of(pr_kernel *k, pr_attn_geom *a);
/* Element offsets of Q, K, V, M for flat batch index b in [0, nb). */
void pr_attn_offsets(const pr_attn_geom *a, int64_t b, int64_t off[4]);
/* Element offset of Y's rows of flat batch index b. */
int64_t pr_attn_yoff(const pr_attn_geom *a, int64_t b);

/* n elements of a numeric buffer of dtype dt as float (int64/uint64/float64
 * values rounded to float). */
void pr_ref_to_f32(const void *src, pr_dtype dt, int64_t n, float *dst);
/* n floats into a buffer of dtype dt: float types rounded to nearest even;
 * int8/uint8 rounded to nearest even and saturated (NaN gives 0); other
 * integer types as pr_store_f64 (truncated, saturated). */
void pr_ref_from_f32(const float *src, int64_t n, pr_dtype dt, void *dst);
/* n elements of x (dtype xdt) quantized to e4m3 with scale s, exactly as
 * ref's QuantizeLinear (zero point 0): e4m3(x / s), nearest even, saturated. */
void pr_ref_quant_e4m3(const void *x, pr_dtype xdt, int64_t n, float s, uint8_t *q);

#endif
