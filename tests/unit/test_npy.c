/* .npy reading and writing: round trips, NumPy-made fixtures, malformed
 * headers. Run from tests/ (ctest sets the working directory). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/npy.h"

#include "check.h"

#define FIX "data/fixtures/"

/* ---------------------------------------------------------------- round trip */

static void test_roundtrip(void) {
    static const pr_dtype dts[] = {PRECIS_FLOAT16, PRECIS_FLOAT32, PRECIS_FLOAT64, PRECIS_INT8,
                                   PRECIS_INT16,   PRECIS_INT32,   PRECIS_INT64,   PRECIS_UINT8,
                                   PRECIS_UINT16,  PRECIS_UINT32,  PRECIS_UINT64,  PRECIS_BOOL};
    static const int64_t shapes[][4] = {{0}, {5}, {2, 3}, {3, 0, 2, 1}};
    static const int ranks[] = {0, 1, 2, 4};
    char path[] = "/tmp/precis_npy_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        for (size_t s = 0; s < 4; s++) {
            pr_err e = {0};
            precis_tensor *t = NULL, *u = NULL;
            int rank = ranks[s];
            const int64_t *dims = rank ? shapes[s] : NULL;
            CHECK(pr_tensor_new(dts[d], rank, dims, "t", &t, &e) == PRECIS_OK);
            if (!t) continue;
            unsigned char *p = t->b.data;
            for (size_t i = 0; i < t->b.nbytes; i++) p[i] = (unsigned char)(i * 37 + d);
            if (dts[d] == PRECIS_BOOL)
                for (size_t i = 0; i < t->b.nbytes; i++) p[i] &= 1;
            CHECK(pr_npy_save(path, &t->b, &e) == PRECIS_OK);
            size_t len;
            unsigned char *raw = read_all(path, &len);
            CHECK(raw && len >= 10 && raw[6] == 1 && raw[7] == 0);
            if (raw && len >= 10) {
                size_t hl = (size_t)raw[8] | (size_t)raw[9] << 8;
                CHECK((10 + hl) % 64 == 0 && raw[10 + hl - 1] == '\n');
                CHECK(len == 10 + hl + t->b.nbytes);
            }
            free(raw);
            CHECK(pr_npy_load(path, &u, &e) == PRECIS_OK);
            if (u) {
                CHECK(u->b.dtype == dts[d] && u->b.rank == rank && u->b.numel == t->b.numel);
                CHECK(!rank || !memcmp(u->b.dims, dims, (size_t)rank * sizeof *dims));
                CHECK(u->b.nbytes == t->b.nbytes &&
                      (!u->b.nbytes || !memcmp(u->b.data, t->b.data, u->b.nbytes)));
                CHECK((uintptr_t)u->b.data % 64 == 0);
            } else {
                fprintf(stderr, "  load: %s\n", e.msg);
            }
            precis_tensor_destroy(t);
            precis_tensor_destroy(u);
        }
    }
    /* bfloat16 has no NumPy type */
    pr_err e = {0};
    precis_tensor *t = NULL;
    int64_t two = 2;
    CHECK(pr_tensor_new(PRECIS_BFLOAT16, 1, &two, "t", &t, &e) == PRECIS_OK);
    if (t) {
        CHECK(pr_npy_save(path, &t->b, &e) == PRECIS_ERR_UNSUPPORTED && strstr(e.msg, "bfloat16"));
        precis_tensor_destroy(t);
    }
    unlink(path);
    CHECK(pr_npy_save("/nonexistent-dir/x.npy", &(pr_buf){.dtype = PRECIS_FLOAT32, .rank = 1}, &e) ==
          PRECIS_ERR_IO);
    CHECK(strstr(e.msg, "/nonexistent-dir/x.npy") != NULL);
}

/* ------------------------------------------------------------ numpy fixtures */

