/* Calibration statistics (running min/max, |x| histograms that grow by
 * doubling) and the calibrators that turn them into INT8 thresholds. */
#include "quant/calib.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define NB PR_CALIB_BINS

/* Below this many values pr_calib_add stays on the calling thread. */
#define PAR_MIN (1 << 16)
/* Values binned per block (indices computed vectorized, then counted). */
#define BLOCK 1024
/* A thread flushes its 32-bit sub-histograms at least this often. */
#define FLUSH_EVERY ((int64_t)1 << 30)
#define MAX_THREADS 256

typedef struct entry {
    pr_calib_tensor v; /* the view handed out; v.name / v.hist / v.chan_amax point at ours */
    char *name;
    uint64_t *hist;
    float *chan; /* v.n_chan values, or NULL */
} entry;

struct pr_calib_stats {
    entry *t;
    int n, cap;
    int *slot; /* open addressing by name hash: index + 1, 0 = empty */
    int nslot; /* a power of two >= 2 * cap, or 0 */
    char *preprocess;
};

uint64_t pr_hash64(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* ---------------------------------------------------------------- the set */

pr_calib_stats *pr_calib_create(void) { return calloc(1, sizeof(pr_calib_stats)); }

void pr_calib_destroy(pr_calib_stats *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        free(s->t[i].name);
        free(s->t[i].hist);
        free(s->t[i].chan);
    }
    free(s->t);
    free(s->slot);
    free(s->preprocess);
    free(s);
}

static int *find_slot(const pr_calib_stats *s, const char *name) {
    if (!s->nslot) return NULL;
    size_t mask = (size_t)s->nslot - 1;
    size_t h = (size_t)pr_hash64(PR_HASH_INIT, name, strlen(name)) & mask;
    for (;; h = (h + 1) & mask) {
        int v = s->slot[h];
        if (!v || !strcmp(s->t[v - 1].name, name)) return &s->slot[h];
    }
}

int pr_calib_find(const pr_calib_stats *s, const char *name) {
    if (!s || !name) return -1;
    int *sl = find_slot(s, name);
    return sl && *sl ? *sl - 1 : -1;
}

int pr_calib_count(const pr_calib_stats *s) { return s ? s->n : 0; }

const pr_calib_tensor *pr_calib_get(const pr_calib_stats *s, int i) {
    if (!s || i < 0 || i >= s->n) return NULL;
    return &s->t[i].v;
}

static bool grow_table(pr_calib_stats *s) {
    int cap = s->cap ? 2 * s->cap : 16;
    if (cap > (1 << 28)) return false;
    entry *t = realloc(s->t, (size_t)cap * sizeof *t);
    if (!t) return false;
    s->t = t;
    int ns = 2 * cap;
    int *sl = calloc((size_t)ns, sizeof *sl);
    if (!sl) return false;
    free(s->slot);
    s->slot = sl;
    s->nslot = ns;
    s->cap = cap;
    for (int i = 0; i < s->n; i++) *find_slot(s, s->t[i].name) = i + 1;
    return true;
}

int pr_calib_tensor_index(pr_calib_stats *s, const char *name, pr_err *e) {
    if (!s || !name) {
        pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_tensor_index: NULL argument");
        return -1;
    }
    int i = pr_calib_find(s, name);
    if (i >= 0) return i;
    if (s->n == s->cap && !grow_table(s)) goto oom;
    entry *t = &s->t[s->n];
    memset(t, 0, sizeof *t);
    size_t len = strlen(name);
    t->name = malloc(len + 1);
    t->hist = calloc(NB, sizeof *t->hist);
    if (!t->name || !t->hist) {
        free(t->name);
        free(t->hist);
        goto oom;
    }
    memcpy(t->name, name, len + 1);
    t->v.name = t->name;
    t->v.hist = t->hist;
    *find_slot(s, name) = s->n + 1;
    return s->n++;
oom:
    pr_errf(e, PRECIS_ERR_OOM, "calibration statistics: out of memory adding tensor '%s'", name);
    return -1;
}

