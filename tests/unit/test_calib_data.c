/* Calibration data sources (npy folders, per-input subfolders, list files,
 * image folders), the data hash, image decoding and preprocessing, and the
 * errors for bad layouts, specs and corrupt files. Fixtures are made in a
 * temporary folder at run time.
 *
 * Test mode for tests/io/check_image_prep.py:
 *   test_calib_data --prep IMAGE SPEC OUT.npy
 * preprocesses IMAGE with SPEC for a float32 input of unknown dims and saves
 * the [1,3,H,W] / [1,H,W,3] sample to OUT.npy. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jpeglib.h>
#include <png.h>

#include "io/calib_data.h"
#include "io/image.h"
#include "io/npy.h"

#include "check.h"

static char g_root[64];

/* ------------------------------------------------------------- fixtures */

static const char *P(const char *rel) { /* a path under the temp root (rotating buffers) */
    static char buf[8][512];
    static int i;
    i = (i + 1) % 8;
    snprintf(buf[i], sizeof buf[i], "%s/%s", g_root, rel);
    return buf[i];
}

static void mkd(const char *rel) { mkdir(P(rel), 0755); }

static void rm_rf(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void write_bytes(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(b, 1, n, f) == n);
    fclose(f);
}

static void write_text(const char *rel, const char *text) {
    write_bytes(P(rel), text, strlen(text));
}

/* A .npy of dtype dt and the given shape, element i = base + i. */
static void write_npy(const char *rel, pr_dtype dt, int rank, const int64_t *dims, double base) {
    pr_err e = {0};
    precis_tensor *t = NULL;
    CHECK(pr_tensor_new(dt, rank, dims, "t", &t, &e) == PRECIS_OK);
    if (!t) return;
    for (int64_t i = 0; i < t->b.numel; i++) pr_store_f64(t->b.data, dt, i, base + (double)i);
    CHECK(pr_npy_save(P(rel), &t->b, &e) == PRECIS_OK);
    precis_tensor_destroy(t);
}

typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
} membuf;

static void png_write_mem(png_structp png, png_bytep data, size_t n) {
    membuf *m = png_get_io_ptr(png);
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->p = realloc(m->p, m->cap);
    }
    memcpy(m->p + m->n, data, n);
    m->n += n;
}

static void png_flush_mem(png_structp png) { (void)png; }

/* A PNG in memory: color type ct, bit depth bd, rows of packed samples
 * (16-bit samples big-endian); palette of np entries for PALETTE. */
static membuf make_png(int w, int h, int ct, int bd, const unsigned char *pix, const png_color *pal,
                       int np) {
    membuf m = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    png_set_write_fn(png, &m, png_write_mem, png_flush_mem);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, bd, ct, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (ct == PNG_COLOR_TYPE_PALETTE) png_set_PLTE(png, info, pal, np);
    png_write_info(png, info);
    size_t rb = png_get_rowbytes(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, pix + (size_t)y * rb);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return m;
}

/* A JPEG in memory from RGB (comps 3) or grey (comps 1) pixels; quality < 0:
 * progressive at -quality. */
static membuf make_jpeg(int w, int h, int comps, const unsigned char *pix, int quality) {
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr je;
    c.err = jpeg_std_error(&je);
    jpeg_create_compress(&c);
    unsigned char *out = NULL;
    unsigned long n = 0;
    jpeg_mem_dest(&c, &out, &n);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = comps;
    c.in_color_space = comps == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, abs(quality), TRUE);
    if (quality < 0) jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pix + (size_t)c.next_scanline * (size_t)w * (size_t)comps);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    membuf m = {malloc(n), n, n};
    memcpy(m.p, out, n);
    free(out);
    return m;
}

/* A binary PPM (comps 3) or PGM (comps 1) with 8-bit samples. */
static membuf make_pnm(int w, int h, int comps, const unsigned char *pix) {
    char hdr[64];
    int hl = snprintf(hdr, sizeof hdr, "P%c\n# made by test_calib_data\n%d %d\n255\n",
                      comps == 3 ? '6' : '5', w, h);
    size_t n = (size_t)hl + (size_t)w * (size_t)h * (size_t)comps;
    membuf m = {malloc(n), n, n};
    memcpy(m.p, hdr, (size_t)hl);
    memcpy(m.p + hl, pix, n - (size_t)hl);
    return m;
}

static void save_mem(const char *rel, membuf m) {
    write_bytes(P(rel), m.p, m.n);
    free(m.p);
}

/* A w x h RGB test pattern. */
static unsigned char *pattern(int w, int h) {
    unsigned char *p = malloc((size_t)w * (size_t)h * 3);
    for (int i = 0; i < w * h * 3; i++) p[i] = (unsigned char)(i * 29 + 7);
    return p;
}

static pr_calib_input in4(const char *name, int64_t a, int64_t b, int64_t c, int64_t d) {
    pr_calib_input in = {name, PRECIS_FLOAT32, 4, {a, b, c, d}};
    return in;
}

/* Open, expecting failure with status st and every needle in the message. */
static void open_fails(const char *path, const char *spec, const pr_calib_input *in, int n,
                       precis_status st, const char *n1, const char *n2) {
    pr_err e = {0};
    pr_calib_source *s = (pr_calib_source *)1;
    precis_status got = pr_calib_source_open(path, spec, in, n, &s, &e);
    CHECK(got == st && s == NULL);
    CHECK(strchr(e.msg, '\n') == NULL);
    if (got != st || (n1 && !strstr(e.msg, n1)) || (n2 && !strstr(e.msg, n2))) {
        n_fail++;
        fprintf(stderr, "  open '%s': status %d, message '%s' (want %d, '%s', '%s')\n", path, got,
                e.msg, st, n1 ? n1 : "", n2 ? n2 : "");
    }
    pr_calib_source_close(got == PRECIS_OK ? s : NULL);
}

