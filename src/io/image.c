/* Image decoding (libpng, libjpeg, own PPM/PGM reader) and preprocessing into
 * float32 samples. See image.h for the exact semantics. */
#define _POSIX_C_SOURCE 200809L

#include "io/image.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

/* Largest image file read (bytes): far above any 16k x 16k compressed image. */
#define MAX_FILE_BYTES ((size_t)1 << 31)

void pr_image_free(pr_image *im) {
    if (!im) return;
    free(im->rgb);
    im->rgb = NULL;
    im->w = im->h = 0;
}

static precis_status too_large(const char *what, uint64_t w, uint64_t h, pr_err *e) {
    return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: %llux%llu image exceeds the %dx%d limit", what,
                   (unsigned long long)w, (unsigned long long)h, PR_IMAGE_MAX_SIDE,
                   PR_IMAGE_MAX_SIDE);
}

/* w*h*3 bytes for out (w, h already checked to be 1..PR_IMAGE_MAX_SIDE). */
static precis_status alloc_rgb(pr_image *out, int w, int h, const char *what, pr_err *e) {
    out->rgb = malloc((size_t)w * (size_t)h * 3);
    if (!out->rgb)
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory for %dx%d image", what, w, h);
    out->w = w;
    out->h = h;
    return PRECIS_OK;
}

/* -------------------------------------------------------------------- PNG */

typedef struct png_state {
    const unsigned char *buf;
    size_t len, pos;
    char msg[256];
    bool too_large;
    png_uint_32 w, h;
    pr_image *out;
    png_bytep *rows;
    const char *what;
    pr_err *e;
} png_state;

