/* The unit tests' assertion macro and counters, shared by tests/unit/test_*.c.
 * CHECK(cond) counts a pass or prints the failing condition and counts a
 * failure; main() ends with `return check_report("test_x");`, which prints
 * the closing line "test_x: N passed, N failed" (no prefix for NULL) and
 * returns the exit status (1 when anything failed). Also small helpers more
 * than one test needs. */
#ifndef PR_TESTS_UNIT_CHECK_H
#define PR_TESTS_UNIT_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int n_pass, n_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            n_pass++;                                                                              \
        } else {                                                                                   \
            n_fail++;                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

static inline int check_report(const char *name) {
    if (name) printf("%s: ", name);
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}

/* The whole file at path (malloc'd, *len bytes; NULL when it cannot be
 * read). */
static inline unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)(n > 0 ? n : 0);
    return b;
}

#endif