static pr_calib_source *open_ok(const char *path, const char *spec, const pr_calib_input *in,
                                int n) {
    pr_err e = {0};
    pr_calib_source *s = NULL;
    if (pr_calib_source_open(path, spec, in, n, &s, &e) != PRECIS_OK) {
        n_fail++;
        fprintf(stderr, "  open '%s' failed: %s\n", path, e.msg);
        return NULL;
    }
    n_pass++;
    return s;
}

/* Open (must succeed), then loading batch i fails naming n1 and n2. */
static void load_fails(const char *path, const char *spec, const pr_calib_input *in, int n, int i,
                       const char *n1, const char *n2) {
    pr_calib_source *s = open_ok(path, spec, in, n);
    if (!s) return;
    pr_err e = {0};
    precis_tensor *t[4] = {0};
    precis_status st = pr_calib_source_load(s, i, t, &e);
    CHECK(st != PRECIS_OK && t[0] == NULL && t[1] == NULL && !strchr(e.msg, '\n'));
    if (st == PRECIS_OK || (n1 && !strstr(e.msg, n1)) || (n2 && !strstr(e.msg, n2))) {
        n_fail++;
        fprintf(stderr, "  load %d: '%s' (want '%s', '%s')\n", i, e.msg, n1 ? n1 : "",
                n2 ? n2 : "");
    }
    for (int k = 0; k < 4; k++) precis_tensor_destroy(t[k]);
    pr_calib_source_close(s);
}

/* ------------------------------------------------------------ npy folders */

static void test_npy_folder(void) {
    mkd("npy");
    int64_t sample[2] = {3, 2}, batch[3] = {2, 3, 2};
    write_npy("npy/b.npy", PRECIS_FLOAT32, 2, sample, 100); /* sample: gets a batch dim */
    write_npy("npy/a.npy", PRECIS_FLOAT32, 3, batch, 0);    /* a batch of 2 */
    write_npy("npy/c10.npy", PRECIS_FLOAT32, 2, sample, 200);
    write_text("npy/.hidden", "skipped");
    pr_calib_input in = {"x", PRECIS_FLOAT32, 3, {-1, 3, 2}};
    pr_calib_source *s = open_ok(P("npy"), NULL, &in, 1);
    if (!s) return;
    CHECK(pr_calib_source_batches(s) == 3);
    CHECK(pr_calib_source_samples(s, 0) == -1 && pr_calib_source_samples(s, 3) == -1);
    static const float first[3] = {0, 100, 200};
    static const int64_t n[3] = {2, 1, 1};
    for (int i = 0; i < 3; i++) {
        pr_err e = {0};
        precis_tensor *t = NULL;
        CHECK(pr_calib_source_load(s, i, &t, &e) == PRECIS_OK);
        if (!t) continue;
        CHECK(t->b.rank == 3 && t->b.dims[0] == n[i] && t->b.dims[1] == 3 && t->b.dims[2] == 2);
        CHECK(((const float *)t->b.data)[0] == first[i]);
        CHECK(pr_calib_source_samples(s, i) == n[i]);
        precis_tensor_destroy(t);
    }
    pr_err e = {0};
    precis_tensor *t = NULL;
    CHECK(pr_calib_source_load(s, 3, &t, &e) == PRECIS_ERR_INVALID_ARG && !t);
    pr_calib_source_close(s);

    /* shape and dtype mismatches name the file, the input and the dims */
    in.dims[0] = 1;
    load_fails(P("npy"), NULL, &in, 1, 0, "npy/a.npy", "[2,3,2] does not match input 'x' [1,3,2]");
    in.dims[0] = -1;
    in.dims[2] = 4;
    load_fails(P("npy"), NULL, &in, 1, 1, "npy/b.npy",
               "shape [1,3,2] does not match input 'x' [?,3,4]");
    in.dims[2] = 2;
    in.dtype = PRECIS_FLOAT16;
    load_fails(P("npy"), NULL, &in, 1, 2, "npy/c10.npy",
               "dtype float32 does not match input 'x' (float16)");
    /* rank 2 short by two: refused */
    pr_calib_input in4d = {"x", PRECIS_FLOAT32, 4, {-1, -1, -1, -1}};
    load_fails(P("npy"), NULL, &in4d, 1, 1, "npy/b.npy",
               "[3,2] does not match input 'x' [?,?,?,?]");
    /* a single .npy file is one batch */
    in.dtype = PRECIS_FLOAT32;
    s = open_ok(P("npy/b.npy"), NULL, &in, 1);
    if (s) {
        CHECK(pr_calib_source_batches(s) == 1);
        pr_calib_source_close(s);
    }
    /* preprocessing is refused for npy data */
    open_fails(P("npy"), "resize=4", &in, 1, PRECIS_ERR_INVALID_ARG, "npy", "images only");
}

/* --------------------------------------------------- multi-input subfolders */

