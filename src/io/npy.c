/* NumPy .npy files: format 1.0 / 2.0 / 3.0, little-endian, C order. */
#define _POSIX_C_SOURCE 200809L

#include "io/npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const unsigned char k_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* ---------------------------------------------------------- header parser */

typedef struct hp {
    const char *p, *end;
} hp;

static void skip_ws(hp *h) {
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static bool eat(hp *h, char c) {
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* A quoted string ('...' or "...") into buf (no escapes in npy headers). */
static bool parse_str(hp *h, char *buf, size_t cap) {
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (n + 1 >= cap) return false;
        buf[n++] = *h->p++;
    }
    if (h->p >= h->end) return false;
    h->p++;
    buf[n] = '\0';
    return true;
}

static bool parse_word(hp *h, const char *w) {
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0) return false;
    h->p += n;
    return true;
}

/* Non-negative integer (Python may write a trailing 'L' in old files). */
static bool parse_dim(hp *h, int64_t *v) {
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return false;
    uint64_t r = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        unsigned d = (unsigned)(*h->p - '0');
        if (r > ((uint64_t)INT64_MAX - d) / 10) return false;
        r = r * 10 + d;
        h->p++;
    }
    if (h->p < h->end && *h->p == 'L') h->p++;
    *v = (int64_t)r;
    return true;
}

typedef struct npy_hdr {
    pr_dtype dtype;
    int rank;
    int64_t dims[PR_MAX_RANK];
} npy_hdr;

static precis_status parse_descr(const char *d, const char *what, pr_dtype *out, pr_err *e) {
    char bo = d[0];
    if (bo != '<' && bo != '>' && bo != '|' && bo != '=')
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy dtype '%s' has no byte order mark", what, d);
    static const struct {
        const char *s;
        pr_dtype dt;
    } k[] = {{"f2", PRECIS_FLOAT16}, {"f4", PRECIS_FLOAT32}, {"f8", PRECIS_FLOAT64},
             {"i1", PRECIS_INT8},    {"i2", PRECIS_INT16},   {"i4", PRECIS_INT32},
             {"i8", PRECIS_INT64},   {"u1", PRECIS_UINT8},   {"u2", PRECIS_UINT16},
             {"u4", PRECIS_UINT32},  {"u8", PRECIS_UINT64},  {"b1", PRECIS_BOOL}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (strcmp(d + 1, k[i].s) != 0) continue;
        if (bo == '>' && pr_dtype_size(k[i].dt) > 1)
            return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                           "%s: big-endian .npy data ('%s') is not supported; save it "
                           "little-endian (arr.astype('<%s'))",
                           what, d, k[i].s);
        *out = k[i].dt;
        return PRECIS_OK;
    }
    return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                   "%s: .npy dtype '%s' is not supported (f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)",
                   what, d);
}

static precis_status parse_header(const char *s, size_t n, const char *what, npy_hdr *out,
                                  pr_err *e) {
    hp h = {s, s + n};
    bool got_descr = false, got_fo = false, got_shape = false;
    char key[32], val[64];
    if (!eat(&h, '{'))
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header is not a dictionary", what);
    for (;;) {
        if (eat(&h, '}')) break;
        if (!parse_str(&h, key, sizeof key) || !eat(&h, ':'))
            return pr_errf(e, PRECIS_ERR_PARSE, "%s: malformed .npy header dictionary", what);
        if (!strcmp(key, "descr")) {
            if (got_descr || !parse_str(&h, val, sizeof val))
                return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header has a bad 'descr'", what);
            precis_status st = parse_descr(val, what, &out->dtype, e);
            if (st) return st;
            got_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (got_fo)
                return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header repeats 'fortran_order'", what);
            if (parse_word(&h, "True"))
                return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                               "%s: Fortran-order .npy arrays are not supported; save a C-order "
                               "array (np.ascontiguousarray)",
                               what);
            if (!parse_word(&h, "False"))
                return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header has a bad 'fortran_order'",
                               what);
            got_fo = true;
        } else if (!strcmp(key, "shape")) {
            if (got_shape || !eat(&h, '('))
                return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header has a bad 'shape'", what);
            out->rank = 0;
            for (;;) {
                if (eat(&h, ')')) break;
                int64_t d;
                if (!parse_dim(&h, &d))
                    return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header has a bad 'shape'", what);
                if (out->rank == PR_MAX_RANK)
                    return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                                   "%s: .npy array has more than %d dimensions", what, PR_MAX_RANK);
                out->dims[out->rank++] = d;
                if (eat(&h, ')')) break;
                if (!eat(&h, ','))
                    return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header has a bad 'shape'", what);
            }
            got_shape = true;
        } else {
            return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header has an unexpected key '%s'", what,
                           key);
        }
        if (eat(&h, '}')) break;
        if (!eat(&h, ','))
            return pr_errf(e, PRECIS_ERR_PARSE, "%s: malformed .npy header dictionary", what);
    }
    skip_ws(&h);
    if (h.p != h.end)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: trailing characters after the .npy header", what);
    if (!got_descr || !got_fo || !got_shape)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: .npy header lacks '%s'", what,
                       !got_descr ? "descr" : !got_fo ? "fortran_order" : "shape");
    return PRECIS_OK;
}

static precis_status npy_parse(const void *buf, size_t len, const char *what, precis_tensor **out,
                               pr_err *e);

