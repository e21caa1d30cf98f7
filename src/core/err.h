/* Error reporting inside the library: a status code plus a one-line message.
 * Every internal function that can fail takes a pr_err* and returns the code
 * set with pr_errf(). The public precis_ctx owns one pr_err. */
#ifndef PR_CORE_ERR_H
#define PR_CORE_ERR_H

#include "precis/precis.h"

#define PR_ERR_MSG_MAX 1024

typedef struct pr_err {
    precis_status status;
    char msg[PR_ERR_MSG_MAX];
} pr_err;

/* Sets status and message (printf-style) and returns status. e may be NULL. */
precis_status pr_errf(pr_err *e, precis_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefix the existing message with "<prefix>: " (printf-style). Returns status. */
precis_status pr_err_prefix(pr_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pr_err_clear(pr_err *e);

/* Evaluate expr (a precis_status); on failure jump to `fail` with st set. */
#define PR_TRY(expr)                                                                               \
    do {                                                                                           \
        st = (expr);                                                                               \
        if (st != PRECIS_OK) goto fail;                                                            \
    } while (0)

#endif