static void test_multi_input(void) {
    mkd("multi");
    mkd("multi/ids");
    mkd("multi/attn_mask");
    int64_t d1[1] = {4}, d2[2] = {2, 4};
    write_npy("multi/ids/000.npy", PRECIS_INT64, 1, d1, 0);
    write_npy("multi/ids/001.npy", PRECIS_INT64, 2, d2, 10);
    write_npy("multi/attn_mask/s0.npy", PRECIS_INT64, 1, d1, 50);
    write_npy("multi/attn_mask/s1.npy", PRECIS_INT64, 2, d2, 60);
    pr_calib_input in[2] = {{"ids", PRECIS_INT64, 2, {-1, 4}},
                            {"attn/mask", PRECIS_INT64, 2, {-1, -1}}};
    pr_calib_source *s = open_ok(P("multi"), NULL, in, 2);
    if (s) {
        CHECK(pr_calib_source_batches(s) == 2);
        pr_err e = {0};
        precis_tensor *t[2] = {0};
        CHECK(pr_calib_source_load(s, 1, t, &e) == PRECIS_OK);
        if (t[0] && t[1]) {
            CHECK(t[0]->b.dims[0] == 2 && t[1]->b.dims[0] == 2 && t[1]->b.dims[1] == 4);
            CHECK(((const int64_t *)t[0]->b.data)[0] == 10 &&
                  ((const int64_t *)t[1]->b.data)[7] == 67);
        }
        CHECK(pr_calib_source_samples(s, 1) == 2);
        precis_tensor_destroy(t[0]);
        precis_tensor_destroy(t[1]);
        CHECK(pr_calib_source_load(s, 0, t, &e) == PRECIS_OK);
        CHECK(t[0] && t[0]->b.rank == 2 && t[0]->b.dims[0] == 1 &&
              pr_calib_source_samples(s, 0) == 1);
        precis_tensor_destroy(t[0]);
        precis_tensor_destroy(t[1]);
        pr_calib_source_close(s);
    }
    /* samples differing between the inputs of one batch */
    write_npy("multi/attn_mask/s1.npy", PRECIS_INT64, 2, (int64_t[]){3, 4}, 60);
    load_fails(P("multi"), NULL, in, 2, 1, "attn_mask/s1.npy", "ids/001.npy");
    /* subfolder counts differ */
    write_npy("multi/attn_mask/s2.npy", PRECIS_INT64, 1, d1, 0);
    open_fails(P("multi"), NULL, in, 2, PRECIS_ERR_INVALID_ARG, "'ids' holds 2 files",
               "'attn_mask' holds 3");
    /* a subfolder naming no input */
    mkd("multi/extra");
    open_fails(P("multi"), NULL, in, 2, PRECIS_ERR_INVALID_ARG, "multi/extra", "no model input");
    rmdir(P("multi/extra"));
    /* missing input subfolder */
    pr_calib_input in3[3] = {in[0], in[1], {"pos", PRECIS_INT64, 1, {-1}}};
    open_fails(P("multi"), NULL, in3, 3, PRECIS_ERR_INVALID_ARG, "no subfolder 'pos'",
               "input 'pos'");
    /* flat files for a two-input model */
    open_fails(P("multi/ids"), NULL, in, 2, PRECIS_ERR_INVALID_ARG, "2 inputs ('ids', 'attn/mask'",
               "subfolder per input");
    /* a folder mixing subfolders and files */
    write_npy("multi/stray.npy", PRECIS_INT64, 1, d1, 0);
    open_fails(P("multi"), NULL, in, 2, PRECIS_ERR_INVALID_ARG, "mixes subfolders", "stray.npy");
    /* one-input model may use the subfolder rule too */
    mkd("one");
    mkd("one/in_0");
    write_npy("one/in_0/a.npy", PRECIS_INT64, 1, d1, 0);
    pr_calib_input one = {"in:0", PRECIS_INT64, 2, {1, 4}};
    s = open_ok(P("one"), NULL, &one, 1);
    CHECK(s && pr_calib_source_batches(s) == 1);
    pr_calib_source_close(s);
    /* an empty input subfolder */
    mkd("one2");
    mkd("one2/in_0");
    open_fails(P("one2"), NULL, &one, 1, PRECIS_ERR_INVALID_ARG, "one2/in_0", "empty folder");
}

/* ------------------------------------------------------------ list files */