static void png_err_fn(png_structp png, png_const_charp msg) {
    png_state *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warn_fn(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void png_read_fn(png_structp png, png_bytep data, size_t n) {
    png_state *s = png_get_io_ptr(png);
    if (n > s->len - s->pos) png_error(png, "truncated file");
    memcpy(data, s->buf + s->pos, n);
    s->pos += n;
}

/* Everything that may longjmp; all state it changes lives in *s (no local
 * variable is read after a longjmp). 0: ok, 1: failed (s->msg). */
static int png_run(png_structp png, png_infop info, png_state *s) {
    if (setjmp(png_jmpbuf(png))) return 1;
    png_set_read_fn(png, s, png_read_fn);
    png_read_info(png, info);
    s->w = png_get_image_width(png, info);
    s->h = png_get_image_height(png, info);
    if (s->w > PR_IMAGE_MAX_SIDE || s->h > PR_IMAGE_MAX_SIDE) {
        s->too_large = true;
        return 1;
    }
    int ct = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (depth == 16) png_set_strip_16(png); /* keep the high byte */
    if (ct == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ct == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    png_set_strip_alpha(png); /* also the alpha a tRNS chunk may add */
    if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
        png_get_rowbytes(png, info) != (size_t)s->w * 3)
        png_error(png, "unsupported PNG pixel layout");
    if (alloc_rgb(s->out, (int)s->w, (int)s->h, s->what, s->e) != PRECIS_OK)
        png_error(png, "out of memory");
    s->rows = malloc(s->h * sizeof *s->rows);
    if (!s->rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < s->h; y++) s->rows[y] = s->out->rgb + (size_t)y * s->w * 3;
    png_read_image(png, s->rows);
    png_read_end(png, NULL); /* a file cut before IEND is truncated too */
    return 0;
}

static precis_status decode_png(const unsigned char *buf, size_t len, const char *what,
                                pr_image *out, pr_err *e) {
    png_state s = {.buf = buf, .len = len, .out = out, .what = what, .e = e};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_err_fn, png_warn_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory starting libpng", what);
    }
    int rc = png_run(png, info, &s);
    png_destroy_read_struct(&png, &info, NULL);
    free(s.rows);
    if (rc == 0) return PRECIS_OK;
    pr_image_free(out);
    if (s.too_large) return too_large(what, s.w, s.h, e);
    return pr_errf(e, PRECIS_ERR_PARSE, "%s: bad PNG: %s", what, s.msg);
}

/* ------------------------------------------------------------------- JPEG */

typedef struct jpg_err {
    struct jpeg_error_mgr pub; /* first: libjpeg sees a jpeg_error_mgr* */
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jpg_err;

static void jpg_error_exit(j_common_ptr c) {
    jpg_err *j = (jpg_err *)c->err;
    c->err->format_message(c, j->msg);
    longjmp(j->jb, 1);
}

/* Warnings (level < 0) are corrupt or truncated data, where libjpeg would
 * go on and fill the rest with grey: fail instead. Stray bytes between
 * markers are harmless and common in real files, so those are let through. */
static void jpg_emit_message(j_common_ptr c, int level) {
    if (level >= 0) return;
    c->err->num_warnings++;
    if (c->err->msg_code == JWRN_EXTRANEOUS_DATA) return;
    jpg_error_exit(c);
}

static void jpg_output_message(j_common_ptr c) { (void)c; }

/* Progressive files with thousands of tiny scans take minutes to decode
 * (libjpeg-turbo's own advice is to cap the scan count). */
#define JPG_MAX_SCANS 1000

static void jpg_progress(j_common_ptr c) {
    j_decompress_ptr d = (j_decompress_ptr)c;
    if (d->input_scan_number <= JPG_MAX_SCANS) return;
    jpg_err *j = (jpg_err *)c->err;
    snprintf(j->msg, sizeof j->msg, "more than %d progressive scans", JPG_MAX_SCANS);
    longjmp(j->jb, 1);
}

typedef struct jpg_state {
    const unsigned char *buf;
    size_t len;
    bool too_large, bad_layout;
    JDIMENSION w, h;
    pr_image *out;
    const char *what;
    pr_err *e;
} jpg_state;

/* As png_run: 0 ok, 1 failed (message in the error manager or flags). */
static int jpg_run(struct jpeg_decompress_struct *ci, jpg_err *je, jpg_state *s) {
    if (setjmp(je->jb)) return 1;
    jpeg_create_decompress(ci);
    jpeg_mem_src(ci, s->buf, (unsigned long)s->len);
    jpeg_read_header(ci, TRUE);
    s->w = ci->image_width;
    s->h = ci->image_height;
    if (s->w > PR_IMAGE_MAX_SIDE || s->h > PR_IMAGE_MAX_SIDE) {
        s->too_large = true;
        return 1;
    }
    ci->out_color_space = JCS_RGB; /* grey is expanded; CMYK fails cleanly */
    jpeg_start_decompress(ci);
    if (ci->output_components != 3 || ci->output_width != s->w || ci->output_height != s->h) {
        s->bad_layout = true;
        return 1;
    }
    if (alloc_rgb(s->out, (int)s->w, (int)s->h, s->what, s->e) != PRECIS_OK) return 2;
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = s->out->rgb + (size_t)ci->output_scanline * s->w * 3;
        if (jpeg_read_scanlines(ci, &row, 1) != 1) ERREXIT(ci, JERR_INPUT_EOF);
    }
    jpeg_finish_decompress(ci); /* reads on to EOI: a cut file warns, and fails */
    return 0;
}

static precis_status decode_jpeg(const unsigned char *buf, size_t len, const char *what,
                                 pr_image *out, pr_err *e) {
    struct jpeg_decompress_struct ci;
    jpg_err je;
    memset(&ci, 0, sizeof ci);
    memset(&je, 0, sizeof je);
    ci.err = jpeg_std_error(&je.pub);
    je.pub.error_exit = jpg_error_exit;
    je.pub.emit_message = jpg_emit_message;
    je.pub.output_message = jpg_output_message;
    struct jpeg_progress_mgr pm = {.progress_monitor = jpg_progress};
    ci.progress = &pm;
    jpg_state s = {.buf = buf, .len = len, .out = out, .what = what, .e = e};
    int rc = jpg_run(&ci, &je, &s);
    jpeg_destroy_decompress(&ci);
    if (rc == 0) return PRECIS_OK;
    pr_image_free(out);
    if (rc == 2) return e ? e->status : PRECIS_ERR_OOM;
    if (s.too_large) return too_large(what, s.w, s.h, e);
    if (s.bad_layout)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: unsupported JPEG layout", what);
    return pr_errf(e, PRECIS_ERR_PARSE, "%s: bad JPEG: %s", what, je.msg);
}

/* ---------------------------------------------------------------- PPM/PGM */

typedef struct pnm_rd {
    const unsigned char *p, *end;
} pnm_rd;

/* Skip whitespace and '#' comments, then read an unsigned decimal. */
static bool pnm_uint(pnm_rd *r, uint64_t *v) {
    for (;;) {
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' ||
                                 *r->p == '\r' || *r->p == '\f' || *r->p == '\v'))
            r->p++;
        if (r->p < r->end && *r->p == '#') {
            while (r->p < r->end && *r->p != '\n' && *r->p != '\r') r->p++;
            continue;
        }
        break;
    }
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') return false;
    uint64_t x = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        x = x * 10 + (uint64_t)(*r->p - '0');
        if (x > 0xffffffffu) return false;
        r->p++;
    }
    *v = x;
    return true;
}