static void test_fixtures(void) {
    pr_err e = {0};
    precis_tensor *t = NULL;
    CHECK(pr_npy_load(FIX "np_f32.npy", &t, &e) == PRECIS_OK);
    if (t) {
        CHECK(t->b.dtype == PRECIS_FLOAT32 && t->b.rank == 2 && t->b.dims[0] == 2 &&
              t->b.dims[1] == 3 && ((const float *)t->b.data)[5] == 1.25f);
        precis_tensor_destroy(t);
    }
    CHECK(pr_npy_load(FIX "np_i64.npy", &t, &e) == PRECIS_OK);
    if (t) {
        CHECK(t->b.dtype == PRECIS_INT64 && ((const int64_t *)t->b.data)[0] == -5 &&
              ((const int64_t *)t->b.data)[1] == (int64_t)1 << 40);
        precis_tensor_destroy(t);
    }
    CHECK(pr_npy_load(FIX "np_bool.npy", &t, &e) == PRECIS_OK);
    if (t) {
        CHECK(t->b.dtype == PRECIS_BOOL && t->b.rank == 2 && t->b.dims[0] == 2 &&
              t->b.dims[1] == 1 && ((const uint8_t *)t->b.data)[0] == 1);
        precis_tensor_destroy(t);
    }
    CHECK(pr_npy_load(FIX "np_scalar.npy", &t, &e) == PRECIS_OK);
    if (t) {
        CHECK(t->b.dtype == PRECIS_FLOAT64 && t->b.rank == 0 && t->b.numel == 1 &&
              *(const double *)t->b.data == 1.5);
        precis_tensor_destroy(t);
    }
    CHECK(pr_npy_load(FIX "np_u8_empty.npy", &t, &e) == PRECIS_OK);
    if (t) {
        CHECK(t->b.dtype == PRECIS_UINT8 && t->b.rank == 2 && t->b.numel == 0);
        precis_tensor_destroy(t);
    }
    for (int v = 2; v <= 3; v++) {
        char p[64];
        snprintf(p, sizeof p, FIX "np_v%d.npy", v);
        CHECK(pr_npy_load(p, &t, &e) == PRECIS_OK);
        if (t) {
            CHECK(t->b.dtype == PRECIS_INT16 && t->b.numel == 3 &&
                  ((const int16_t *)t->b.data)[2] == 3);
            precis_tensor_destroy(t);
        }
    }
    CHECK(pr_npy_load(FIX "np_bigendian.npy", &t, &e) == PRECIS_ERR_UNSUPPORTED && !t);
    CHECK(strstr(e.msg, "np_bigendian.npy") && strstr(e.msg, "big-endian"));
    CHECK(pr_npy_load(FIX "np_fortran.npy", &t, &e) == PRECIS_ERR_UNSUPPORTED && !t);
    CHECK(strstr(e.msg, "np_fortran.npy") && strstr(e.msg, "Fortran"));
    CHECK(pr_npy_load(FIX "missing.npy", &t, &e) == PRECIS_ERR_IO && !t);
    CHECK(strstr(e.msg, "cannot open 'data/fixtures/missing.npy': No such file") != NULL);
    CHECK(pr_npy_load(FIX, &t, &e) == PRECIS_ERR_IO && !t);
}

/* --------------------------------------------------------- malformed headers */

/* A v1 file with this header dict (padded) and ndata data bytes. */
static unsigned char *mk(const char *dict, size_t ndata, size_t *len) {
    size_t dl = strlen(dict), hl = ((10 + dl + 1 + 63) & ~(size_t)63) - 10;
    *len = 10 + hl + ndata;
    unsigned char *b = calloc(1, *len);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8);
    memset(b + 10, ' ', hl);
    memcpy(b + 10, dict, dl);
    b[10 + hl - 1] = '\n';
    return b;
}

/* parse must give st, a one-line message naming "mem.npy" and containing s. */
static void bad(const unsigned char *b, size_t len, precis_status st, const char *s) {
    pr_err e = {0};
    precis_tensor *t = NULL;
    precis_status got = pr_npy_parse(b, len, "mem.npy", &t, &e);
    bool ok = got == st && !t && strstr(e.msg, "mem.npy") && (!s || strstr(e.msg, s)) &&
              !strchr(e.msg, '\n');
    CHECK(ok);
    if (!ok) fprintf(stderr, "  expected %d '%s', got %d: %s\n", st, s ? s : "", got, e.msg);
    precis_tensor_destroy(t);
}

static void good(const char *dict, size_t ndata, pr_dtype dt, int rank, int64_t d0) {
    size_t len;
    unsigned char *b = mk(dict, ndata, &len);
    pr_err e = {0};
    precis_tensor *t = NULL;
    precis_status st = pr_npy_parse(b, len, "mem.npy", &t, &e);
    CHECK(st == PRECIS_OK && t);
    if (st) fprintf(stderr, "  %s: %s\n", dict, e.msg);
    if (t) CHECK(t->b.dtype == dt && t->b.rank == rank && (rank == 0 || t->b.dims[0] == d0));
    precis_tensor_destroy(t);
    free(b);
}

static void bad_dict(const char *dict, size_t ndata, precis_status st, const char *s) {
    size_t len;
    unsigned char *b = mk(dict, ndata, &len);
    bad(b, len, st, s);
    free(b);
}