static void test_list(void) {
    mkd("list");
    mkd("list/d");
    int64_t d1[1] = {4};
    write_npy("list/d/a.npy", PRECIS_INT64, 1, d1, 1);
    write_npy("list/d/b.npy", PRECIS_INT64, 1, d1, 2);
    write_npy("list/d/with space.npy", PRECIS_INT64, 1, d1, 3);
    char text[1024];
    snprintf(text, sizeof text,
             "# calibration batches\n\nd/a.npy\r\n  x=d/b.npy  \n%s\n   # indented comment\n"
             "d/with space.npy",
             P("list/d/a.npy"));
    write_text("list/one.txt", text);
    pr_calib_input in = {"x", PRECIS_INT64, 2, {-1, 4}};
    pr_calib_source *s = open_ok(P("list/one.txt"), NULL, &in, 1);
    if (s) {
        CHECK(pr_calib_source_batches(s) == 4);
        static const int64_t first[4] = {1, 2, 1, 3};
        for (int i = 0; i < 4; i++) {
            pr_err e = {0};
            precis_tensor *t = NULL;
            CHECK(pr_calib_source_load(s, i, &t, &e) == PRECIS_OK);
            CHECK(t && ((const int64_t *)t->b.data)[0] == first[i]);
            precis_tensor_destroy(t);
        }
        pr_calib_source_close(s);
    }
    /* multi-input: name=path in any order */
    pr_calib_input in2[2] = {{"a", PRECIS_INT64, 2, {-1, 4}}, {"ab", PRECIS_INT64, 2, {-1, 4}}};
    write_text("list/two.txt", "ab=d/b.npy a=d/a.npy\n\ta=d/b.npy\tab=d/a.npy\n");
    s = open_ok(P("list/two.txt"), NULL, in2, 2);
    if (s) {
        pr_err e = {0};
        precis_tensor *t[2] = {0};
        CHECK(pr_calib_source_batches(s) == 2);
        CHECK(pr_calib_source_load(s, 0, t, &e) == PRECIS_OK);
        CHECK(t[0] && t[1] && ((const int64_t *)t[0]->b.data)[0] == 1 &&
              ((const int64_t *)t[1]->b.data)[0] == 2);
        precis_tensor_destroy(t[0]);
        precis_tensor_destroy(t[1]);
        pr_calib_source_close(s);
    }
    write_text("list/bad1.txt", "a=d/a.npy ab=d/b.npy\nc=d/a.npy a=d/a.npy\n");
    open_fails(P("list/bad1.txt"), NULL, in2, 2, PRECIS_ERR_INVALID_ARG, "bad1.txt:2:",
               "'c=d/a.npy' is not name=path");
    write_text("list/bad2.txt", "a=d/a.npy\n");
    open_fails(P("list/bad2.txt"), NULL, in2, 2, PRECIS_ERR_INVALID_ARG, "bad2.txt:1:",
               "no path for input 'ab'");
    write_text("list/bad3.txt", "a=d/a.npy a=d/b.npy ab=d/a.npy\n");
    open_fails(P("list/bad3.txt"), NULL, in2, 2, PRECIS_ERR_INVALID_ARG, "bad3.txt:1:",
               "'a' given twice");
    write_text("list/bad4.txt", "d/a.npy\nd/notes.txt\n");
    open_fails(P("list/bad4.txt"), NULL, &in, 1, PRECIS_ERR_INVALID_ARG, "bad4.txt:2:",
               "'d/notes.txt': unknown file type");
    write_text("list/bad5.txt", "d/a.npy\nd/missing.npy\n");
    open_fails(P("list/bad5.txt"), NULL, &in, 1, PRECIS_ERR_IO, "list/d/missing.npy",
               "cannot open");
    write_text("list/empty.txt", "# nothing\n\n");
    open_fails(P("list/empty.txt"), NULL, &in, 1, PRECIS_ERR_INVALID_ARG, "empty.txt",
               "no entry lines");
    open_fails(P("list/nothere.txt"), NULL, &in, 1, PRECIS_ERR_IO, "nothere.txt", NULL);
}

/* ------------------------------------------------------------ decoding */

