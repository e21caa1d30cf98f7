/* precis_ctx: where the last error of each call made with it is kept. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/api.h"

#define PR_STR2(x) #x
#define PR_STR(x) PR_STR2(x)

const char *precis_version(void) {
    return PR_STR(PRECIS_VERSION_MAJOR) "." PR_STR(PRECIS_VERSION_MINOR) "." PR_STR(
        PRECIS_VERSION_PATCH);
}

precis_ctx *precis_ctx_create(void) { return calloc(1, sizeof(precis_ctx)); }
void precis_ctx_destroy(precis_ctx *ctx) { free(ctx); }
const char *precis_last_error(const precis_ctx *ctx) { return ctx ? ctx->err.msg : "no context"; }
precis_status precis_last_status(const precis_ctx *ctx) {
    return ctx ? ctx->err.status : PRECIS_ERR_INVALID_ARG;
}

precis_status pr_ctx_fail(precis_ctx *ctx, precis_status st, const char *fmt, ...) {
    if (!ctx) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err.msg, sizeof ctx->err.msg, fmt, ap);
    va_end(ap);
    ctx->err.status = st;
    return st;
}