static precis_status decode_pnm(const unsigned char *buf, size_t len, const char *what,
                                pr_image *out, pr_err *e) {
    if (buf[1] != '5' && buf[1] != '6')
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "%s: PNM type P%c not supported (binary P5 PGM and P6 PPM only)", what,
                       buf[1] >= ' ' && buf[1] < 127 ? buf[1] : '?');
    int ch = buf[1] == '6' ? 3 : 1;
    pnm_rd r = {buf + 2, buf + len};
    uint64_t w, h, maxval;
    if (!pnm_uint(&r, &w) || !pnm_uint(&r, &h) || !pnm_uint(&r, &maxval))
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: bad PPM/PGM header", what);
    if (w == 0 || h == 0 || maxval == 0 || maxval > 65535)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: bad PPM/PGM header (%llux%llu, maxval %llu)",
                       what, (unsigned long long)w, (unsigned long long)h,
                       (unsigned long long)maxval);
    if (w > PR_IMAGE_MAX_SIDE || h > PR_IMAGE_MAX_SIDE) return too_large(what, w, h, e);
    /* exactly one whitespace byte ends the header */
    if (r.p >= r.end || !(*r.p == ' ' || *r.p == '\t' || *r.p == '\n' || *r.p == '\r'))
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: bad PPM/PGM header", what);
    r.p++;
    size_t bps = maxval > 255 ? 2 : 1;
    size_t n = (size_t)w * (size_t)h * (size_t)ch;
    if ((size_t)(r.end - r.p) < n * bps)
        return pr_errf(e, PRECIS_ERR_PARSE, "%s: truncated PPM/PGM (%zu of %zu pixel bytes)", what,
                       (size_t)(r.end - r.p), n * bps);
    precis_status st = alloc_rgb(out, (int)w, (int)h, what, e);
    if (st != PRECIS_OK) return st;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = bps == 2 ? (uint32_t)r.p[2 * i] << 8 | r.p[2 * i + 1] : r.p[i];
        if (v > maxval) v = (uint32_t)maxval;
        unsigned char b = maxval == 255 ? (unsigned char)v
                                        : (unsigned char)((v * 255u + (uint32_t)maxval / 2) /
                                                          (uint32_t)maxval);
        if (ch == 3) {
            out->rgb[i] = b;
        } else {
            out->rgb[3 * i] = out->rgb[3 * i + 1] = out->rgb[3 * i + 2] = b;
        }
    }
    return PRECIS_OK;
}

/* ---------------------------------------------------------------- decode */

