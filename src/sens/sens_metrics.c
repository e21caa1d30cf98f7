/* Error metrics against a reference, as running sums (sens_metrics.h). */
#include "sens/sens_metrics.h"

#include <math.h>

void pr_sens_acc_init(pr_sens_acc *a) {
    *a = (pr_sens_acc){0};
    a->cos_min = INFINITY;
}

double pr_sens_sqnr_db(double sig, double noise) {
    if (noise == 0) return sig > 0 ? INFINITY : NAN;
    return 10.0 * log10(sig / noise);
}

void pr_sens_energy(const float *ref, const float *x, int64_t n, double *sig, double *noise) {
    double s = 0, d = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i], e = (double)x[i] - r;
        s += r * r;
        d += e * e;
    }
    *sig += s;
    *noise += d;
}

bool pr_sens_is_prob(const float *ref, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols < 2) return false;
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        for (int64_t c = 0; c < cols; c++) {
            float v = ref[r * cols + c];
            if (!(v >= 0)) return false; /* also NaN */
            sum += v;
        }
        if (fabs(sum - 1.0) > 1e-3) return false;
    }
    return true;
}

static int64_t argmax(const float *v, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[k]) k = i;
    return k;
}

static void add_sample(pr_sens_acc *a, const float *ref, const float *x, int64_t n) {
    double rr = 0, xx = 0, rx = 0, dd = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i], v = x[i], d = v - r;
        rr += r * r;
        xx += v * v;
        rx += r * v;
        dd += d * d;
    }
    double cos = dd == 0 ? 1.0 : rr == 0 || xx == 0 ? 0.0 : rx / (sqrt(rr) * sqrt(xx));
    if (cos < a->cos_min) a->cos_min = cos;
    if (dd == 0) a->sqnr_inf++; /* identical: infinite SQNR, left out of the mean */
    else a->sqnr_sum += pr_sens_sqnr_db(rr, dd);
    a->rel_sum += rr > 0 ? sqrt(dd / rr) : dd > 0 ? INFINITY : 0;
    a->samples++;
}

void pr_sens_acc_add(pr_sens_acc *a, const float *ref, const float *x, int rank,
                     const int64_t *dims, bool kl, bool top1) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    int64_t ns = rank >= 2 ? dims[0] : 1, per = ns > 0 ? n / ns : 0;
    for (int64_t s = 0; s < ns && per > 0; s++) add_sample(a, ref + s * per, x + s * per, per);
    int64_t cols = rank >= 1 ? dims[rank - 1] : 1, rows = cols > 0 ? n / cols : 0;
    for (int64_t r = 0; (kl || top1) && r < rows; r++) {
        const float *p = ref + r * cols, *q = x + r * cols;
        if (top1) {
            a->top1_agree += argmax(p, cols) == argmax(q, cols);
            a->top1_rows++;
        }
        if (kl) {
            double sum = 0;
            for (int64_t c = 0; c < cols; c++)
                if (p[c] > 0) sum += p[c] * log(p[c] / fmax(q[c], 1e-12));
            a->kl_sum += sum;
            a->kl_rows++;
        }
    }
}

void pr_sens_acc_result(const pr_sens_acc *a, precis_sens_metrics *m) {
    m->cosine = a->samples ? a->cos_min : NAN;
    m->sqnr_db = !a->samples                ? NAN
                 : a->sqnr_inf == a->samples ? INFINITY
                                             : a->sqnr_sum / (double)(a->samples - a->sqnr_inf);
    m->rel_l2 = a->samples ? a->rel_sum / (double)a->samples : NAN;
    m->kl = a->kl_rows ? a->kl_sum / (double)a->kl_rows : NAN;
    m->top1 = a->top1_rows ? (double)a->top1_agree / (double)a->top1_rows : NAN;
}

static double lo(double a, double b) { return isnan(a) ? b : isnan(b) ? a : fmin(a, b); }
static double hi(double a, double b) { return isnan(a) ? b : isnan(b) ? a : fmax(a, b); }

void pr_sens_worst(precis_sens_metrics *m, const precis_sens_metrics *w) {
    m->cosine = lo(m->cosine, w->cosine);
    m->sqnr_db = lo(m->sqnr_db, w->sqnr_db);
    m->rel_l2 = hi(m->rel_l2, w->rel_l2);
    m->kl = hi(m->kl, w->kl);
    m->top1 = lo(m->top1, w->top1);
}
