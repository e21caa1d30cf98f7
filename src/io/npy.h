/* NumPy .npy reading and writing. */
#ifndef PR_IO_NPY_H
#define PR_IO_NPY_H

#include "runtime/tensor.h"

/* Parse an in-memory .npy file (v1/v2/v3 header; little-endian or
 * byte-order-free dtypes f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1; C order).
 * `what` names the source in messages (e.g. the path). */
precis_status pr_npy_parse(const void *buf, size_t len, const char *what, precis_tensor **out,
                           pr_err *e);
precis_status pr_npy_load(const char *path, precis_tensor **out, pr_err *e);
precis_status pr_npy_save(const char *path, const pr_buf *b, pr_err *e);

#endif