precis_status pr_image_decode(const void *buf, size_t len, const char *what, pr_image *out,
                              pr_err *e) {
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    if (len >= 8 && !memcmp(b, png_sig, 8)) return decode_png(b, len, what, out, e);
    if (len >= 2 && b[0] == 0xff && b[1] == 0xd8) return decode_jpeg(b, len, what, out, e);
    if (len >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7')
        return decode_pnm(b, len, what, out, e);
    return pr_errf(e, PRECIS_ERR_PARSE, "%s: not a PNG, JPEG or binary PPM/PGM image%s", what,
                   len < 8 ? " (file too short)" : "");
}

precis_status pr_image_load(const char *path, pr_image *out, pr_err *e) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return pr_errf(e, PRECIS_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > MAX_FILE_BYTES) {
        fclose(f);
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "%s: image file of %lld bytes is too large",
                       path, (long long)sb.st_size);
    }
    size_t n = (size_t)sb.st_size;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    bool err = ferror(f) != 0;
    fclose(f);
    if (err || got != n) {
        free(buf);
        return pr_errf(e, PRECIS_ERR_IO, "%s: read error", path);
    }
    precis_status st = pr_image_decode(buf, n, path, out, e);
    free(buf);
    return st;
}

/* ------------------------------------------------------------- the spec */

/* "S" (h = w = S) or "HxW", each 1..PR_IMAGE_MAX_SIDE. */
static bool parse_size(const char *v, int *h, int *w, bool *pair) {
    char *end;
    errno = 0;
    long a = strtol(v, &end, 10);
    if (end == v || errno || a < 1 || a > PR_IMAGE_MAX_SIDE || *v == '+' || *v == ' ') return false;
    *pair = false;
    if (*end == 'x' || *end == 'X') {
        const char *q = end + 1;
        long b = strtol(q, &end, 10);
        if (end == q || errno || b < 1 || b > PR_IMAGE_MAX_SIDE || *q == '+' || *q == ' ')
            return false;
        *h = (int)a;
        *w = (int)b;
        *pair = true;
        return *end == '\0';
    }
    *h = *w = (int)a;
    return *end == '\0';
}

static bool parse_float(const char *v, const char *stop, float *out) {
    char *end;
    errno = 0;
    if (v == stop || *v == ' ') return false;
    double d = strtod(v, &end);
    if (end != stop || errno || !isfinite(d) || fabs(d) > 3e38) return false;
    *out = (float)d;
    return true;
}

/* One value (all three channels) or three separated by ':'. */
static bool parse_triple(const char *v, float out[3], bool nonzero) {
    const char *p = v;
    int n = 0;
    float x[3];
    for (;;) {
        const char *c = strchr(p, ':');
        const char *stop = c ? c : p + strlen(p);
        if (n == 3 || !parse_float(p, stop, &x[n])) return false;
        if (nonzero && x[n] == 0.0f) return false;
        n++;
        if (!c) break;
        p = c + 1;
    }
    if (n == 2) return false;
    for (int i = 0; i < 3; i++) out[i] = x[n == 1 ? 0 : i];
    return true;
}

