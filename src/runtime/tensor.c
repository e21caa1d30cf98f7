#include "runtime/tensor.h"

#include <stdlib.h>
#include <string.h>

#include "io/npy.h"
#include "onnx/onnx_import.h"
#include "runtime/api.h"

precis_status pr_buf_alloc(pr_buf *b, pr_dtype dt, int rank, const int64_t *dims,
                           const char *what, pr_err *e) {
    memset(b, 0, sizeof *b);
    size_t es = pr_dtype_size(dt);
    if (!es)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: dtype %s has no fixed-size storage", what,
                       pr_dtype_name(dt));
    if (rank < 0 || rank > PR_MAX_RANK)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: rank %d not supported (max %d)", what, rank,
                       PR_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return pr_errf(e, PRECIS_ERR_SHAPE, "%s: dim %d is %lld (must be >= 0)", what, i,
                           (long long)dims[i]);
    int64_t n = pr_numel(rank, dims);
    if (n < 0 || (uint64_t)n > PR_MAX_TENSOR_BYTES / es)
        return pr_errf(e, PRECIS_ERR_OOM, "%s: %d-dim shape holds too many elements (limit %zu bytes)",
                       what, rank, PR_MAX_TENSOR_BYTES);
    size_t nbytes = (size_t)n * es;
    size_t alloc = (nbytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, alloc ? alloc : 64);
    if (!p) return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory allocating %zu bytes", what, nbytes);
    memset(p, 0, alloc ? alloc : 64);
    b->dtype = dt;
    b->rank = rank;
    if (rank) memcpy(b->dims, dims, (size_t)rank * sizeof *dims);
    b->numel = n;
    b->nbytes = nbytes;
    b->data = p;
    return PRECIS_OK;
}

void pr_buf_free(pr_buf *b) {
    if (!b) return;
    free(b->data);
    b->data = NULL;
}

precis_status pr_tensor_new(pr_dtype dt, int rank, const int64_t *dims, const char *what,
                            precis_tensor **out, pr_err *e) {
    *out = NULL;
    precis_tensor *t = calloc(1, sizeof *t);
    if (!t) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    precis_status st = pr_buf_alloc(&t->b, dt, rank, dims, what, e);
    if (st) {
        free(t);
        return st;
    }
    *out = t;
    return PRECIS_OK;
}

precis_status precis_tensor_create(precis_ctx *ctx, precis_dtype dt, int rank,
                                   const int64_t *dims, precis_tensor **out) {
    if (!ctx || !out || (rank > 0 && !dims))
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_tensor_create: NULL argument");
    pr_err_clear(&ctx->err);
    return pr_tensor_new(dt, rank, dims, "tensor", out, &ctx->err);
}

void precis_tensor_destroy(precis_tensor *t) {
    if (!t) return;
    pr_buf_free(&t->b);
    free(t);
}

precis_dtype precis_tensor_dtype(const precis_tensor *t) { return t->b.dtype; }
int precis_tensor_rank(const precis_tensor *t) { return t->b.rank; }
const int64_t *precis_tensor_dims(const precis_tensor *t) { return t->b.dims; }
int64_t precis_tensor_numel(const precis_tensor *t) { return t->b.numel; }
size_t precis_tensor_nbytes(const precis_tensor *t) { return t->b.nbytes; }
void *precis_tensor_data(precis_tensor *t) { return t->b.data; }
const void *precis_tensor_data_const(const precis_tensor *t) { return t->b.data; }

precis_status precis_tensor_load_npy(precis_ctx *ctx, const char *path, precis_tensor **out) {
    if (!ctx || !path || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_tensor_load_npy: NULL argument");
    pr_err_clear(&ctx->err);
    return pr_npy_load(path, out, &ctx->err);
}

precis_status precis_tensor_save_npy(precis_ctx *ctx, const precis_tensor *t, const char *path) {
    if (!ctx || !t || !path)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_tensor_save_npy: NULL argument");
    pr_err_clear(&ctx->err);
    return pr_npy_save(path, &t->b, &ctx->err);
}

precis_status precis_tensor_load_pb(precis_ctx *ctx, const char *path, precis_tensor **out) {
    if (!ctx || !path || !out)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_tensor_load_pb: NULL argument");
    pr_err_clear(&ctx->err);
    return pr_onnx_load_tensor_file(path, out, &ctx->err);
}
