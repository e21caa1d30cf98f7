/* The calibration cache: a text file with the key and every tensor's
 * statistics (see calib.h), one item per line, fields separated by single
 * spaces, every line ending in '\n':
 *
 *   precis-calib 1
 *   model <16 hex digits>          hash of the ONNX file
 *   graph <16 hex digits>          hash of the optimized graph
 *   data <16 hex digits>           hash of the calibration data
 *   samples <N>                    calibration samples
 *   preprocess <string>            preprocessing spec
 *   tensors <N>                    number of tensor lines that follow
 *   tensor <name> <min> <max> <count> <nonfinite> <width> <K> <bin>:<n> ... (K pairs)
 *   channels <C> <amax> ...        optional, right after its tensor line: the
 *                                  per-channel max |x| of the last axis (C values)
 *   ...
 *   end
 *
 * <string> and <name> are quoted ("..."), with '%', '"', space and every
 * byte outside 0x21..0x7e written as %XX (two upper-case hex digits), so
 * any name survives. min, max and width are written with %.17g (doubles
 * round-trip exactly); the K pairs list the non-zero bins in increasing
 * order. The `tensors` count and the `end` line make a truncated file an
 * error wherever it was cut.
 *
 * The reader checks everything (numbers, ranges, duplicate names, counts
 * summing to `count`, bins within the width's range) and names the line of
 * the first problem. */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant/calib.h"

#define MAGIC "precis-calib 1"
#define MAX_FILE ((int64_t)1 << 30)
#define MAX_TENSORS (1 << 18) /* 16 KiB of histogram each */

/* ---------------------------------------------------------------- writer */

static void put_str(FILE *f, const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p > 0x20 && *p < 0x7f && *p != '%' && *p != '"') {
            fputc(*p, f);
        } else {
            fputc('%', f);
            fputc(hex[*p >> 4], f);
            fputc(hex[*p & 15], f);
        }
    }
    fputc('"', f);
}

static void put_tensor(FILE *f, const pr_calib_tensor *v) {
    int k = 0;
    for (int b = 0; b < PR_CALIB_BINS; b++) k += v->hist[b] != 0;
    fputs("tensor ", f);
    put_str(f, v->name);
    fprintf(f, " %.17g %.17g %" PRIu64 " %" PRIu64 " %.17g %d", v->min, v->max, v->count,
            v->nonfinite, v->width, k);
    for (int b = 0; b < PR_CALIB_BINS; b++)
        if (v->hist[b]) fprintf(f, " %d:%" PRIu64, b, v->hist[b]);
    fputc('\n', f);
    if (v->n_chan <= 0 || !v->chan_amax) return;
    fprintf(f, "channels %" PRId64, v->n_chan);
    for (int64_t c = 0; c < v->n_chan; c++) fprintf(f, " %.9g", (double)v->chan_amax[c]);
    fputc('\n', f);
}

precis_status pr_calib_cache_save(const pr_calib_stats *s, const pr_calib_key *key,
                                  const char *path, pr_err *e) {
    if (!s || !key || !path)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_cache_save: NULL argument");
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp) return pr_errf(e, PRECIS_ERR_OOM, "cannot save calibration cache: out of memory");
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    precis_status st = PRECIS_OK;
    FILE *f = fopen(tmp, "w");
    if (!f) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write calibration cache '%s': %s", tmp,
                     strerror(errno));
        free(tmp);
        return st;
    }
    fprintf(f,
            MAGIC "\nmodel %016" PRIx64 "\ngraph %016" PRIx64 "\ndata %016" PRIx64
                  "\nsamples %" PRIu64 "\npreprocess ",
            key->model, key->graph, key->data, key->samples);
    put_str(f, key->preprocess ? key->preprocess : "");
    fprintf(f, "\ntensors %d\n", pr_calib_count(s));
    for (int i = 0; i < pr_calib_count(s); i++) put_tensor(f, pr_calib_get(s, i));
    fputs("end\n", f);
    bool bad = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    int err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = true;
        err = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write calibration cache '%s': rename from '%s': %s",
                     path, tmp, strerror(errno));
        unlink(tmp);
    } else if (bad) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot write calibration cache '%s': %s", path,
                     strerror(err));
        unlink(tmp);
    }
    free(tmp);
    return st;
}