precis_status pr_calib_set(pr_calib_stats *s, int i, const pr_calib_tensor *v, pr_err *e) {
    if (!s || !v || !v->hist || i < 0 || i >= s->n)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_set: bad argument");
    entry *t = &s->t[i];
    t->v.min = v->min;
    t->v.max = v->max;
    t->v.count = v->count;
    t->v.nonfinite = v->nonfinite;
    t->v.width = v->width;
    memcpy(t->hist, v->hist, NB * sizeof *t->hist);
    free(t->chan);
    t->chan = NULL;
    t->v.n_chan = 0;
    t->v.chan_amax = NULL;
    if (v->n_chan > 0 && v->chan_amax) {
        if (!(t->chan = malloc((size_t)v->n_chan * sizeof *t->chan)))
            return pr_errf(e, PRECIS_ERR_OOM, "calibration statistics: out of memory");
        memcpy(t->chan, v->chan_amax, (size_t)v->n_chan * sizeof *t->chan);
        t->v.n_chan = v->n_chan;
        t->v.chan_amax = t->chan;
    }
    return PRECIS_OK;
}

precis_status pr_calib_add_channels(pr_calib_stats *s, int i, const float *x, int64_t n, int64_t c,
                                    pr_err *e) {
    if (!s || i < 0 || i >= s->n || (n && !x) || c <= 0 || n % c)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_add_channels: bad argument");
    entry *t = &s->t[i];
    if (t->chan && t->v.n_chan != c)
        return pr_errf(e, PRECIS_ERR_SHAPE,
                       "calibration: tensor '%s' had %lld channels (last axis), now %lld",
                       t->name, (long long)t->v.n_chan, (long long)c);
    if (!t->chan) {
        if (!(t->chan = calloc((size_t)c, sizeof *t->chan)))
            return pr_errf(e, PRECIS_ERR_OOM, "calibration statistics: out of memory");
        t->v.n_chan = c;
        t->v.chan_amax = t->chan;
    }
    float *m = t->chan;
    for (int64_t r = 0; r < n / c; r++) {
        const float *row = x + r * c;
        for (int64_t k = 0; k < c; k++) {
            float a = fabsf(row[k]);
            if (a > m[k] && isfinite(a)) m[k] = a;
        }
    }
    return PRECIS_OK;
}

const char *pr_calib_set_preprocess(pr_calib_stats *s, const char *str, pr_err *e) {
    if (!s) return NULL;
    if (!str) str = "";
    size_t n = strlen(str);
    char *c = malloc(n + 1);
    if (!c) {
        pr_errf(e, PRECIS_ERR_OOM, "calibration statistics: out of memory");
        return NULL;
    }
    memcpy(c, str, n + 1);
    free(s->preprocess);
    s->preprocess = c;
    return c;
}

const char *pr_calib_preprocess(const pr_calib_stats *s) {
    return s && s->preprocess ? s->preprocess : "";
}

/* ---------------------------------------------------------------- accumulate */

typedef struct scan_res {
    float mn, mx, amax;
    int64_t nonfinite;
} scan_res;

/* Pass 1 over x[0..n): min, max and max |x| of the finite values, count of
 * the others. */
static scan_res scan(const float *x, int64_t n) {
    float mn = INFINITY, mx = -INFINITY, am = 0.0f;
    int64_t nf = 0;
    for (int64_t j = 0; j < n; j++) {
        float v = x[j], a = fabsf(v);
        int fin = a <= FLT_MAX; /* false for inf and NaN */
        nf += !fin;
        float lo = fin ? v : INFINITY, hi = fin ? v : -INFINITY, ab = fin ? a : 0.0f;
        mn = lo < mn ? lo : mn;
        mx = hi > mx ? hi : mx;
        am = ab > am ? ab : am;
    }
    scan_res r = {mn, mx, am, nf};
    return r;
}

/* Bin of each x[j] at width w into idx[j]: ceil(|x| / w) - 1 clamped to 0;
 * NB (a discarded slot) for NaN / inf. |x| <= NB * w for the finite ones.
 * The quotient is a correctly rounded float division when w is a normal
 * float (always, unless the first max |x| was below 2^-115), double
 * otherwise; either way the halving of w halves it exactly. */
