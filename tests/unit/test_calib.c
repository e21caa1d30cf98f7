/* INT8 calibration: statistics (min/max, non-finite values, growing |x|
 * histograms, thread-count independence), the four calibrators, the entropy
 * calibrator against an independent NumPy oracle, and the calibration cache
 * (round trip, key mismatches, malformed files). Run from tests/. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quant/calib.h"

#include "check.h"

#define NB PR_CALIB_BINS

/* ---------------------------------------------------------------- helpers */

typedef struct rng {
  uint64_t s;
} rng;

/* splitmix64, as tests/quant/entropy_oracle.py's */
static uint64_t next64(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double unif(rng *r) {
  return ((double)(next64(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(rng *r) {
  return sqrt(-2 * log(unif(r))) * cos(6.283185307179586 * unif(r));
}

static bool same_stats(const pr_calib_tensor *a, const pr_calib_tensor *b) {
  return a->min == b->min && a->max == b->max && a->count == b->count &&
         a->nonfinite == b->nonfinite && a->width == b->width &&
         !memcmp(a->hist, b->hist, NB * sizeof *a->hist);
}

/* A stats set of one tensor "t" fed x[0..n) in batches of `batch`. */
static pr_calib_stats *feed(const float *x, int64_t n, int64_t batch) {
  pr_err e = {0};
  pr_calib_stats *s = pr_calib_create();
  int i = pr_calib_tensor_index(s, "t", &e);
  for (int64_t o = 0; o < n; o += batch)
    CHECK(pr_calib_add(s, i, x + o, n - o < batch ? n - o : batch, &e) ==
          PRECIS_OK);
  return s;
}

static double amax_of(const pr_calib_stats *s, int i, pr_calibrator m,
                      double pct, int levels) {
  pr_err e = {0};
  pr_calib_cfg cfg = {m, pct};
  double a = -1;
  CHECK(pr_calib_amax(s, i, &cfg, levels, &a, &e) == PRECIS_OK);
  return a;
}

/* ---------------------------------------------------------------- statistics
 */

static void test_basic(void) {
  pr_err e = {0};
  pr_calib_stats *s = pr_calib_create();
  int a = pr_calib_tensor_index(s, "a", &e),
      b = pr_calib_tensor_index(s, "b", &e);
  CHECK(a == 0 && b == 1 && pr_calib_tensor_index(s, "a", &e) == 0);
  CHECK(pr_calib_find(s, "b") == 1 && pr_calib_find(s, "c") == -1 &&
        pr_calib_count(s) == 2);
  float x[] = {1.5f, -3.0f, NAN, 2.0f, INFINITY, -INFINITY, 0.0f, -0.0f};
  CHECK(pr_calib_add(s, a, x, 8, &e) == PRECIS_OK);
  const pr_calib_tensor *t = pr_calib_get(s, a);
  CHECK(!strcmp(t->name, "a") && t->min == -3.0 && t->max == 2.0);
  CHECK(t->count == 5 && t->nonfinite == 3 && t->width == 3.0 / NB);
  CHECK(t->hist[NB - 1] == 1 &&
        t->hist[0] == 2); /* -3 at the upper edge; the zeros */
  uint64_t sum = 0;
  for (int k = 0; k < NB; k++)
    sum += t->hist[k];
  CHECK(sum == 5);
  CHECK(amax_of(s, a, PR_CALIB_MINMAX, 0, 128) == 3.0);
  /* only zeros, then only non-finite: width 0, amax 0 for every method */
  float z[] = {0.0f, -0.0f, 0.0f}, nf[] = {NAN, NAN};
  CHECK(pr_calib_add(s, b, z, 3, &e) == PRECIS_OK &&
        pr_calib_add(s, b, nf, 2, &e) == 0);
  t = pr_calib_get(s, b);
  CHECK(t->count == 3 && t->nonfinite == 2 && t->width == 0 && t->hist[0] == 3);
  CHECK(t->min == 0 && !signbit(t->min) && t->max == 0);
  for (int m = 0; m < 4; m++)
    CHECK(amax_of(s, b, (pr_calibrator)m, 0, 128) == 0);
  /* then values: the zeros stay in bin 0 */
  float y[] = {0.5f, 1.0f};
  CHECK(pr_calib_add(s, b, y, 2, &e) == PRECIS_OK);
  t = pr_calib_get(s, b);
  CHECK(t->width == 1.0 / NB && t->hist[0] == 3 && t->hist[1023] == 1 &&
        t->hist[NB - 1] == 1);
  /* bad arguments */
  CHECK(pr_calib_add(s, 7, y, 2, &e) == PRECIS_ERR_INVALID_ARG);
  CHECK(pr_calib_add(s, a, NULL, 2, &e) == PRECIS_ERR_INVALID_ARG);
  CHECK(pr_calib_add(s, a, y, -1, &e) == PRECIS_ERR_INVALID_ARG);
  CHECK(pr_calib_add(s, a, y, 0, &e) == PRECIS_OK);
  double am;
  pr_calib_cfg cfg = {PR_CALIB_PERCENTILE, 101};
  CHECK(pr_calib_amax(s, a, &cfg, 128, &am, &e) == PRECIS_ERR_INVALID_ARG);
  cfg.percentile = 0;
  CHECK(pr_calib_amax(s, a, &cfg, 1, &am, &e) == PRECIS_ERR_INVALID_ARG);
  CHECK(pr_calib_amax(s, a, &cfg, NB + 1, &am, &e) == PRECIS_ERR_INVALID_ARG);
  CHECK(pr_calib_amax(s, 9, &cfg, 128, &am, &e) == PRECIS_ERR_INVALID_ARG);
  pr_calib_destroy(s);

  /* many tensors: the name index survives growth */
  s = pr_calib_create();
  char nm[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(nm, sizeof nm, "t%d", i);
    CHECK(pr_calib_tensor_index(s, nm, &e) == i);
  }
  bool ok = true;
  for (int i = 0; i < 1000; i++) {
    snprintf(nm, sizeof nm, "t%d", i);
    ok &= pr_calib_find(s, nm) == i && !strcmp(pr_calib_get(s, i)->name, nm);
  }
  CHECK(ok);
  pr_calib_destroy(s);

  pr_calibrator c;
  CHECK(pr_calibrator_parse("entropy", &c) && c == PR_CALIB_ENTROPY);
  CHECK(pr_calibrator_parse("mse", &c) && c == PR_CALIB_MSE &&
        !pr_calibrator_parse("kl", &c));
  CHECK(!strcmp(pr_calibrator_name(PR_CALIB_PERCENTILE), "percentile"));
  CHECK(pr_hash64(PR_HASH_INIT, "", 0) == 0xcbf29ce484222325ull);
  CHECK(pr_hash64(PR_HASH_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(pr_hash64(pr_hash64(PR_HASH_INIT, "foo", 3), "bar", 3) ==
        0x85944171f73967e8ull);
}

/* Batches whose max grows give the histogram of one pass at the final width
 * (bin pairs merge exactly, edge values included); so does any batch split
 * and any thread count. */
static void test_growth(void) {
  enum { N = 300000 };
  float *x = malloc(N * sizeof *x);
  rng r = {11};
  const float m = 0.7312f; /* max of the first batch: widths m / 2048 * 2^k */
  /* batch 1: |x| <= m, including the edge and exact multiples of the width */
  for (int i = 0; i < 100000; i++)
    x[i] = (float)((unif(&r) * 2 - 1) * m);
  for (int k = 0; k < 200; k++)
    x[k * 7] = (float)(k * 9 % NB) * (m / NB) * (k & 1 ? 1 : -1);
  x[3] = m;
  /* batch 2: up to 2 m, batch 3: up to 8 m (edges of the final width too) */
  for (int i = 100000; i < 200000; i++)
    x[i] = (float)(unif(&r) * 2 * m);
  x[100001] = 2 * m;
  for (int i = 200000; i < N; i++)
    x[i] = (float)(-unif(&r) * 8 * m);
  for (int k = 0; k < 300; k++)
    x[200000 + k * 3] = (float)(k * 5) * (8 * m / NB);
  x[N - 1] = -8 * m;
  x[N - 2] = NAN;
  pr_calib_stats *one = feed(x, N, N), *inc = pr_calib_create();
  pr_err e = {0};
  int i = pr_calib_tensor_index(inc, "t", &e);
  CHECK(pr_calib_add(inc, i, x, 100000, &e) == PRECIS_OK);
  CHECK(pr_calib_get(inc, i)->width == m / NB);
  CHECK(pr_calib_add(inc, i, x + 100000, 100000, &e) == PRECIS_OK);
  CHECK(pr_calib_get(inc, i)->width == 2.0 * m / NB);
  CHECK(pr_calib_add(inc, i, x + 200000, N - 200000, &e) == PRECIS_OK);
  const pr_calib_tensor *a = pr_calib_get(one, 0), *b = pr_calib_get(inc, i);
  CHECK(a->width == 8.0 * m / NB && a->count == N - 1 && a->nonfinite == 1);
  CHECK(same_stats(a, b));
  pr_calib_destroy(inc);
  /* the max first, then small batches (the small-tensor path) */
  float t = x[0];
  x[0] = x[N - 1];
  x[N - 1] = t;
  pr_calib_stats *small = feed(x, N, 777), *big = feed(x, N, N);
  CHECK(same_stats(pr_calib_get(small, 0), pr_calib_get(big, 0)));
  pr_calib_destroy(small);
  /* thread counts */
  int saved = omp_get_max_threads();
  for (int nt = 1; nt <= 3; nt++) {
    omp_set_num_threads(nt);
    pr_calib_stats *p = feed(x, N, N);
    CHECK(same_stats(pr_calib_get(p, 0), pr_calib_get(big, 0)));
    for (int mth = 1; mth < 4; mth++)
      CHECK(amax_of(p, 0, (pr_calibrator)mth, 0, 128) ==
            amax_of(big, 0, (pr_calibrator)mth, 0, 128));
    pr_calib_destroy(p);
  }
  omp_set_num_threads(saved);
  pr_calib_destroy(big);
  pr_calib_destroy(one);
  free(x);
}

/* ---------------------------------------------------------------- calibrators
 */

static void test_calibrators(void) {
  enum { N = 1000000 };
  float *x = malloc(N * sizeof *x);
  rng r = {5};
  pr_err e = {0};
  pr_calib_stats *s = pr_calib_create();
  int gi = pr_calib_tensor_index(s, "gauss", &e),
      ui = pr_calib_tensor_index(s, "uniform", &e);
  int li = pr_calib_tensor_index(s, "laplace", &e),
      ti = pr_calib_tensor_index(s, "t2", &e);
  for (int i = 0; i < N; i++)
    x[i] = (float)gauss(&r);
  CHECK(pr_calib_add(s, gi, x, N, &e) == PRECIS_OK);
  for (int i = 0; i < N; i++)
    x[i] = (float)(unif(&r) * 2 - 1);
  CHECK(pr_calib_add(s, ui, x, N, &e) == PRECIS_OK);
  for (int i = 0; i < N; i++)
    x[i] = (float)(log(unif(&r)) * (i & 1 ? 1 : -1)); /* b = 1 */
  CHECK(pr_calib_add(s, li, x, N, &e) == PRECIS_OK);
  for (int i = 0; i < N; i++)
    x[i] = (float)(gauss(&r) / sqrt(-log(unif(&r)))); /* Student 2 */
  CHECK(pr_calib_add(s, ti, x, N, &e) == PRECIS_OK);
  free(x);
  double gmax = amax_of(s, gi, PR_CALIB_MINMAX, 0, 128);
  double umax = amax_of(s, ui, PR_CALIB_MINMAX, 0, 128);
  double lmax = amax_of(s, li, PR_CALIB_MINMAX, 0, 128);
  double tmax = amax_of(s, ti, PR_CALIB_MINMAX, 0, 128);
  CHECK(gmax > 4.5 && gmax < 6 && umax > 0.9999 && umax <= 1 && lmax > 12 &&
        tmax > 100);

  /* percentile: |N(0,1)| 99.99% ~ 3.89, 99% ~ 2.576; uniform 99% ~ 0.99 */
  double g9999 = amax_of(s, gi, PR_CALIB_PERCENTILE, 0, 128);
  double g99 = amax_of(s, gi, PR_CALIB_PERCENTILE, 99, 128);
  double u99 = amax_of(s, ui, PR_CALIB_PERCENTILE, 99, 128);
  const pr_calib_tensor *gt = pr_calib_get(s, gi), *ut = pr_calib_get(s, ui);
  CHECK(fabs(g9999 - 3.8906) < 0.08 && fabs(g99 - 2.5758) < 0.02);
  CHECK(fabs(u99 - 0.99) < 2 * ut->width + 1e-3);
  CHECK(amax_of(s, gi, PR_CALIB_PERCENTILE, 100, 128) == gmax);
  CHECK(fabs(g99 / gt->width - nearbyint(g99 / gt->width)) <
        1e-9); /* a bin's upper edge */
  /* |t2| 99.9%: P(|T| > t) = 1 - t / sqrt(t^2 + 2) = 1e-3 at t = 31.6 */
  double t999 = amax_of(s, ti, PR_CALIB_PERCENTILE, 99.9, 128);
  CHECK(fabs(t999 - 31.6) < 3);
  if (fabs(t999 - 31.6) >= 3)
    fprintf(stderr, "  t2 99.9%%: %g\n", t999);

  /* entropy: clips tails, the more the longer they are; uniform data is kept */
  double ge = amax_of(s, gi, PR_CALIB_ENTROPY, 0, 128),
         ue = amax_of(s, ui, PR_CALIB_ENTROPY, 0, 128);
  double le = amax_of(s, li, PR_CALIB_ENTROPY, 0, 128),
         te = amax_of(s, ti, PR_CALIB_ENTROPY, 0, 128);
  double gm = amax_of(s, gi, PR_CALIB_MSE, 0, 128),
         um = amax_of(s, ui, PR_CALIB_MSE, 0, 128);
  double lm = amax_of(s, li, PR_CALIB_MSE, 0, 128),
         tm = amax_of(s, ti, PR_CALIB_MSE, 0, 128);
  printf("  amax, 128 levels: gauss max %.3f entropy %.3f mse %.3f; laplace "
         "max %.3f entropy "
         "%.3f mse %.3f; t2 max %.1f entropy %.2f mse %.2f\n",
         gmax, ge, gm, lmax, le, lm, tmax, te, tm);
  CHECK(ge > 3.5 && ge < 0.9 * gmax);
  CHECK(le > 5 && le < 0.8 * lmax);
  CHECK(te > 2 && te < 0.2 * tmax);
  CHECK(ue > 0.97 * umax && ue <= umax);

  /* mse: the known optimal clipping for 8 bits (Banner et al., ACIQ): about 3.9
   * sigma for a Gaussian, 9.89 b for a Laplace; about the whole range of
   * uniform data */
  CHECK(gm > 3.6 && gm < 4.3 && lm > 9.3 && lm < 10.5);
  CHECK(tm > 10 && tm < 0.5 * tmax);
  CHECK(um > 0.95 * umax && um <= umax);
  /* levels 256: a finer grid affords a wider range */
  CHECK(amax_of(s, li, PR_CALIB_MSE, 0, 256) > lm + 0.5);
  CHECK(amax_of(s, gi, PR_CALIB_MSE, 0, 256) > gm + 0.1);
  CHECK(amax_of(s, ti, PR_CALIB_ENTROPY, 0, 256) >= te);
  pr_calib_destroy(s);
}

/* |sum of 12 uniforms in [0, 2^20)| centred (Irwin-Hall: ~Gaussian, sigma
 * 2^20). */
static int64_t ih12(rng *r) {
  int64_t s = 0;
  for (int k = 0; k < 12; k++)
    s += (int64_t)(next64(r) >> 44);
  return llabs(s - 6 * (1 << 20));
}

/* The histogram generators of tests/quant/entropy_oracle.py, in C. */
static void make_hist(int kind, uint64_t seed, int n, uint64_t *h) {
  rng r = {seed};
  memset(h, 0, NB * sizeof *h);
  for (int i = 0; i < n || (kind == 4 && i < 40); i++) {
    int64_t b = 0;
    switch (kind) {
    case 0:
      b = ih12(&r) * 2047 / (6 << 20);
      break;
    case 1:
      b = (1 << 16) / (int64_t)((next64(&r) >> 48) + 1) - 1;
      break;
    case 2:
      b = next64(&r) % 100 == 0 ? (int64_t)(next64(&r) % NB)
                                : ih12(&r) * 100 / (1 << 20);
      break;
    case 3:
      b = (int64_t)(next64(&r) % NB);
      break;
    case 4:
      b = (int64_t)(next64(&r) % 300);
      h[b] += 1 + next64(&r) % 1000;
      continue;
    case 6:
      b = next64(&r) & 1 ? 0 : ih12(&r) * 2047 / (6 << 20);
      break;
    }
    h[b < NB ? b : NB - 1]++;
  }
  if (kind == 4)
    h[2000] += 3;
  if (kind == 5) {
    for (int b = 0; b < 100; b++)
      h[b] = next64(&r) % 50;
    for (int b = 1500; b < 1510; b++)
      h[b] = 100 + next64(&r) % 100;
  }
}

/* {kind, seed, samples, levels, threshold in bins}: the output of
 *   python3 tests/quant/entropy_oracle.py
 * (an independent NumPy implementation of the same search). */
static const struct {
  int kind, seed, n, levels;
  double thr;
} k_oracle[] = {
    {0, 1, 100000, 128, 1402.5}, /* KL 0.00524145 */
    {0, 1, 100000, 256, 1402.5}, /* KL 0.00463031 */
    {1, 2, 100000, 128, 255.5},  /* KL 0.0234839 */
    {1, 2, 100000, 256, 501.5},  /* KL 0.010828 */
    {2, 3, 100000, 128, 2044.5}, /* KL 0.00285966 */
    {3, 4, 100000, 128, 2048.5}, /* KL 0.00970191 */
    {4, 5, 0, 128, 384.5},       /* KL 0.0122776 */
    {5, 6, 0, 128, 1536.5},      /* KL 0.11622 */
    {6, 7, 100000, 256, 1277.5}, /* KL 0.00730619 */
    {6, 7, 100000, 128, 1277.5}, /* KL 0.00859752 */
};

static void test_entropy_oracle(void) {
  uint64_t *h = malloc(NB * sizeof *h);
  for (size_t c = 0; c < sizeof k_oracle / sizeof k_oracle[0]; c++) {
    make_hist(k_oracle[c].kind, (uint64_t)k_oracle[c].seed, k_oracle[c].n, h);
    pr_err e = {0};
    pr_calib_stats *s = pr_calib_create();
    int i = pr_calib_tensor_index(s, "h", &e);
    uint64_t sum = 0;
    for (int b = 0; b < NB; b++)
      sum += h[b];
    /* width 1, max past the last edge: (i + 0.5) is not clamped */
    pr_calib_tensor v = {.name = "h", .min = -1, .max = NB + 1, .count = sum, .width = 1.0, .hist = h};
    CHECK(pr_calib_set(s, i, &v, &e) == PRECIS_OK);
    double a = amax_of(s, i, PR_CALIB_ENTROPY, 0, k_oracle[c].levels);
    CHECK(a == k_oracle[c].thr);
    if (a != k_oracle[c].thr)
      fprintf(stderr, "  oracle case %zu: %.1f, expected %.1f\n", c, a,
              k_oracle[c].thr);
    pr_calib_destroy(s);
  }
  free(h);
}

/* ---------------------------------------------------------------- cache */

static const char *const k_names[] = {
    "conv1/out", "with space", "100%\"q\"\n\ttab", "", "\xc3\xa9t\xc3\xa9",
    "zeros",     "empty",      "nonfinite"};
enum { NT = sizeof k_names / sizeof k_names[0] };

static pr_calib_stats *sample_stats(void) {
  pr_err e = {0};
  pr_calib_stats *s = pr_calib_create();
  rng r = {99};
  float x[5000];
  for (int t = 0; t < NT; t++) {
    int i = pr_calib_tensor_index(s, k_names[t], &e);
    CHECK(i == t);
    if (t == 6)
      continue; /* "empty": no values */
    for (int j = 0; j < 5000; j++)
      x[j] =
          t == 5 ? 0.0f : (float)(gauss(&r) * (t + 1) * (t == 2 ? 1e-30 : 1));
    if (t == 7)
      x[10] = NAN, x[11] = -INFINITY;
    CHECK(pr_calib_add(s, i, x, 5000, &e) == PRECIS_OK);
    if (t < 4) { /* grow */
      for (int j = 0; j < 5000; j++)
        x[j] = (float)(gauss(&r) * 10 * (t + 1));
      CHECK(pr_calib_add(s, i, x, 2000 + t, &e) == PRECIS_OK);
    }
  }
  return s;
}

static bool write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return false;
  bool ok = fwrite(p, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

/* Load `text` (n bytes) from path: the status, the message in e. */
static precis_status load_text(const char *path, const char *text, size_t n,
                               pr_err *e) {
  pr_calib_stats *s = NULL;
  if (!write_file(path, text, n))
    return PRECIS_ERR_IO;
  precis_status st = pr_calib_cache_load(path, NULL, &s, NULL, e);
  pr_calib_destroy(s);
  return st;
}

/* text with the first `from` replaced by `to`, loaded: PRECIS_ERR_PARSE
 * whose message names line `line` (0: any). */
static bool bad_edit(const char *path, const char *text, const char *from,
                     const char *to, int line) {
  const char *p = strstr(text, from);
  if (!p) {
    fprintf(stderr, "  edit: '%s' not found\n", from);
    return false;
  }
  size_t n = strlen(text), a = (size_t)(p - text), fl = strlen(from),
         tl = strlen(to);
  char *t = malloc(n - fl + tl + 1);
  memcpy(t, text, a);
  memcpy(t + a, to, tl);
  memcpy(t + a + tl, p + fl, n - a - fl + 1);
  pr_err e = {0};
  precis_status st = load_text(path, t, strlen(t), &e);
  char want[32];
  snprintf(want, sizeof want, "line %d:", line);
  bool ok = st == PRECIS_ERR_PARSE && (!line || strstr(e.msg, want));
  if (!ok)
    fprintf(stderr, "  edit '%s' -> '%s': status %d, '%s'\n", from, to, st,
            e.msg);
  free(t);
  return ok;
}

static void test_cache(void) {
  char path[] = "/tmp/precis_calib_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0)
    return;
  close(fd);
  pr_err e = {0};
  pr_calib_stats *s = sample_stats(), *l = NULL;
  pr_calib_key key = {0x0123456789abcdefull, 42, 0xfedcba9876543210ull, 1000,
                      "resize=256, crop=224 100%"};
  CHECK(pr_calib_cache_save(s, &key, path, &e) == PRECIS_OK);
  pr_calib_key got;
  CHECK(pr_calib_cache_load(path, &key, &l, &got, &e) == PRECIS_OK);
  if (!l) {
    fprintf(stderr, "  load: %s\n", e.msg);
    pr_calib_destroy(s);
    return;
  }
  CHECK(got.model == key.model && got.graph == key.graph &&
        got.data == key.data);
  CHECK(got.samples == 1000 && !strcmp(got.preprocess, key.preprocess));
  CHECK(pr_calib_count(l) == NT);
  bool same = true, amax_same = true;
  for (int t = 0; t < NT; t++) {
    const pr_calib_tensor *a = pr_calib_get(s, t), *b = pr_calib_get(l, t);
    same &= !strcmp(a->name, b->name) && same_stats(a, b) &&
            pr_calib_find(l, k_names[t]) == t;
    for (int m = 0; m < 4; m++)
      for (int lv = 128; lv <= 256; lv += 128)
        amax_same &= amax_of(s, t, (pr_calibrator)m, 99.9, lv) ==
                     amax_of(l, t, (pr_calibrator)m, 99.9, lv);
  }
  CHECK(same && amax_same);
  CHECK(pr_calib_get(l, 7)->nonfinite == 2 && pr_calib_get(l, 6)->count == 0);
  pr_calib_destroy(l);
  l = NULL;

  /* key mismatches: INVALID_ARG, saying what differs in words */
  struct {
    pr_calib_key k;
    const char *say;
  } mis[] = {
      {{1, 42, key.data, 1000, key.preprocess},
       "another model (hash 0123456789abcdef, this "
       "one 0000000000000001)"},
      {{key.model, 43, key.data, 1000, key.preprocess},
       "another optimized graph"},
      {{key.model, 42, 7, 1000, key.preprocess},
       "another calibration data set (1000 samples"},
      {{key.model, 42, key.data, 999, key.preprocess}, "this one 999 samples"},
      {{key.model, 42, key.data, 1000, "crop=224"},
       "another preprocessing: 'resize=256, crop=224 100%' vs 'crop=224' now"},
      {{key.model, 42, key.data, 1000, NULL}, "vs '' now"},
  };
  for (size_t m = 0; m < sizeof mis / sizeof mis[0]; m++) {
    pr_err_clear(&e);
    CHECK(pr_calib_cache_load(path, &mis[m].k, &l, NULL, &e) ==
          PRECIS_ERR_INVALID_ARG);
    CHECK(!l && strstr(e.msg, mis[m].say));
    if (!strstr(e.msg, mis[m].say))
      fprintf(stderr, "  message: %s\n", e.msg);
  }
  pr_calib_key two = {2, 3, key.data, 1000, key.preprocess};
  CHECK(pr_calib_cache_load(path, &two, &l, NULL, &e) ==
        PRECIS_ERR_INVALID_ARG);
  CHECK(strstr(e.msg, "another model") &&
        strstr(e.msg, "; made for another optimized graph"));

  /* malformed: cut anywhere, edited fields */
  size_t len;
  char *text = (char *)read_all(path, &len);
  CHECK(text != NULL);
  if (!text)
    return;
  char *t = malloc(len + 1);
  memcpy(t, text, len);
  t[len] = '\0';
  free(text);
  text = t;
  char bpath[64];
  snprintf(bpath, sizeof bpath, "%s.bad", path);
  /* cut at every byte of the key, and in every line at its start, one byte
   * in, the middle, before and after its last character */
  int cuts = 0, cut_ok = 0;
  const char *first_tensor = strstr(text, "\ntensor ");
  for (size_t n = 0, ls = 0; n < len; n++) {
    if (text[n] == '\n')
      ls = n + 1;
    size_t le = (size_t)(strchr(text + ls, '\n') - text);
    if (text + n > first_tensor && n != ls && n != ls + 1 &&
        n != (ls + le) / 2 && n + 1 != le && n != le)
      continue;
    pr_err_clear(&e);
    cuts++;
    bool ok = load_text(bpath, text, n, &e) == PRECIS_ERR_PARSE &&
              strstr(e.msg, "line ");
    cut_ok += ok;
    if (!ok)
      fprintf(stderr, "  cut at %zu of %zu: '%s'\n", n, len, e.msg);
  }
  CHECK(cuts > 150 && cut_ok == cuts);
  printf("  %d truncated copies refused\n", cuts);
  CHECK(load_text(bpath, text, len, &e) == PRECIS_OK);
  CHECK(load_text(bpath, "", 0, &e) == PRECIS_ERR_PARSE &&
        strstr(e.msg, "line 1:"));
  CHECK(bad_edit(bpath, text, "precis-calib 1", "precis-calib 2", 1));
  CHECK(bad_edit(bpath, text, "model 0123456789abcdef",
                 "model 0123456789abcdeg", 2));
  CHECK(bad_edit(bpath, text, "graph 000000000000002a", "graph 2a", 3));
  CHECK(bad_edit(bpath, text, "samples 1000", "samples 1000x", 5));
  CHECK(bad_edit(bpath, text, "samples 1000", "samples 99999999999999999999999",
                 5));
  CHECK(bad_edit(bpath, text, "preprocess \"resize", "preprocess resize", 6));
  CHECK(bad_edit(bpath, text, "%20crop", "%2", 6));
  CHECK(bad_edit(bpath, text, "%20crop", "%00crop", 6));
  CHECK(bad_edit(bpath, text, "tensors 8", "tensors 9", 0));
  CHECK(bad_edit(bpath, text, "tensors 8", "tensors 7", 0));
  CHECK(bad_edit(bpath, text, "tensors 8", "tensors -1", 7));
  CHECK(bad_edit(bpath, text, "tensor \"conv1/out\" -",
                 "tensor \"conv1/out\" x", 8));
  CHECK(bad_edit(bpath, text, "tensor \"conv1/out\" -",
                 "tensor \"conv1/out\" nan -", 8));
  CHECK(bad_edit(bpath, text, "tensor \"conv1/out\" -",
                 "tensor \"conv1/out\"  -", 8));
  CHECK(bad_edit(bpath, text, "tensor \"conv1/out\"", "tensor \"with%20space\"",
                 9)); /* dup */
  CHECK(bad_edit(bpath, text, "tensor \"conv1/out\"", "tensor conv1/out", 8));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 5000 0 0 1 0:5001", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 5000 0 0 1 2048:5000", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 5000 0 0 2 0:5000", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 5000 0 0 1 0:5000 ", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 5000 0 0 2 0:4000 0:1000", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 5000 0 0 1 0:99999999999999999999", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 1 5000 0 0 1 0:5000", 13));
  CHECK(bad_edit(bpath, text, "tensor \"zeros\" 0 0 5000 0 0 1 0:5000",
                 "tensor \"zeros\" 0 0 18446744073709551615 0 1 2 "
                 "0:18446744073709551615 1:1",
                 13));
  CHECK(bad_edit(bpath, text, "tensor \"empty\" 0 0 0 0 0 0",
                 "tensor \"empty\" 0 0 0 0 -1 0", 14));
  CHECK(bad_edit(bpath, text, "\nend\n", "\nend\nend\n", 17));
  CHECK(bad_edit(bpath, text, "\nend\n", "\nEND\n", 16));
  CHECK(bad_edit(bpath, text, "\nend\n", "\nend\r\n", 16));
  char nul[] = "precis-calib 1\nmodel 0\0";
  CHECK(load_text(bpath, nul, sizeof nul, &e) == PRECIS_ERR_PARSE);
  free(text);
  CHECK(pr_calib_cache_load("/nonexistent/x", NULL, &l, NULL, &e) ==
            PRECIS_ERR_IO &&
        !l);
  CHECK(pr_calib_cache_save(s, &key, "/nonexistent/x", &e) == PRECIS_ERR_IO);
  pr_calib_destroy(s);
  unlink(bpath);
  unlink(path);
}

/* Per-channel max |x| (smoothing statistics): accumulation, NaN skipped, a
 * channel count change refused, copied by pr_calib_set, cache round trip,
 * a malformed channels line named. */
static void test_channels(void) {
  pr_err e = {0};
  pr_calib_stats *s = pr_calib_create(), *l = NULL;
  int i = pr_calib_tensor_index(s, "x", &e), j = pr_calib_tensor_index(s, "y", &e);
  float a[6] = {1, -5, 0.5f, -2, 3, NAN}, b[3] = {0.25f, 4, -7};
  CHECK(pr_calib_add(s, i, a, 6, &e) == PRECIS_OK);
  CHECK(pr_calib_add_channels(s, i, a, 6, 3, &e) == PRECIS_OK);
  CHECK(pr_calib_add_channels(s, i, b, 3, 3, &e) == PRECIS_OK);
  const pr_calib_tensor *v = pr_calib_get(s, i);
  CHECK(v->n_chan == 3 && v->chan_amax[0] == 2 && v->chan_amax[1] == 5 &&
        v->chan_amax[2] == 7);
  CHECK(pr_calib_add_channels(s, i, b, 3, 1, &e) == PRECIS_ERR_SHAPE &&
        strstr(e.msg, "'x' had 3 channels"));
  CHECK(pr_calib_add_channels(s, i, b, 3, 2, &e) == PRECIS_ERR_INVALID_ARG);
  CHECK(pr_calib_get(s, j)->n_chan == 0 && !pr_calib_get(s, j)->chan_amax);
  char path[] = "/tmp/precis_calib_ch_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0)
    close(fd);
  pr_calib_key key = {1, 2, 3, 4, ""};
  CHECK(pr_calib_cache_save(s, &key, path, &e) == PRECIS_OK);
  CHECK(pr_calib_cache_load(path, &key, &l, NULL, &e) == PRECIS_OK);
  if (l) {
    const pr_calib_tensor *w = pr_calib_get(l, pr_calib_find(l, "x"));
    CHECK(w->n_chan == 3 && w->chan_amax[0] == 2 && w->chan_amax[1] == 5 &&
          w->chan_amax[2] == 7);
    CHECK(pr_calib_get(l, pr_calib_find(l, "y"))->n_chan == 0);
    pr_calib_destroy(l);
  }
  FILE *f = fopen(path, "r");
  char text[8192] = {0};
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f)
    fclose(f);
  CHECK(n > 0 && strstr(text, "\nchannels 3 2 5 7\n"));
  CHECK(bad_edit(path, text, "channels 3 2 5 7", "channels 3 2 5", 9));
  CHECK(bad_edit(path, text, "channels 3 2 5 7", "channels 3 2 5 -7", 9));
  CHECK(bad_edit(path, text, "channels 3 2 5 7", "channels 3 2 5 7 1", 9));
  CHECK(bad_edit(path, text, "channels 3 2 5 7", "channels 0", 9));
  unlink(path);
  pr_calib_destroy(s);
}

/* ---------------------------------------------------------------- speed */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Informational: pr_calib_add on a 10M-float tensor, 1 and 2 threads. */
static void bench_add(void) {
  enum { N = 10000000 };
  float *x = malloc(N * sizeof *x);
  rng r = {3};
  for (int i = 0; i < N; i++)
    x[i] = (float)gauss(&r);
  int saved = omp_get_max_threads();
  for (int nt = 1; nt <= 2; nt++) {
    omp_set_num_threads(nt);
    pr_err e = {0};
    pr_calib_stats *s = pr_calib_create();
    int i = pr_calib_tensor_index(s, "t", &e);
    double best = 1e9;
    for (int rep = 0; rep < 5; rep++) {
      double t0 = now();
      CHECK(pr_calib_add(s, i, x, N, &e) == PRECIS_OK);
      double t1 = now() - t0;
      best = t1 < best ? t1 : best;
    }
    double t0 = now();
    double a = amax_of(s, i, PR_CALIB_ENTROPY, 0, 128);
    double t1 = now();
    double m = amax_of(s, i, PR_CALIB_MSE, 0, 128);
    double t2 = now();
    printf("  pr_calib_add 10M floats, %d thread%s: %.1f ms (%.2f ns/value); "
           "entropy %.1f ms, mse %.1f ms (amax %.3f, %.3f)\n",
           nt, nt > 1 ? "s" : "", best * 1e3, best * 1e9 / N, (t1 - t0) * 1e3,
           (t2 - t1) * 1e3, a, m);
    pr_calib_destroy(s);
  }
  omp_set_num_threads(saved);
  free(x);
}

int main(int argc, char **argv) {
  test_basic();
  test_growth();
  test_calibrators();
  test_entropy_oracle();
  test_cache();
  test_channels();
  if (argc > 1 && !strcmp(argv[1], "--bench"))
    bench_add();
  return check_report("test_calib");
}
