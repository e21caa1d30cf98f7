#include "core/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

precis_status pr_errf(pr_err *e, precis_status st, const char *fmt, ...) {
    if (!e) return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->status = st;
    return st;
}

precis_status pr_err_prefix(pr_err *e, const char *fmt, ...) {
    if (!e) return PRECIS_ERR_INTERNAL;
    char prefix[PR_ERR_MSG_MAX], old[PR_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof e->msg - 3) n = sizeof e->msg - 3;
    memcpy(e->msg, prefix, n);
    memcpy(e->msg + n, ": ", 2);
    size_t room = sizeof e->msg - n - 3, m = strlen(old);
    if (m > room) m = room;
    memcpy(e->msg + n + 2, old, m);
    e->msg[n + 2 + m] = '\0';
    return e->status;
}

void pr_err_clear(pr_err *e) {
    if (!e) return;
    e->status = PRECIS_OK;
    e->msg[0] = '\0';
}