static void bin_block(const float *x, int n, double w, int32_t *idx) {
    if (w >= FLT_MIN) {
        float wf = (float)w; /* exact: max |x| / 2048 * 2^k */
        /* bit masks, not selects: -ftrapping-math keeps GCC from if-converting those */
        for (int j = 0; j < n; j++) {
            union {
                float f;
                uint32_t u;
            } a = {x[j]};
            uint32_t ua = a.u & 0x7fffffffu;                       /* |x| */
            uint32_t m = (uint32_t) - (int32_t)(ua < 0x7f800000u); /* finite */
            a.u = ua & m;
            float q = a.f / wf;
            int b = (int)q;     /* q in [0, NB] */
            b -= (float)b == q; /* ceil(q) - 1 */
            b = b < 0 ? 0 : b;
            idx[j] = (int32_t)(((uint32_t)b & m) | ((uint32_t)NB & ~m));
        }
        return;
    }
    for (int j = 0; j < n; j++) {
        float a = fabsf(x[j]);
        int fin = a <= FLT_MAX;
        double q = fin ? (double)a / w : 0.0;
        int b = (int)q;
        b -= (double)b == q;
        b = b < 0 ? 0 : b;
        idx[j] = fin ? b : NB;
    }
}

/* Histogram of x[0..n) at width w added to out[0..NB] (out[NB]: NaN/inf).
 * sub: 4 * (NB + 1) scratch counters (4 interleaved copies so that runs of
 * one bin do not serialize on one counter). */
static void hist_range(const float *x, int64_t n, double w, uint64_t *out, uint32_t *sub) {
    int32_t idx[BLOCK];
    int64_t done = 0;
    while (done < n) {
        int64_t seg = n - done < FLUSH_EVERY ? n - done : FLUSH_EVERY;
        memset(sub, 0, 4 * (NB + 1) * sizeof *sub);
        for (int64_t j0 = 0; j0 < seg; j0 += BLOCK) {
            int m = (int)(seg - j0 < BLOCK ? seg - j0 : BLOCK);
            bin_block(x + done + j0, m, w, idx);
            int j = 0;
            for (; j + 4 <= m; j += 4) {
                sub[idx[j]]++;
                sub[(NB + 1) + idx[j + 1]]++;
                sub[2 * (NB + 1) + idx[j + 2]]++;
                sub[3 * (NB + 1) + idx[j + 3]]++;
            }
            for (; j < m; j++) sub[idx[j]]++;
        }
        for (int b = 0; b <= NB; b++)
            out[b] += (uint64_t)sub[b] + sub[(NB + 1) + b] + sub[2 * (NB + 1) + b] +
                      sub[3 * (NB + 1) + b];
        done += seg;
    }
}

/* Double the width until max |x| = amax fits, merging pairs of bins. */
static void fit_range(entry *t, double amax) {
    if (amax <= 0) return;
    if (t->v.width == 0) t->v.width = amax / NB; /* exact: a power-of-two scale */
    while (amax > t->v.width * NB) {
        for (int b = 0; b < NB / 2; b++) t->hist[b] = t->hist[2 * b] + t->hist[2 * b + 1];
        memset(t->hist + NB / 2, 0, NB / 2 * sizeof *t->hist);
        t->v.width *= 2;
    }
}

static void split(int64_t n, int nt, int t, int64_t *lo, int64_t *hi) {
    *lo = n / nt * t + (t < n % nt ? t : n % nt);
    *hi = *lo + n / nt + (t < n % nt);
}