static void test_decode(void) {
    pr_err e = {0};
    pr_image im;
    unsigned char rgb[2 * 3 * 3], rgba[2 * 3 * 4], grey[6], g16[12], rgb16[36], pal_idx[6];
    for (int i = 0; i < 18; i++) rgb[i] = (unsigned char)(i * 13 + 1);
    for (int i = 0; i < 6; i++) {
        grey[i] = (unsigned char)(i * 40);
        g16[2 * i] = (unsigned char)(i * 40);
        g16[2 * i + 1] = 0xff; /* low byte dropped */
        memcpy(rgba + 4 * i, rgb + 3 * i, 3);
        rgba[4 * i + 3] = (unsigned char)(i * 50); /* alpha dropped, not composited */
        pal_idx[i] = (unsigned char)(i % 3);
    }
    for (int i = 0; i < 18; i++) {
        rgb16[2 * i] = rgb[i];
        rgb16[2 * i + 1] = 0x80;
    }
    png_color pal[3] = {{1, 2, 3}, {40, 50, 60}, {200, 210, 220}};
    struct {
        membuf m;
        int exact_grey; /* 1: expect grey, 2: palette, 0: rgb */
    } cases[] = {
        {make_png(3, 2, PNG_COLOR_TYPE_RGB, 8, rgb, NULL, 0), 0},
        {make_png(3, 2, PNG_COLOR_TYPE_RGBA, 8, rgba, NULL, 0), 0},
        {make_png(3, 2, PNG_COLOR_TYPE_RGB, 16, rgb16, NULL, 0), 0},
        {make_png(3, 2, PNG_COLOR_TYPE_GRAY, 8, grey, NULL, 0), 1},
        {make_png(3, 2, PNG_COLOR_TYPE_GRAY, 16, g16, NULL, 0), 1},
        {make_png(3, 2, PNG_COLOR_TYPE_PALETTE, 8, pal_idx, pal, 3), 2},
        {make_pnm(3, 2, 3, rgb), 0},
        {make_pnm(3, 2, 1, grey), 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK(pr_image_decode(cases[c].m.p, cases[c].m.n, "mem", &im, &e) == PRECIS_OK);
        CHECK(im.w == 3 && im.h == 2 && im.rgb);
        bool ok = im.rgb != NULL;
        for (int i = 0; ok && i < 6; i++)
            for (int ch = 0; ch < 3; ch++) {
                const png_color *pc = &pal[i % 3];
                int want = cases[c].exact_grey == 1   ? grey[i]
                           : cases[c].exact_grey == 2 ? (ch == 0   ? pc->red
                                                         : ch == 1 ? pc->green
                                                                   : pc->blue)
                                                      : rgb[3 * i + ch];
                ok = ok && im.rgb[3 * i + ch] == want;
            }
        CHECK(ok);
        if (!ok) fprintf(stderr, "  decode case %zu: %s\n", c, e.msg);
        pr_image_free(&im);
        free(cases[c].m.p);
    }
    /* 16-bit PPM and maxval 15 PGM are rescaled */
    unsigned char p16[] = "P6 1 1 65535 \x80\x00\xff\xff\x00\x00";
    CHECK(pr_image_decode(p16, sizeof p16 - 1, "p16", &im, &e) == PRECIS_OK);
    CHECK(im.rgb && im.rgb[0] == 128 && im.rgb[1] == 255 && im.rgb[2] == 0);
    pr_image_free(&im);
    unsigned char p15[] = "P5\n2 1\n15\n\x0f\x07";
    CHECK(pr_image_decode(p15, sizeof p15 - 1, "p15", &im, &e) == PRECIS_OK);
    CHECK(im.rgb && im.rgb[0] == 255 && im.rgb[3] == 119 && im.rgb[5] == 119);
    pr_image_free(&im);
    /* JPEG: flat colours survive compression to within a step */
    unsigned char flat[16 * 16 * 3];
    for (int i = 0; i < 16 * 16; i++) {
        flat[3 * i] = 200;
        flat[3 * i + 1] = 100;
        flat[3 * i + 2] = 30;
    }
    membuf j = make_jpeg(16, 16, 3, flat, 95);
    CHECK(pr_image_decode(j.p, j.n, "j", &im, &e) == PRECIS_OK);
    CHECK(im.w == 16 && im.h == 16 && im.rgb && abs(im.rgb[0] - 200) <= 3 &&
          abs(im.rgb[1] - 100) <= 3 && abs(im.rgb[2] - 30) <= 3);
    pr_image_free(&im);
    free(j.p);
    j = make_jpeg(16, 16, 1, flat, 95); /* grey: R = G = B */
    CHECK(pr_image_decode(j.p, j.n, "j", &im, &e) == PRECIS_OK);
    CHECK(im.rgb && im.rgb[0] == im.rgb[1] && im.rgb[1] == im.rgb[2]);
    pr_image_free(&im);
    free(j.p);
    /* not an image; unsupported PNM types */
    CHECK(pr_image_decode("GIF89a....", 10, "x.gif", &im, &e) == PRECIS_ERR_PARSE &&
          strstr(e.msg, "x.gif: not a PNG, JPEG"));
    CHECK(pr_image_decode("P3\n1 1\n255\n1 2 3\n", 17, "a.ppm", &im, &e) ==
              PRECIS_ERR_UNSUPPORTED &&
          strstr(e.msg, "P3"));
    /* over 16k on a side */
    const char *big = "P6\n16385 1\n255\n";
    CHECK(pr_image_decode(big, strlen(big), "big.ppm", &im, &e) == PRECIS_ERR_UNSUPPORTED &&
          strstr(e.msg, "big.ppm: 16385x1 image exceeds the 16384x16384 limit"));
    unsigned char *row = calloc(16385 * 2, 3);
    membuf bp = make_png(1, 16385, PNG_COLOR_TYPE_RGB, 8, row, NULL, 0);
    CHECK(pr_image_decode(bp.p, bp.n, "big.png", &im, &e) == PRECIS_ERR_UNSUPPORTED &&
          strstr(e.msg, "big.png: 1x16385 image exceeds"));
    free(bp.p);
    membuf bj = make_jpeg(16400, 1, 3, row, 50);
    CHECK(pr_image_decode(bj.p, bj.n, "big.jpg", &im, &e) == PRECIS_ERR_UNSUPPORTED &&
          strstr(e.msg, "big.jpg: 16400x1 image exceeds"));
    free(bj.p);
    free(row);
}

/* Every truncation of a valid file fails cleanly; byte flips never crash. */
static void test_corrupt(void) {
    unsigned char *pix = pattern(9, 7);
    membuf files[4] = {make_png(9, 7, PNG_COLOR_TYPE_RGB, 8, pix, NULL, 0),
                       make_jpeg(9, 7, 3, pix, 90), make_pnm(9, 7, 3, pix),
                       make_jpeg(9, 7, 3, pix, -90)};
    static const char *names[4] = {"t.png", "t.jpg", "t.ppm", "progressive.jpg"};
    free(pix);
    for (int f = 0; f < 4; f++) {
        pr_err e = {0};
        pr_image im;
        CHECK(pr_image_decode(files[f].p, files[f].n, names[f], &im, &e) == PRECIS_OK);
        pr_image_free(&im);
        int bad = 0;
        for (size_t len = 0; len < files[f].n; len++) {
            unsigned char *cut = malloc(len ? len : 1); /* exact size: ASan sees overreads */
            memcpy(cut, files[f].p, len);
            precis_status st = pr_image_decode(cut, len, names[f], &im, &e);
            if (st == PRECIS_OK || !strstr(e.msg, names[f]) || strchr(e.msg, '\n') || im.rgb) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s cut at %zu: status %d '%s'\n", names[f], len, st, e.msg);
            }
            pr_image_free(&im);
            free(cut);
        }
        CHECK(bad == 0);
        for (size_t i = 0; i < files[f].n; i++) {
            unsigned char *flip = malloc(files[f].n);
            memcpy(flip, files[f].p, files[f].n);
            flip[i] ^= (unsigned char)(i % 2 ? 0xff : 0x10);
            precis_status st = pr_image_decode(flip, files[f].n, names[f], &im, &e);
            CHECK(st == PRECIS_OK ? (im.rgb != NULL) : (im.rgb == NULL && strstr(e.msg, names[f])));
            pr_image_free(&im);
            free(flip);
        }
    }
    /* through a source: the error names the file */
    mkd("bad");
    write_bytes(P("bad/x.png"), files[0].p, files[0].n / 2);
    pr_calib_input in = in4("img", 1, 3, -1, -1);
    load_fails(P("bad"), "resize=4", &in, 1, 0, "bad/x.png", "bad PNG");
    for (int f = 0; f < 4; f++) free(files[f].p);
}

