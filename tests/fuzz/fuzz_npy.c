/* libFuzzer target: .npy parsing from memory. */
#include <stddef.h>
#include <stdint.h>

#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pr_err e = {0};
    precis_tensor *t = NULL;
    precis_status st = pr_npy_parse(data, size, "fuzz.npy", &t, &e);
    if ((st == PRECIS_OK) != (t != NULL)) __builtin_trap();
    if (st != PRECIS_OK && (!e.msg[0] || e.status != st)) __builtin_trap();
    for (const char *p = e.msg; *p; p++)
        if (*p == '\n') __builtin_trap();
    if (t) {
        if (t->b.numel < 0 || t->b.nbytes != (size_t)t->b.numel * pr_dtype_size(t->b.dtype))
            __builtin_trap();
        if (t->b.nbytes) {
            volatile const unsigned char *d = t->b.data;
            (void)d[t->b.nbytes - 1];
        }
    }
    precis_tensor_destroy(t);
    return 0;
}