/* ---------------------------------------------------------------- reader */

typedef struct rd {
    const char *path;
    const char *p, *end; /* the rest of the file */
    const char *lp, *le; /* the current line, less its '\n' */
    int line;
    bool first; /* no field of the line read yet */
    pr_err *e;
} rd;

static precis_status bad(rd *r, const char *what) {
    return pr_errf(r->e, PRECIS_ERR_PARSE, "calibration cache '%s' line %d: %s", r->path, r->line,
                   what);
}

/* The next line into r->lp..r->le; false at end of file or when the last
 * line has no '\n' (a truncated file). */
static bool next_line(rd *r) {
    r->line++;
    if (r->p >= r->end) return false;
    const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    if (!nl) return false;
    r->lp = r->p;
    r->le = nl;
    r->first = true;
    r->p = nl + 1;
    return true;
}

/* The next space-separated field of the line (*t, *n); false if none. */
static bool field(rd *r, const char **t, size_t *n) {
    if (r->lp >= r->le) return false;
    if (!r->first) { /* fields are separated by exactly one space */
        if (*r->lp != ' ') return false;
        r->lp++;
    }
    r->first = false;
    const char *s = r->lp;
    while (r->lp < r->le && *r->lp != ' ') r->lp++;
    *t = s;
    *n = (size_t)(r->lp - s);
    return *n > 0;
}

static bool field_is(rd *r, const char *word) {
    const char *t;
    size_t n;
    return field(r, &t, &n) && n == strlen(word) && !memcmp(t, word, n);
}