/* ------------------------------------------------------- preprocessing */

static void test_prep_numerics(void) {
    /* 2x2: (10,20,30) (50,60,70) / (90,100,110) (130,140,150) */
    unsigned char px[12] = {10, 20, 30, 50, 60, 70, 90, 100, 110, 130, 140, 150};
    mkd("img1");
    save_mem("img1/a.ppm", make_pnm(2, 2, 3, px));
    /* resize 2x2 -> 4x4 samples the source at -0.25 (clamped to 0), 0.25,
     * 0.75, 1.25 (clamped to 1); the centre 2x2 crop (rows/cols 1..2) of R is
     * [[40, 60], [80, 100]], G = R + 10, B = R + 20. order=bgr: channel 0 is
     * B, with mean 1 and std 2; G mean 2 std 4; R mean 3 std 8. */
    pr_calib_input in = in4("img", 1, 2, 2, 3); /* NHWC */
    pr_calib_source *s =
        open_ok(P("img1"), "resize=4x4, crop=2 ,scale=1,mean=1:2:3,std=2:4:8,order=bgr,layout=nhwc",
                &in, 1);
    if (s) {
        pr_err e = {0};
        precis_tensor *t = NULL;
        CHECK(pr_calib_source_load(s, 0, &t, &e) == PRECIS_OK);
        if (t) {
            static const float r[4] = {40, 60, 80, 100};
            const float *d = t->b.data;
            CHECK(t->b.rank == 4 && t->b.dims[1] == 2 && t->b.dims[2] == 2 && t->b.dims[3] == 3);
            bool ok = true;
            for (int p = 0; p < 4; p++) {
                ok = ok && d[3 * p] == (r[p] + 20 - 1) / 2;
                ok = ok && d[3 * p + 1] == (r[p] + 10 - 2) / 4;
                ok = ok && d[3 * p + 2] == (r[p] - 3) / 8;
            }
            CHECK(ok && d[0] == 29.5f && d[2] == 4.625f);
        } else {
            fprintf(stderr, "  %s\n", e.msg);
        }
        precis_tensor_destroy(t);
        pr_calib_source_close(s);
    }
    /* NCHW rgb, default scale 1/255, crop from the input's H, W; one mean */
    in = in4("img", -1, 3, 2, 2);
    s = open_ok(P("img1"), "resize=4x4,mean=0.5", &in, 1);
    if (s) {
        pr_err e = {0};
        precis_tensor *t = NULL;
        CHECK(pr_calib_source_load(s, 0, &t, &e) == PRECIS_OK);
        if (t) {
            const float *d = t->b.data;
            CHECK(t->b.dims[1] == 3 && t->b.dims[2] == 2 && t->b.dims[3] == 2);
            CHECK(fabsf(d[0] - (40.0f / 255 - 0.5f)) < 1e-6f);
            CHECK(fabsf(d[4 + 3] - (110.0f / 255 - 0.5f)) < 1e-6f); /* G at (1,1) */
            CHECK(fabsf(d[8 + 1] - (80.0f / 255 - 0.5f)) < 1e-6f);  /* B at (0,1) */
        }
        precis_tensor_destroy(t);
        pr_calib_source_close(s);
    }
    /* shrinking 4x4 -> 2x2 averages 2x2 blocks (no antialias beyond that) */
    unsigned char g4[16];
    for (int i = 0; i < 16; i++) g4[i] = (unsigned char)(i * 10);
    pr_image im = {4, 4, malloc(48)};
    for (int i = 0; i < 16; i++) im.rgb[3 * i] = im.rgb[3 * i + 1] = im.rgb[3 * i + 2] = g4[i];
    pr_image_prep p;
    pr_err e = {0};
    CHECK(pr_image_prep_parse("resize=2x2,scale=1", &p, &e) == PRECIS_OK);
    precis_tensor *t = NULL;
    CHECK(pr_image_prep_run(&im, &p, 0, 0, "m", &t, &e) == PRECIS_OK);
    if (t) {
        const float *d = t->b.data;
        CHECK(d[0] == 25 && d[1] == 45 && d[2] == 105 && d[3] == 125 && d[4] == 25);
    }
    precis_tensor_destroy(t);
    /* shorter side: 4x4 -> 3x3; 3x4 (h x w) with S=2 -> 2 x floor(8/3) = 2x2 */
    CHECK(pr_image_prep_parse("resize=3", &p, &e) == PRECIS_OK);
    CHECK(pr_image_prep_run(&im, &p, 0, 0, "m", &t, &e) == PRECIS_OK);
    CHECK(t && t->b.dims[2] == 3 && t->b.dims[3] == 3);
    precis_tensor_destroy(t);
    im.h = 3;
    CHECK(pr_image_prep_parse("resize=2", &p, &e) == PRECIS_OK);
    CHECK(pr_image_prep_run(&im, &p, 0, 0, "m", &t, &e) == PRECIS_OK);
    CHECK(t && t->b.dims[2] == 2 && t->b.dims[3] == 2);
    precis_tensor_destroy(t);
    CHECK(pr_image_prep_parse("resize=3,crop=2x4", &p, &e) == PRECIS_OK); /* 3x4 -> 3x4 */
    CHECK(pr_image_prep_run(&im, &p, 0, 0, "m", &t, &e) == PRECIS_OK);
    CHECK(t && t->b.dims[2] == 2 && t->b.dims[3] == 4);
    precis_tensor_destroy(t);
    CHECK(pr_image_prep_parse("crop=4", &p, &e) == PRECIS_OK);
    CHECK(pr_image_prep_run(&im, &p, 0, 0, "m.png", &t, &e) == PRECIS_ERR_INVALID_ARG && !t);
    CHECK(strstr(e.msg, "m.png: centre crop 4x4 is larger than the image (3x4)") != NULL);
    pr_image_free(&im);

    /* against the input: crop larger, wrong H/W, channels, dtype, rank */
    in = in4("img", 1, 3, 4, 4);
    load_fails(P("img1"), "scale=1", &in, 1, 0, "img1/a.ppm",
               "centre crop 4x4 is larger than the image (2x2)");
    in = in4("img", 1, 3, 3, 3);
    load_fails(P("img1"), "resize=4,crop=2", &in, 1, 0, "img1/a.ppm",
               "[1,3,2,2] does not match input 'img' [1,3,3,3]");
    in = in4("img", 1, 1, 2, 2);
    load_fails(P("img1"), "crop=2", &in, 1, 0, "img1/a.ppm",
               "3 channels but input 'img' [1,1,2,2] has 1");
    in = in4("img", 1, 3, 2, 2);
    in.dtype = PRECIS_UINT8;
    load_fails(P("img1"), "crop=2", &in, 1, 0, "img1/a.ppm",
               "float32 samples but input 'img' is uint8");
}