/* Header text comes from the file: keep messages on one line. */
precis_status pr_npy_parse(const void *buf, size_t len, const char *what, precis_tensor **out,
                           pr_err *e) {
    precis_status st = npy_parse(buf, len, what, out, e);
    if (st && e)
        for (char *p = e->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return st;
}

static precis_status npy_parse(const void *buf, size_t len, const char *what, precis_tensor **out,
                               pr_err *e) {
    if (!out) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_npy_parse: NULL argument");
    *out = NULL;
    if (!what) what = ".npy data";
    const unsigned char *b = buf;
    if (!b || len < 10 || memcmp(b, k_magic, 6) != 0)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: not a .npy file (bad magic)", what);
    unsigned major = b[6], minor = b[7];
    size_t hl, start;
    if (major == 1) {
        hl = (size_t)b[8] | (size_t)b[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return pr_errf(e, PRECIS_ERR_PARSE, "%s: truncated .npy header", what);
        hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        start = 12;
    } else {
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: .npy format version %u.%u is not supported",
                       what, major, minor);
    }
    if (minor != 0)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: .npy format version %u.%u is not supported",
                       what, major, minor);
    if (hl > len - start)
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "%s: truncated .npy header (%zu header bytes declared, %zu present)", what, hl,
                       len - start);
    npy_hdr h;
    memset(&h, 0, sizeof h);
    precis_status st = parse_header((const char *)b + start, hl, what, &h, e);
    if (st) return st;
    size_t es = pr_dtype_size(h.dtype);
    int64_t n = pr_numel(h.rank, h.dims);
    if (n < 0 || (uint64_t)n > PR_MAX_TENSOR_BYTES / es) {
        char sb[256];
        return pr_errf(e, PRECIS_ERR_OOM, "%s: .npy shape %s is too large (limit %zu bytes)", what,
                       pr_shape_str(NULL, h.dtype, h.rank, h.dims, sb, sizeof sb),
                       PR_MAX_TENSOR_BYTES);
    }
    size_t nbytes = (size_t)n * es, have = len - start - hl;
    if (have != nbytes) {
        char sb[256];
        return pr_errf(e, PRECIS_ERR_PARSE,
                       "%s: .npy data is %zu bytes but shape %s needs %zu (%s)", what, have,
                       pr_shape_str(NULL, h.dtype, h.rank, h.dims, sb, sizeof sb), nbytes,
                       have < nbytes ? "truncated file?" : "trailing bytes");
    }
    precis_tensor *t;
    st = pr_tensor_new(h.dtype, h.rank, h.dims, what, &t, e);
    if (st) return st;
    if (nbytes) memcpy(t->b.data, b + start + hl, nbytes);
    if (h.dtype == PRECIS_BOOL)
        for (size_t i = 0; i < nbytes; i++)
            ((uint8_t *)t->b.data)[i] = ((uint8_t *)t->b.data)[i] != 0;
    *out = t;
    return PRECIS_OK;
}

precis_status pr_npy_load(const char *path, precis_tensor **out, pr_err *e) {
    if (!path || !out) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_npy_load: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    precis_status st = PRECIS_OK;
    unsigned char *buf = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read '%s': not a regular file", path);
        goto done;
    }
    if ((uint64_t)sb.st_size > (uint64_t)PR_MAX_TENSOR_BYTES + 65536 + 12) {
        st = pr_errf(e, PRECIS_ERR_OOM, "cannot read '%s': file too large (%lld bytes)", path,
                     (long long)sb.st_size);
        goto done;
    }
    size_t n = (size_t)sb.st_size;
    buf = malloc(n ? n : 1);
    if (!buf) {
        st = pr_errf(e, PRECIS_ERR_OOM, "cannot read '%s': out of memory", path);
        goto done;
    }
    if (n && fread(buf, 1, n, f) != n) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read '%s': %s", path,
                     ferror(f) ? strerror(errno) : "file shrank while reading");
        goto done;
    }
    char what[1100];
    snprintf(what, sizeof what, "'%s'", path);
    st = pr_npy_parse(buf, n, what, out, e);
done:
    free(buf);
    fclose(f);
    return st;
}

precis_status pr_npy_save(const char *path, const pr_buf *b, pr_err *e) {
    if (!path || !b) return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_npy_save: NULL argument");
    const char *code = pr_dtype_info(b->dtype)->npy;
    size_t es = pr_dtype_size(b->dtype);
    if (!code || !es)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "'%s': dtype %s cannot be saved as .npy", path,
                       pr_dtype_name(b->dtype));
    if (b->rank < 0 || b->rank > PR_MAX_RANK)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "'%s': bad rank %d", path, b->rank);
    int64_t numel = pr_numel(b->rank, b->dims);
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / es || (size_t)numel * es > b->nbytes ||
        (numel && !b->data))
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "'%s': tensor shape and storage disagree", path);
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     es == 1 ? '|' : '<', code);
    for (int i = 0; i < b->rank; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld%s", (long long)b->dims[i],
                      b->rank == 1 ? "," : i + 1 < b->rank ? ", " : "");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    /* pad with spaces so that 10 + header length (incl. '\n') is a multiple of 64 */
    size_t total = ((size_t)n + 1 + 10 + 63) & ~(size_t)63;
    size_t hl = total - 10;
    while ((size_t)n < hl - 1) hdr[n++] = ' ';
    hdr[n++] = '\n';
    unsigned char pre[10];
    memcpy(pre, k_magic, 6);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = (unsigned char)(hl & 0xff);
    pre[9] = (unsigned char)(hl >> 8);
    FILE *f = fopen(path, "wb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
    size_t nbytes = (size_t)numel * es;
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, hl, f) == hl &&
              (nbytes == 0 || fwrite(b->data, 1, nbytes, f) == nbytes);
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        remove(path);
        return pr_errf(e, PRECIS_ERR_IO, "cannot write '%s': %s", path, strerror(err));
    }
    return PRECIS_OK;
}