static bool parse_u64(const char *t, size_t n, uint64_t *out) {
    if (n == 0 || n > 20) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9') return false;
        unsigned d = (unsigned)(t[i] - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_hex64(const char *t, size_t n, uint64_t *out) {
    if (n != 16) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)t[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool parse_f64(const char *t, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, t, n);
    buf[n] = '\0';
    if (!(isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '+' || buf[0] == '.'))
        return false;
    char *endp;
    double v = strtod(buf, &endp);
    if (endp != buf + n || !isfinite(v)) return false;
    *out = v;
    return true;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* A quoted, %-escaped string field decoded into a malloc'd C string. */
static bool parse_str(rd *r, char **out) {
    const char *t;
    size_t n;
    *out = NULL;
    if (!field(r, &t, &n) || n < 2 || t[0] != '"' || t[n - 1] != '"') return false;
    char *s = malloc(n);
    if (!s) return false;
    size_t k = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c == '%') {
            int hi = i + 3 < n ? hexval(t[i + 1]) : -1, lo = hi >= 0 ? hexval(t[i + 2]) : -1;
            if (lo < 0 || (hi == 0 && lo == 0)) goto fail; /* bad escape or NUL */
            s[k++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (c > 0x20 && c < 0x7f && c != '"') {
            s[k++] = (char)c;
        } else {
            goto fail;
        }
    }
    s[k] = '\0';
    *out = s;
    return true;
fail:
    free(s);
    return false;
}

static bool line_done(const rd *r) { return r->lp == r->le; }

/* `word <16 hex>` */
static precis_status key_hex(rd *r, const char *word, uint64_t *v) {
    const char *t;
    size_t n;
    if (!next_line(r)) return bad(r, "truncated file (expected the key)");
    if (!field_is(r, word) || !field(r, &t, &n) || !parse_hex64(t, n, v) || !line_done(r)) {
        char m[96];
        snprintf(m, sizeof m, "expected '%s <16 hex digits>'", word);
        return bad(r, m);
    }
    return PRECIS_OK;
}

static precis_status key_u64(rd *r, const char *word, uint64_t *v) {
    const char *t;
    size_t n;
    if (!next_line(r)) return bad(r, "truncated file (expected the key)");
    if (!field_is(r, word) || !field(r, &t, &n) || !parse_u64(t, n, v) || !line_done(r)) {
        char m[96];
        snprintf(m, sizeof m, "expected '%s <count>'", word);
        return bad(r, m);
    }
    return PRECIS_OK;
}

/* One `tensor ...` line into v (hist zeroed first) and *name. */
static precis_status parse_tensor(rd *r, pr_calib_tensor *v, uint64_t *hist, char **name) {
    const char *t;
    size_t n;
    uint64_t k;
    *name = NULL;
    if (!field_is(r, "tensor")) return bad(r, "expected 'tensor' or 'end'");
    if (!parse_str(r, name)) return bad(r, "bad tensor name (a quoted, %-escaped string)");
    if (!field(r, &t, &n) || !parse_f64(t, n, &v->min)) return bad(r, "bad min");
    if (!field(r, &t, &n) || !parse_f64(t, n, &v->max)) return bad(r, "bad max");
    if (!field(r, &t, &n) || !parse_u64(t, n, &v->count)) return bad(r, "bad count");
    if (!field(r, &t, &n) || !parse_u64(t, n, &v->nonfinite)) return bad(r, "bad nonfinite count");
    if (!field(r, &t, &n) || !parse_f64(t, n, &v->width) || v->width < 0)
        return bad(r, "bad bin width");
    if (!field(r, &t, &n) || !parse_u64(t, n, &k) || k > PR_CALIB_BINS)
        return bad(r, "bad number of bins");
    memset(hist, 0, PR_CALIB_BINS * sizeof *hist);
    uint64_t sum = 0;
    int64_t prev = -1;
    for (uint64_t j = 0; j < k; j++) {
        if (!field(r, &t, &n)) return bad(r, "fewer bins than announced");
        const char *colon = memchr(t, ':', n);
        uint64_t b, c;
        if (!colon || !parse_u64(t, (size_t)(colon - t), &b) ||
            !parse_u64(colon + 1, n - (size_t)(colon - t) - 1, &c))
            return bad(r, "bad bin (expected <bin>:<count>)");
        if (b >= PR_CALIB_BINS) return bad(r, "bin index out of range");
        if ((int64_t)b <= prev) return bad(r, "bins not in increasing order");
        if (c == 0) return bad(r, "zero bin count");
        if (c > UINT64_MAX - sum) return bad(r, "bin counts overflow");
        hist[b] = c;
        sum += c;
        prev = (int64_t)b;
    }
    if (!line_done(r)) return bad(r, "more bins than announced");
    if (sum != v->count) return bad(r, "bin counts do not add up to the count");
    if (v->min > v->max) return bad(r, "min > max");
    double amax = fmax(fabs(v->min), fabs(v->max));
    if (!v->count && (v->min != 0 || v->max != 0 || v->width != 0))
        return bad(r, "a tensor without values has min, max and width 0");
    if (v->width == 0 && (amax != 0 || prev > 0)) return bad(r, "width 0 but non-zero values");
    if (v->width > 0 && (amax > v->width * PR_CALIB_BINS || amax == 0))
        return bad(r, "min/max outside the histogram's range");
    /* bin b > 0 holds values > b * width (loose: b * width may round) */
    if (v->width > 0 && prev > 0 && (double)prev * v->width > amax * (1 + 1e-9))
        return bad(r, "a bin past max |x|");
    v->hist = hist;
    return PRECIS_OK;
}

/* An optional 'channels' line after a tensor line: parsed into *chan (C
 * values, malloc'ed), else r is left before the next line. */
static precis_status parse_channels(rd *r, float **chan, int64_t *c) {
    *chan = NULL;
    *c = 0;
    rd save = *r;
    if (!next_line(r) || !field_is(r, "channels")) {
        *r = save;
        return PRECIS_OK;
    }
    const char *t;
    size_t n;
    uint64_t k;
    if (!field(r, &t, &n) || !parse_u64(t, n, &k) || k == 0 || k > (1u << 24))
        return bad(r, "bad channel count");
    if (!(*chan = malloc(k * sizeof **chan)))
        return pr_errf(r->e, PRECIS_ERR_OOM, "calibration cache: out of memory");
    for (uint64_t j = 0; j < k; j++) {
        double v;
        if (!field(r, &t, &n) || !parse_f64(t, n, &v) || v < 0) {
            free(*chan);
            *chan = NULL;
            return bad(r, "bad channel max (C non-negative numbers expected)");
        }
        (*chan)[j] = (float)v;
    }
    if (!line_done(r)) {
        free(*chan);
        *chan = NULL;
        return bad(r, "more channel values than announced");
    }
    *c = (int64_t)k;
    return PRECIS_OK;
}

static void hexs(char *buf, uint64_t v) { snprintf(buf, 17, "%016" PRIx64, v); }

/* printf at buf + *n (cap bytes in all), "; "-separated from what is there. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t cap, size_t *n,
                                                         const char *fmt, ...) {
    if (*n + 3 >= cap) return;
    if (*n) {
        memcpy(buf + *n, "; ", 3);
        *n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (k > 0) *n += (size_t)k < cap - *n ? (size_t)k : cap - *n - 1;
}

/* PRECIS_ERR_INVALID_ARG naming every field of `have` that differs from
 * `want` (want->graph 0: the graph is not compared); PRECIS_OK if none. */
static precis_status check_key(const char *path, const pr_calib_key *have, const pr_calib_key *want,
                               pr_err *e) {
    char msg[PR_ERR_MSG_MAX], a[17], b[17];
    size_t n = 0;
    const char *wp = want->preprocess ? want->preprocess : "";
    const char *hp = have->preprocess ? have->preprocess : "";
    msg[0] = '\0';
    if (have->model != want->model) {
        hexs(a, have->model);
        hexs(b, want->model);
        append(msg, sizeof msg, &n, "made for another model (hash %s, this one %s)", a, b);
    }
    if (want->graph && have->graph != want->graph) {
        hexs(a, have->graph);
        hexs(b, want->graph);
        append(msg, sizeof msg, &n,
               "made for another optimized graph (hash %s, this one %s: other passes or "
               "options?)",
               a, b);
    }
    if ((have->data != want->data || have->samples != want->samples)) {
        hexs(a, have->data);
        hexs(b, want->data);
        append(msg, sizeof msg, &n,
               "made from another calibration data set (%" PRIu64
               " samples, hash %s; this one %" PRIu64 " samples, hash %s)",
               have->samples, a, want->samples, b);
    }
    if (strcmp(hp, wp))
        append(msg, sizeof msg, &n, "made with another preprocessing: '%s' vs '%s' now", hp, wp);
    if (!n) return PRECIS_OK;
    return pr_errf(e, PRECIS_ERR_INVALID_ARG, "calibration cache '%s' does not match: %s", path,
                   msg);
}

precis_status pr_calib_cache_load(const char *path, const pr_calib_key *expect,
                                  pr_calib_stats **out, pr_calib_key *key_out, pr_err *e) {
    if (!path || !out)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_cache_load: NULL argument");
    *out = NULL;
    precis_status st = PRECIS_OK;
    char *data = NULL, *pre = NULL, *name = NULL;
    uint64_t *hist = NULL;
    pr_calib_stats *s = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return pr_errf(e, PRECIS_ERR_IO, "cannot read calibration cache '%s': %s", path,
                       strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read calibration cache '%s': not a regular file",
                     path);
        goto fail;
    }
    if ((int64_t)sb.st_size > MAX_FILE) {
        st = pr_errf(e, PRECIS_ERR_PARSE, "calibration cache '%s' is too large (%lld bytes)", path,
                     (long long)sb.st_size);
        goto fail;
    }
    size_t len = (size_t)sb.st_size;
    data = malloc(len + 1);
    hist = malloc(PR_CALIB_BINS * sizeof *hist);
    s = pr_calib_create();
    if (!data || !hist || !s) {
        st = pr_errf(e, PRECIS_ERR_OOM, "cannot read calibration cache '%s': out of memory", path);
        goto fail;
    }
    if (len && fread(data, 1, len, f) != len) {
        st = pr_errf(e, PRECIS_ERR_IO, "cannot read calibration cache '%s': %s", path,
                     ferror(f) ? strerror(errno) : "short read");
        goto fail;
    }
    rd r = {path, data, data + len, NULL, NULL, 0, true, e};
    if (memchr(data, '\0', len)) {
        st = pr_errf(e, PRECIS_ERR_PARSE, "calibration cache '%s': a NUL byte (not a text file)",
                     path);
        goto fail;
    }
    if (!next_line(&r) || (size_t)(r.le - r.lp) != strlen(MAGIC) ||
        memcmp(r.lp, MAGIC, strlen(MAGIC))) {
        st = bad(&r, "not a precis calibration cache (expected '" MAGIC "')");
        goto fail;
    }
    pr_calib_key key;
    if ((st = key_hex(&r, "model", &key.model)) || (st = key_hex(&r, "graph", &key.graph)) ||
        (st = key_hex(&r, "data", &key.data)) || (st = key_u64(&r, "samples", &key.samples)))
        goto fail;
    if (!next_line(&r)) {
        st = bad(&r, "truncated file (expected 'preprocess')");
        goto fail;
    }
    if (!field_is(&r, "preprocess") || !parse_str(&r, &pre) || !line_done(&r)) {
        st = bad(&r, "expected 'preprocess <quoted string>'");
        goto fail;
    }
    key.preprocess = pre;
    if (expect && (st = check_key(path, &key, expect, e))) goto fail;
    uint64_t nt;
    if ((st = key_u64(&r, "tensors", &nt))) goto fail;
    if (nt > MAX_TENSORS) {
        st = bad(&r, "too many tensors");
        goto fail;
    }
    for (uint64_t i = 0; i < nt; i++) {
        if (!next_line(&r)) {
            st = bad(&r, "truncated file (fewer tensor lines than 'tensors' says)");
            goto fail;
        }
        pr_calib_tensor v = {0};
        if ((st = parse_tensor(&r, &v, hist, &name))) goto fail;
        float *chan = NULL;
        if ((st = parse_channels(&r, &chan, &v.n_chan))) goto fail;
        v.chan_amax = chan;
        if (pr_calib_find(s, name) >= 0) {
            free(chan);
            st = bad(&r, "duplicate tensor name");
            goto fail;
        }
        int k = pr_calib_tensor_index(s, name, e);
        if (k < 0 || (st = pr_calib_set(s, k, &v, e))) {
            st = k < 0 ? PRECIS_ERR_OOM : st;
            free(chan);
            goto fail;
        }
        free(chan);
        free(name);
        name = NULL;
    }
    if (!next_line(&r) || (size_t)(r.le - r.lp) != 3 || memcmp(r.lp, "end", 3)) {
        st = bad(&r, "expected 'end' (truncated file, or more tensor lines than 'tensors' says)");
        goto fail;
    }
    if (r.p != r.end) {
        r.line++;
        st = bad(&r, "data after 'end'");
        goto fail;
    }
    const char *kp = pr_calib_set_preprocess(s, pre, e);
    if (!kp) {
        st = PRECIS_ERR_OOM;
        goto fail;
    }
    if (key_out) {
        *key_out = key;
        key_out->preprocess = kp;
    }
    *out = s;
    s = NULL;
fail:
    if (f) fclose(f);
    free(data);
    free(hist);
    free(pre);
    free(name);
    pr_calib_destroy(s);
    return st;
}