static void test_malformed(void) {
    /* accepted spellings */
    good("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 20, PRECIS_FLOAT32, 1, 5);
    good("{'shape':(5,),'fortran_order':False,'descr':'<f4'}", 20, PRECIS_FLOAT32, 1, 5);
    good("{ \"descr\" : \"|u1\" , 'shape' : ( 2 , 3 ) , 'fortran_order' : False }", 6,
         PRECIS_UINT8, 2, 2);
    good("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 8, PRECIS_INT64, 0, 0);
    good("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", 4, PRECIS_BOOL, 1, 4);
    good("{'descr': '|i1', 'fortran_order': False, 'shape': (3L,), }", 3, PRECIS_INT8, 1, 3);
    good("{'descr': '=f8', 'fortran_order': False, 'shape': (1, 1, 1,), }", 8, PRECIS_FLOAT64, 3,
         1);
    good("{'descr': '>u1', 'fortran_order': False, 'shape': (2,), }", 2, PRECIS_UINT8, 1, 2);

    static const unsigned char magic_only[] = "\x93NUMPY";
    bad(magic_only, 6, PRECIS_ERR_PARSE, "bad magic");
    bad((const unsigned char *)"", 0, PRECIS_ERR_PARSE, "bad magic");
    size_t len;
    unsigned char *b = mk("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8, &len);
    b[1] = 'X';
    bad(b, len, PRECIS_ERR_PARSE, "bad magic");
    b[1] = 'N';
    b[6] = 4;
    bad(b, len, PRECIS_ERR_UNSUPPORTED, "version 4.0");
    b[6] = 1;
    b[7] = 1;
    bad(b, len, PRECIS_ERR_UNSUPPORTED, "version 1.1");
    b[7] = 0;
    /* every truncation fails cleanly */
    for (size_t n = 0; n < len; n++) {
        unsigned char *c = malloc(n ? n : 1);
        if (n) memcpy(c, b, n);
        bad(c, n, n < 10 ? PRECIS_ERR_PARSE : PRECIS_ERR_PARSE, NULL);
        free(c);
    }
    b[8] = 0xff; /* header length past the end */
    bad(b, len, PRECIS_ERR_PARSE, "truncated .npy header");
    /* extra data bytes */
    free(b);
    b = mk("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 9, &len);
    bad(b, len, PRECIS_ERR_PARSE, "trailing bytes");
    free(b);
    /* v2 header length field */
    static const unsigned char v2[] = "\x93NUMPY\x02\x00\xff\xff\xff\x7f{";
    bad(v2, sizeof v2 - 1, PRECIS_ERR_PARSE, "truncated");

    bad_dict("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16,
             PRECIS_ERR_UNSUPPORTED, "'<c8'");
    bad_dict("{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }", 6,
             PRECIS_ERR_UNSUPPORTED, "'<f3'");
    bad_dict("{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }", 8, PRECIS_ERR_PARSE,
             "byte order");
    bad_dict("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
             PRECIS_ERR_PARSE, "descr");
    bad_dict("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
             PRECIS_ERR_UNSUPPORTED, "big-endian");
    bad_dict("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
             PRECIS_ERR_UNSUPPORTED, "Fortran");
    bad_dict("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", 8, PRECIS_ERR_PARSE,
             "fortran_order");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, PRECIS_ERR_PARSE,
             "truncated file");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }",
             8, PRECIS_ERR_OOM, "too large");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8,
             PRECIS_ERR_PARSE, "shape");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
             "4294967296), }",
             8, PRECIS_ERR_OOM, "too large");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, PRECIS_ERR_PARSE,
             "shape");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
             PRECIS_ERR_UNSUPPORTED, "dimensions");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", 8, PRECIS_ERR_PARSE,
             "dictionary");
    bad_dict("{'descr': '<f4', 'shape': (2,), }", 8, PRECIS_ERR_PARSE, "fortran_order");
    bad_dict("{'fortran_order': False, 'shape': (2,), }", 8, PRECIS_ERR_PARSE, "descr");
    bad_dict("{'descr': '<f4', 'fortran_order': False}", 8, PRECIS_ERR_PARSE, "shape");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
             PRECIS_ERR_PARSE, "'x'");
    bad_dict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
             PRECIS_ERR_PARSE, "descr");
    bad_dict("['descr', '<f4']", 8, PRECIS_ERR_PARSE, "dictionary");
    bad_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", 8, PRECIS_ERR_PARSE,
             "trailing");
    bad_dict("{'descr': '<f4\x0a, 'fortran_order': False, 'shape': (2,)}", 8,
             PRECIS_ERR_UNSUPPORTED, NULL);
}

int main(void) {
    test_roundtrip();
    test_fixtures();
    test_malformed();
    return check_report(NULL);
}