precis_status pr_calib_add(pr_calib_stats *s, int i, const float *x, int64_t n, pr_err *e) {
    if (!s || i < 0 || i >= s->n || n < 0 || (n > 0 && !x))
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_add: bad argument (tensor %d, n %lld)",
                       i, (long long)n);
    if (n == 0) return PRECIS_OK;
    entry *t = &s->t[i];
    int nt = n >= PAR_MIN ? omp_get_max_threads() : 1;
    if (nt < 1) nt = 1;
    if (nt > MAX_THREADS) nt = MAX_THREADS;
    /* per thread: a 64-bit histogram and 4 interleaved 32-bit ones */
    size_t per = (size_t)(NB + 1) * sizeof(uint64_t) + 4 * (size_t)(NB + 1) * sizeof(uint32_t);
    unsigned char *buf = NULL;
    if (n > BLOCK && !(buf = calloc((size_t)nt, per)))
        return pr_errf(e, PRECIS_ERR_OOM, "pr_calib_add: out of memory");

    /* pass 1: range */
    scan_res part[MAX_THREADS];
    for (int k = 0; k < nt; k++) part[k] = (scan_res){INFINITY, -INFINITY, 0.0f, 0};
    if (nt == 1) {
        part[0] = scan(x, n);
    } else {
#pragma omp parallel num_threads(nt)
        {
            int k = omp_get_thread_num(), kn = omp_get_num_threads();
            int64_t lo, hi;
            split(n, kn, k, &lo, &hi);
            part[k] = scan(x + lo, hi - lo);
        }
    }
    scan_res r = part[0];
    for (int k = 1; k < nt; k++) {
        r.mn = part[k].mn < r.mn ? part[k].mn : r.mn;
        r.mx = part[k].mx > r.mx ? part[k].mx : r.mx;
        r.amax = part[k].amax > r.amax ? part[k].amax : r.amax;
        r.nonfinite += part[k].nonfinite;
    }
    uint64_t finite = (uint64_t)(n - r.nonfinite);
    t->v.nonfinite += (uint64_t)r.nonfinite;
    if (!finite) goto done;
    double mn = r.mn == 0 ? 0.0 : r.mn, mx = r.mx == 0 ? 0.0 : r.mx; /* no -0: order-free */
    if (!t->v.count) {
        t->v.min = mn;
        t->v.max = mx;
    } else {
        if (mn < t->v.min) t->v.min = mn;
        if (mx > t->v.max) t->v.max = mx;
    }
    t->v.count += finite;
    if (r.amax == 0) { /* only zeros: bin 0 whatever the width */
        t->hist[0] += finite;
        goto done;
    }
    fit_range(t, r.amax);

    /* pass 2: histogram */
    double w = t->v.width;
    if (!buf) { /* small: straight into the tensor's histogram */
        int32_t idx[BLOCK];
        bin_block(x, (int)n, w, idx);
        for (int j = 0; j < (int)n; j++)
            if (idx[j] < NB) t->hist[idx[j]]++;
        goto done;
    }
    if (nt == 1) {
        hist_range(x, n, w, (uint64_t *)buf, (uint32_t *)(buf + (NB + 1) * sizeof(uint64_t)));
    } else {
#pragma omp parallel num_threads(nt)
        {
            int k = omp_get_thread_num(), kn = omp_get_num_threads();
            int64_t lo, hi;
            split(n, kn, k, &lo, &hi);
            unsigned char *mine = buf + (size_t)k * per;
            hist_range(x + lo, hi - lo, w, (uint64_t *)mine,
                       (uint32_t *)(mine + (NB + 1) * sizeof(uint64_t)));
        }
    }
    for (int k = 0; k < nt; k++) { /* integer sums: the order does not matter */
        const uint64_t *h = (const uint64_t *)(buf + (size_t)k * per);
        for (int b = 0; b < NB; b++) t->hist[b] += h[b];
    }
done:
    free(buf);
    return PRECIS_OK;
}

/* ---------------------------------------------------------------- calibrators */

static const char *const k_names[] = {"minmax", "entropy", "percentile", "mse"};

bool pr_calibrator_parse(const char *name, pr_calibrator *out) {
    for (int c = 0; name && c < 4; c++)
        if (!strcmp(name, k_names[c])) {
            if (out) *out = (pr_calibrator)c;
            return true;
        }
    return false;
}

const char *pr_calibrator_name(pr_calibrator c) { return (unsigned)c < 4 ? k_names[c] : "unknown"; }