precis_status pr_image_prep_parse(const char *spec, pr_image_prep *out, pr_err *e) {
    memset(out, 0, sizeof *out);
    out->scale = 1.0f / 255.0f;
    out->std[0] = out->std[1] = out->std[2] = 1.0f;
    if (!spec) return PRECIS_OK;
    size_t n = strlen(spec);
    char *s = malloc(n + 1);
    if (!s) return pr_errf(e, PRECIS_ERR_OOM, "preprocessing spec: out of memory");
    memcpy(s, spec, n + 1);
    enum { K_RESIZE, K_CROP, K_SCALE, K_MEAN, K_STD, K_ORDER, K_LAYOUT, K_N };
    static const char *const keys[K_N] = {"resize", "crop", "scale", "mean",
                                          "std",    "order", "layout"};
    static const char *const want[K_N] = {"S or HxW", "S or HxW", "a finite nonzero number",
                                          "a or a:b:c", "a or a:b:c, nonzero", "rgb or bgr",
                                          "nchw or nhwc"};
    bool seen[K_N] = {false};
    precis_status st = PRECIS_OK;
    char *item = s;
    for (;;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = '\0';
        while (*item == ' ' || *item == '\t') item++;
        size_t il = strlen(item);
        while (il && (item[il - 1] == ' ' || item[il - 1] == '\t')) item[--il] = '\0';
        char *eq = strchr(item, '=');
        int k = -1;
        if (eq) {
            for (int i = 0; i < K_N; i++)
                if ((size_t)(eq - item) == strlen(keys[i]) &&
                    !strncmp(item, keys[i], (size_t)(eq - item)))
                    k = i;
        }
        if (!*item) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "preprocessing spec '%s': empty item", spec);
            goto done;
        }
        if (k < 0) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                         "preprocessing spec: unknown item '%s' (want resize, crop, scale, mean, "
                         "std, order or layout =value)",
                         item);
            goto done;
        }
        if (seen[k]) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG, "preprocessing spec: item '%s' repeats %s",
                         item, keys[k]);
            goto done;
        }
        seen[k] = true;
        const char *v = eq + 1;
        bool ok = false, pair;
        switch (k) {
        case K_RESIZE: {
            int h, w;
            ok = parse_size(v, &h, &w, &pair);
            if (ok && pair) {
                out->resize_h = h;
                out->resize_w = w;
            } else if (ok) {
                out->resize_short = h;
            }
            break;
        }
        case K_CROP: ok = parse_size(v, &out->crop_h, &out->crop_w, &pair); break;
        case K_SCALE:
            ok = parse_float(v, v + strlen(v), &out->scale) && out->scale != 0.0f;
            break;
        case K_MEAN: ok = parse_triple(v, out->mean, false); break;
        case K_STD: ok = parse_triple(v, out->std, true); break;
        case K_ORDER:
            ok = !strcmp(v, "rgb") || !strcmp(v, "bgr");
            out->bgr = !strcmp(v, "bgr");
            break;
        case K_LAYOUT:
            ok = !strcmp(v, "nchw") || !strcmp(v, "nhwc");
            out->nhwc = !strcmp(v, "nhwc");
            break;
        }
        if (!ok) {
            st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                         "preprocessing spec: bad item '%s' (want %s=%s)", item, keys[k], want[k]);
            goto done;
        }
        if (!comma) break;
        item = comma + 1;
    }
done:
    free(s);
    return st;
}

const char *pr_image_prep_normalize(const pr_image_prep *p, char *buf, size_t cap) {
    char rs[32], cr[32];
    if (p->resize_short)
        snprintf(rs, sizeof rs, "%d", p->resize_short);
    else if (p->resize_h)
        snprintf(rs, sizeof rs, "%dx%d", p->resize_h, p->resize_w);
    else
        snprintf(rs, sizeof rs, "none");
    if (p->crop_h)
        snprintf(cr, sizeof cr, "%dx%d", p->crop_h, p->crop_w);
    else
        snprintf(cr, sizeof cr, "input");
    snprintf(buf, cap,
             "resize=%s,crop=%s,scale=%.9g,mean=%.9g:%.9g:%.9g,std=%.9g:%.9g:%.9g,order=%s,"
             "layout=%s",
             rs, cr, (double)p->scale, (double)p->mean[0], (double)p->mean[1], (double)p->mean[2],
             (double)p->std[0], (double)p->std[1], (double)p->std[2], p->bgr ? "bgr" : "rgb",
             p->nhwc ? "nhwc" : "nchw");
    return buf;
}

/* ------------------------------------------------------------ preprocess */

/* Half-pixel source coordinate of output index o (torch's bilinear,
 * align_corners=False): i0, i1 and the weight of i1. */
static void src_coord(int o, int in, int outn, int *i0, int *i1, float *f) {
    double s = ((double)o + 0.5) * (double)in / (double)outn - 0.5;
    if (s < 0) s = 0;
    int a = (int)s;
    if (a > in - 1) a = in - 1;
    *i0 = a;
    *i1 = a < in - 1 ? a + 1 : a;
    *f = (float)(s - a);
}

/* round(d / 2) with halves to even, as Python's round. */
static int half_even(int d) {
    int q = d / 2;
    return (d % 2 && q % 2) ? q + 1 : q;
}

