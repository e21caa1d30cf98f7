/* Helpers shared by the CLI's commands. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

int fail(precis_ctx *ctx, precis_status st) {
    fprintf(stderr, "precis: error: %s\n", precis_last_error(ctx));
    return (int)st;
}

int usage_error(void (*usage)(FILE *), const char *fmt, const char *arg) {
    fprintf(stderr, "precis: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return 1;
}

double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void shape_str(int rank, const int64_t *dims, const char *const *names, char *buf, size_t cap) {
    size_t n = 0;
    if (rank < 0) {
        snprintf(buf, cap, "[?]");
        return;
    }
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < rank && n < cap; i++) {
        const char *sep = i ? "," : "";
        if (dims[i] >= 0) n += (size_t)snprintf(buf + n, cap - n, "%s%lld", sep, (long long)dims[i]);
        else if (names && names[i]) n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, names[i]);
        else n += (size_t)snprintf(buf + n, cap - n, "%s?", sep);
    }
    if (n < cap) snprintf(buf + n, cap - n, "]");
}

void safe_name(const char *in, char *out, size_t cap) {
    size_t j = 0;
    for (; *in && j + 1 < cap; in++) {
        char c = *in;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[j++] = ok ? c : '_';
    }
    out[j] = 0;
    if (j == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) snprintf(out, cap, "output");
}

int mkdir_p(const char *dir) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

void json_fstr(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

void json_str(const char *s) { json_fstr(stdout, s); }

void json_value_info(const precis_value_info *vi) {
    printf("{\"name\": ");
    json_str(vi->name);
    printf(", \"dtype\": \"%s\", \"shape\": ", precis_dtype_name(vi->dtype));
    if (vi->rank < 0) {
        printf("null}");
        return;
    }
    printf("[");
    for (int d = 0; d < vi->rank; d++) {
        if (d) printf(", ");
        if (vi->dims[d] >= 0) printf("%lld", (long long)vi->dims[d]);
        else if (vi->dim_names[d]) json_str(vi->dim_names[d]);
        else printf("null");
    }
    printf("]}");
}


const char *dtype_short(precis_dtype t) {
    switch (t) {
    case PRECIS_UNDEFINED: return "-";
    case PRECIS_FLOAT32: return "fp32";
    case PRECIS_FLOAT16: return "fp16";
    case PRECIS_BFLOAT16: return "bf16";
    case PRECIS_INT8: return "int8";
    case PRECIS_FLOAT8E4M3FN: return "fp8";
    case PRECIS_UINT8: return "uint8";
    case PRECIS_INT32: return "int32";
    default: return precis_dtype_name(t);
    }
}

/* The command line as one shell-quoted string, for the report. */
void command_line(const char *prefix, int argc, char **argv, char *buf, size_t cap) {
    size_t n = (size_t)snprintf(buf, cap, "%s", prefix);
    for (int i = 0; i < argc && n < cap; i++) {
        bool plain = argv[i][0] && strspn(argv[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV"
                                                   "WXYZ0123456789-_./=:,+@%") == strlen(argv[i]);
        if (plain) {
            n += (size_t)snprintf(buf + n, cap - n, " %s", argv[i]);
            continue;
        }
        n += (size_t)snprintf(buf + n, cap - n, " '");
        for (const char *c = argv[i]; *c && n + 5 < cap; c++)
            n += (size_t)(*c == '\'' ? snprintf(buf + n, cap - n, "'\\''")
                                     : snprintf(buf + n, cap - n, "%c", *c));
        if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "'");
    }
}