/* Entropy calibration, TensorRT's entropy calibrator 2 as described in
 * "8-bit Inference with TensorRT" (Migacz, GTC 2017), on the |x| histogram h:
 *   for i in [levels, NB] (the slides stop at NB - 1; we also try the whole
 *   histogram, which lets data without outliers keep its full range):
 *     P = h[0..i), P[i-1] += sum h[i..)             (outliers clipped in)
 *     Q: h[0..i) split in `levels` chunks of m = i / levels bins (the last
 *        chunk also takes the i % levels remaining ones), each chunk's sum
 *        spread evenly over the chunk's bins where P != 0 (0 elsewhere)
 *     KL(P / sum P || Q / sum Q)
 *   threshold = (i + 0.5) * width for the first i of least divergence,
 * with h[0] replaced by h[1] first (see amax_entropy).
 * This is also what MXNet's and ONNX Runtime's entropy calibrators do on a
 * symmetric histogram; they differ in details (ORT: a signed histogram and
 * its own bin count; PyTorch's pytorch-quantization: linspace chunks, the
 * last argmin, the bin edge as threshold), TensorRT's are the ones here.
 * Smoothing: where Q = 0 but P > 0 (only possible in P's last bin, when the
 * last chunk of h is empty but outliers exist) Q is taken as 1e-4 counts,
 * i.e. 1e-4 / sum Q normalized, as MXNet's / ORT's _smooth_distribution
 * (eps = 0.0001 on counts) does, less its negligible shift of the other bins.
 * An i with sum Q = 0 (all mass beyond it) is not a candidate.
 * Per chunk the KL terms are summed as
 *   (sum p log p - (sum p) log(total * q / sum Q)) / total
 * with p the counts, q the chunk's count per non-zero bin. */
#define ENTROPY_EPS 1e-4

static double kl_at(const uint64_t *h, const double *plogp, const double *suffix, double total,
                    int i, int levels) {
    double outl = suffix[i], sq = total - outl;
    if (sq <= 0) return INFINITY;
    int m = i / levels;
    double kl = 0;
    for (int j = 0; j < levels; j++) {
        int a = j * m, b = j == levels - 1 ? i : a + m;
        bool last = j == levels - 1;
        int stop = last ? b - 1 : b; /* the last bin of P is handled apart */
        double qs = 0, pl = 0, nz = 0;
        for (int k = a; k < stop; k++) {
            qs += (double)h[k];
            pl += plogp[k];
            nz += h[k] != 0;
        }
        double ps = qs;
        if (last) {
            double hl = (double)h[b - 1], p = hl + outl;
            qs += hl;
            ps += p;
            if (p > 0) {
                nz += 1;
                pl += p * log(p);
            }
            if (qs == 0 && p > 0) { /* smoothed: Q = ENTROPY_EPS counts */
                double pn = p / total;
                kl += pn * log(pn / (ENTROPY_EPS / sq));
                continue;
            }
        }
        if (nz == 0 || qs == 0) continue;
        kl += (pl - ps * log(total * qs / (nz * sq))) / total;
    }
    return kl;
}

static double amax_entropy(const pr_calib_tensor *v, int levels) {
    double *plogp = malloc(2 * (NB + 1) * sizeof *plogp), *kl = malloc((NB + 1) * sizeof *kl);
    uint64_t *h = malloc(NB * sizeof *h);
    if (!plogp || !kl || !h) {
        free(plogp);
        free(kl);
        free(h);
        return -1;
    }
    /* The zero bin takes its neighbour's count (as NVIDIA's pytorch-quantization
     * entropy calibrator does): the exact zeros of ReLU-like outputs would
     * otherwise dominate both distributions, and smearing that spike over the
     * first chunk makes every wide range look worse than the shortest one
     * (EfficientNet-Lite's ReLU6 outputs were clipped at 1/8 of their range). */
    memcpy(h, v->hist, NB * sizeof *h);
    h[0] = h[1];
    double *suffix = plogp + NB + 1;
    suffix[NB] = 0;
    for (int k = NB - 1; k >= 0; k--) {
        double c = (double)h[k];
        plogp[k] = c > 0 ? c * log(c) : 0;
        suffix[k] = suffix[k + 1] + c;
    }
    double total = suffix[0];
#pragma omp parallel for schedule(dynamic, 16)
    for (int i = levels; i <= NB; i++) kl[i] = kl_at(h, plogp, suffix, total, i, levels);
    int best = -1;
    for (int i = levels; i <= NB; i++)
        if (kl[i] < INFINITY && (best < 0 || kl[i] < kl[best])) best = i;
    free(plogp);
    free(kl);
    free(h);
    return best < 0 ? NB * v->width : (best + 0.5) * v->width;
}