static void test_image_folder(void) {
    mkd("imgs");
    unsigned char *pix = pattern(6, 5);
    save_mem("imgs/c.png", make_png(6, 5, PNG_COLOR_TYPE_RGB, 8, pix, NULL, 0));
    save_mem("imgs/a.JPG", make_jpeg(6, 5, 3, pix, 90));
    save_mem("imgs/b.ppm", make_pnm(6, 5, 3, pix));
    free(pix);
    pr_calib_input in = in4("img", -1, 3, 4, 4);
    pr_calib_source *s = open_ok(P("imgs"), "resize=4x4,scale=1", &in, 1);
    if (s) {
        CHECK(pr_calib_source_batches(s) == 3);
        float *prev = NULL;
        for (int i = 0; i < 3; i++) {
            pr_err e = {0};
            precis_tensor *t = NULL;
            CHECK(pr_calib_source_load(s, i, &t, &e) == PRECIS_OK);
            CHECK(t && t->b.dims[0] == 1 && pr_calib_source_samples(s, i) == 1);
            if (!t) continue;
            if (i == 2 && prev) /* b.ppm and c.png hold the same pixels */
                CHECK(!memcmp(prev, t->b.data, t->b.nbytes));
            free(prev);
            prev = malloc(t->b.nbytes);
            memcpy(prev, t->b.data, t->b.nbytes);
            precis_tensor_destroy(t);
        }
        free(prev);
        pr_calib_source_close(s);
    }
    open_fails(P("imgs"), NULL, &in, 1, PRECIS_ERR_INVALID_ARG, "imgs/a.JPG",
               "need a preprocessing spec");
    open_fails(P("imgs"), "", &in, 1, PRECIS_ERR_INVALID_ARG, "need a preprocessing spec", NULL);
    /* list files may name images */
    write_text("imgs.txt", "imgs/b.ppm\n");
    s = open_ok(P("imgs.txt"), "resize=4x4", &in, 1);
    CHECK(s && pr_calib_source_batches(s) == 1);
    pr_calib_source_close(s);
    /* spec errors name the item */
    static const char *bad[][2] = {
        {"resize=4,foo=1", "unknown item 'foo=1'"},
        {"resize=abc", "bad item 'resize=abc'"},
        {"resize=0", "bad item 'resize=0'"},
        {"resize=4x", "bad item 'resize=4x'"},
        {"crop=16385", "bad item 'crop=16385'"},
        {"std=1:0:1", "bad item 'std=1:0:1'"},
        {"mean=1:2", "bad item 'mean=1:2'"},
        {"mean=1:2:3:4", "bad item 'mean=1:2:3:4'"},
        {"mean=nan", "bad item 'mean=nan'"},
        {"scale=", "bad item 'scale='"},
        {"order=rbg", "bad item 'order=rbg'"},
        {"layout=chw", "bad item 'layout=chw'"},
        {"resize=4,resize=5", "item 'resize=5' repeats resize"},
        {"resize=4,,crop=2", "empty item"},
        {"resize", "unknown item 'resize'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        open_fails(P("imgs"), bad[i][0], &in, 1, PRECIS_ERR_INVALID_ARG, bad[i][1], NULL);
}

/* ------------------------------------------------------------- layouts */

static void test_layout_errors(void) {
    pr_calib_input in = {"x", PRECIS_FLOAT32, 2, {-1, 4}};
    mkd("empty");
    write_text("empty/.keep", "");
    open_fails(P("empty"), NULL, &in, 1, PRECIS_ERR_INVALID_ARG, "empty", "empty folder");
    mkd("mixed");
    write_npy("mixed/a.npy", PRECIS_FLOAT32, 1, (int64_t[]){4}, 0);
    save_mem("mixed/b.pgm", make_pnm(1, 1, 1, (const unsigned char *)"x"));
    open_fails(P("mixed"), NULL, &in, 1, PRECIS_ERR_INVALID_ARG, "mixes .npy files (a.npy)",
               "images (b.pgm)");
    mkd("unk");
    write_npy("unk/a.npy", PRECIS_FLOAT32, 1, (int64_t[]){4}, 0);
    write_text("unk/readme.md", "hi");
    open_fails(P("unk"), NULL, &in, 1, PRECIS_ERR_INVALID_ARG, "unk/readme.md",
               "unknown file type");
    open_fails(P("nowhere"), NULL, &in, 1, PRECIS_ERR_IO, "nowhere", "cannot access");
    open_fails(P("mixed/a.npy"), NULL, (pr_calib_input[]){in, in}, 2, PRECIS_ERR_INVALID_ARG,
               "one file cannot feed a model with 2 inputs", NULL);
}

/* ----------------------------------------------------------------- hash */

static uint64_t hash_of(const char *path, const char *spec, const pr_calib_input *in, int n) {
    pr_calib_source *s = open_ok(path, spec, in, n);
    uint64_t h = pr_calib_source_hash(s);
    pr_calib_source_close(s);
    return h;
}

static void test_hash(void) {
    mkd("h1");
    mkd("h2");
    int64_t d[1] = {5};
    write_npy("h1/a.npy", PRECIS_FLOAT32, 1, d, 0);
    write_npy("h1/b.npy", PRECIS_FLOAT32, 1, d, 7);
    write_npy("h2/x.npy", PRECIS_FLOAT32, 1, d, 0); /* same bytes, other names and place */
    write_npy("h2/y.npy", PRECIS_FLOAT32, 1, d, 7);
    pr_calib_input in = {"x", PRECIS_FLOAT32, 2, {-1, 5}};
    uint64_t h1 = hash_of(P("h1"), NULL, &in, 1);
    CHECK(h1 != 0 && h1 == hash_of(P("h1"), NULL, &in, 1));
    CHECK(h1 == hash_of(P("h2"), NULL, &in, 1));
    size_t n;
    unsigned char *b = read_all(P("h2/y.npy"), &n);
    if (b) {
        b[n - 1] ^= 1;
        write_bytes(P("h2/y.npy"), b, n);
        free(b);
    }
    CHECK(h1 != hash_of(P("h2"), NULL, &in, 1));
    write_npy("h2/y.npy", PRECIS_FLOAT32, 1, d, 7);
    CHECK(h1 == hash_of(P("h2"), NULL, &in, 1));
    write_npy("h2/z.npy", PRECIS_FLOAT32, 1, d, 7); /* one more file */
    CHECK(h1 != hash_of(P("h2"), NULL, &in, 1));
    /* order matters */
    write_text("h.txt", "h1/b.npy\nh1/a.npy\n");
    CHECK(h1 != hash_of(P("h.txt"), NULL, &in, 1));
    write_text("h.txt", "h1/a.npy\nh1/b.npy\n");
    CHECK(h1 == hash_of(P("h.txt"), NULL, &in, 1));
    /* images: the normalized spec is part of the hash */
    mkd("hi");
    unsigned char *pix = pattern(4, 4);
    save_mem("hi/a.png", make_png(4, 4, PNG_COLOR_TYPE_RGB, 8, pix, NULL, 0));
    free(pix);
    pr_calib_input ii = in4("img", 1, 3, 2, 2);
    uint64_t a = hash_of(P("hi"), "resize=4,crop=2,mean=0.5:0.5:0.5", &ii, 1);
    CHECK(a == hash_of(P("hi"), " mean=0.5 ,crop=2x2,resize=4,order=rgb", &ii, 1));
    CHECK(a != hash_of(P("hi"), "resize=4,crop=2,mean=0.5:0.5:0.25", &ii, 1));
    CHECK(a != hash_of(P("hi"), "resize=4,crop=2,mean=0.5,layout=nhwc", &ii, 1));
    CHECK(a != hash_of(P("hi"), "resize=4x4,crop=2,mean=0.5", &ii, 1));
    pr_image_prep p;
    char buf[512];
    pr_err e = {0};
    CHECK(pr_image_prep_parse(NULL, &p, &e) == PRECIS_OK);
    CHECK(!strcmp(pr_image_prep_normalize(&p, buf, sizeof buf),
                  "resize=none,crop=input,scale=0.00392156886,mean=0:0:0,std=1:1:1,order=rgb,"
                  "layout=nchw"));
}

/* --------------------------------------------------------------- main */

/* --prep IMAGE SPEC OUT.npy: see the top of the file. */
static int prep_mode(const char *image, const char *spec, const char *out) {
    pr_err e = {0};
    pr_calib_input in = in4("img", -1, -1, -1, -1);
    pr_calib_source *s = NULL;
    precis_tensor *t = NULL;
    if (pr_calib_source_open(image, spec, &in, 1, &s, &e) != PRECIS_OK ||
        pr_calib_source_load(s, 0, &t, &e) != PRECIS_OK ||
        pr_npy_save(out, &t->b, &e) != PRECIS_OK) {
        fprintf(stderr, "test_calib_data --prep: %s\n", e.msg);
        pr_calib_source_close(s);
        return 1;
    }
    precis_tensor_destroy(t);
    pr_calib_source_close(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--prep")) return prep_mode(argv[2], argv[3], argv[4]);
    snprintf(g_root, sizeof g_root, "/tmp/precis_cdata_XXXXXX");
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_npy_folder();
    test_multi_input();
    test_list();
    test_decode();
    test_corrupt();
    test_prep_numerics();
    test_image_folder();
    test_layout_errors();
    test_hash();
    rm_rf(g_root);
    return check_report("test_calib_data");
}