precis_status pr_image_prep_run(const pr_image *im, const pr_image_prep *p, int def_h, int def_w,
                                const char *what, precis_tensor **out, pr_err *e) {
    *out = NULL;
    int rh = im->h, rw = im->w;
    if (p->resize_short) {
        int64_t s = p->resize_short;
        if (im->h <= im->w) {
            rh = (int)s;
            int64_t l = s * im->w / im->h;
            rw = l > PR_IMAGE_MAX_SIDE ? PR_IMAGE_MAX_SIDE + 1 : (int)l;
        } else {
            rw = (int)s;
            int64_t l = s * im->h / im->w;
            rh = l > PR_IMAGE_MAX_SIDE ? PR_IMAGE_MAX_SIDE + 1 : (int)l;
        }
    } else if (p->resize_h) {
        rh = p->resize_h;
        rw = p->resize_w;
    }
    if (rh > PR_IMAGE_MAX_SIDE || rw > PR_IMAGE_MAX_SIDE)
        return pr_errf(e, PRECIS_ERR_UNSUPPORTED,
                       "%s: resizing the %dx%d image to shorter side %d exceeds the %dx%d limit",
                       what, im->h, im->w, p->resize_short, PR_IMAGE_MAX_SIDE, PR_IMAGE_MAX_SIDE);
    int ch = p->crop_h > 0 ? p->crop_h : def_h > 0 ? def_h : rh;
    int cw = p->crop_w > 0 ? p->crop_w : def_w > 0 ? def_w : rw;
    if (ch > rh || cw > rw)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: centre crop %dx%d is larger than the %s (%dx%d)", what, ch, cw,
                       (p->resize_short || p->resize_h) ? "resized image" : "image", rh, rw);
    int top = half_even(rh - ch), left = half_even(rw - cw);
    int64_t dims[4] = {1, 3, ch, cw};
    if (p->nhwc) {
        dims[1] = ch;
        dims[2] = cw;
        dims[3] = 3;
    }
    precis_tensor *t = NULL;
    precis_status st = pr_tensor_new(PRECIS_FLOAT32, 4, dims, what, &t, e);
    if (st != PRECIS_OK) return st;
    int *x0 = malloc((size_t)cw * 2 * sizeof *x0);
    float *fx = malloc((size_t)cw * sizeof *fx);
    if (!x0 || !fx) {
        free(x0);
        free(fx);
        precis_tensor_destroy(t);
        return pr_errf(e, PRECIS_ERR_OOM, "%s: out of memory", what);
    }
    for (int x = 0; x < cw; x++) src_coord(left + x, im->w, rw, &x0[2 * x], &x0[2 * x + 1], &fx[x]);
    float *dst = t->b.data;
    size_t plane = (size_t)ch * (size_t)cw;
    for (int y = 0; y < ch; y++) {
        int ya, yb;
        float fy;
        src_coord(top + y, im->h, rh, &ya, &yb, &fy);
        const unsigned char *ra = im->rgb + (size_t)ya * im->w * 3;
        const unsigned char *rb = im->rgb + (size_t)yb * im->w * 3;
        for (int x = 0; x < cw; x++) {
            int xa = x0[2 * x] * 3, xb = x0[2 * x + 1] * 3;
            float f = fx[x];
            for (int c = 0; c < 3; c++) {
                float top_v = (1.0f - f) * ra[xa + c] + f * ra[xb + c];
                float bot_v = (1.0f - f) * rb[xa + c] + f * rb[xb + c];
                float v = (1.0f - fy) * top_v + fy * bot_v;
                int oc = p->bgr ? 2 - c : c;
                float o = (v * p->scale - p->mean[oc]) / p->std[oc];
                size_t pix = (size_t)y * cw + (size_t)x;
                if (p->nhwc)
                    dst[pix * 3 + (size_t)oc] = o;
                else
                    dst[(size_t)oc * plane + pix] = o;
            }
        }
    }
    free(x0);
    free(fx);
    *out = t;
    return PRECIS_OK;
}