/* MSE: for each bin edge t = e * width (e in 1..NB), the squared error of
 * the histogram (bin centres (k + 0.5) * width as the values) quantized with
 * step t / (levels - 1): values past t clip to t, the others round to the
 * nearest step. Computed in units of width; the first e of least error. */
static double amax_mse(const pr_calib_tensor *v, int levels) {
    int *nzb = malloc(NB * sizeof *nzb);
    double *err = malloc((NB + 1) * sizeof *err);
    if (!nzb || !err) {
        free(nzb);
        free(err);
        return -1;
    }
    int nnz = 0;
    for (int k = 0; k < NB; k++)
        if (v->hist[k]) nzb[nnz++] = k;
    const uint64_t *h = v->hist;
#pragma omp parallel for schedule(dynamic, 32) if (nnz > 64)
    for (int e = 1; e <= NB; e++) {
        double t = e, step = t / (levels - 1), sum = 0;
        for (int j = 0; j < nnz; j++) {
            double c = nzb[j] + 0.5, d;
            if (c >= t) {
                d = c - t;
            } else {
                d = c - nearbyint(c / step) * step;
            }
            sum += (double)h[nzb[j]] * d * d;
        }
        err[e] = sum;
    }
    int best = 1;
    for (int e = 2; e <= NB; e++)
        if (err[e] < err[best]) best = e;
    free(nzb);
    free(err);
    return best * v->width;
}

static double amax_percentile(const pr_calib_tensor *v, double pct) {
    uint64_t total = 0;
    for (int k = 0; k < NB; k++) total += v->hist[k];
    double target = pct / 100.0 * (double)total;
    uint64_t cum = 0;
    int k = 0;
    for (; k < NB - 1; k++) {
        cum += v->hist[k];
        if ((double)cum >= target) break;
    }
    return (k + 1) * v->width;
}

precis_status pr_calib_amax(const pr_calib_stats *s, int i, const pr_calib_cfg *cfg, int levels,
                            double *amax, pr_err *e) {
    if (!s || !cfg || !amax || i < 0 || i >= s->n)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_amax: bad argument");
    if (levels < 2 || levels > NB)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "pr_calib_amax: levels %d not in [2, %d]", levels,
                       NB);
    double pct = cfg->percentile == 0 ? 99.99 : cfg->percentile;
    if (cfg->method == PR_CALIB_PERCENTILE && !(pct > 0 && pct <= 100))
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "percentile %g not in (0, 100]", cfg->percentile);
    if ((unsigned)cfg->method > PR_CALIB_MSE)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "unknown calibrator %d", (int)cfg->method);
    const pr_calib_tensor *v = &s->t[i].v;
    *amax = 0;
    double mx = v->count ? fmax(fabs(v->min), fabs(v->max)) : 0;
    if (mx == 0 || v->width <= 0) return PRECIS_OK;
    double a = mx;
    switch (cfg->method) {
    case PR_CALIB_MINMAX:
        break;
    case PR_CALIB_ENTROPY:
        a = amax_entropy(v, levels);
        break;
    case PR_CALIB_PERCENTILE:
        a = amax_percentile(v, pct);
        break;
    case PR_CALIB_MSE:
        a = amax_mse(v, levels);
        break;
    }
    if (a < 0) return pr_errf(e, PRECIS_ERR_OOM, "pr_calib_amax: out of memory");
    *amax = a < mx ? a : mx;
    return PRECIS_OK;
}
