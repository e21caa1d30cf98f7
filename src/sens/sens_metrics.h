/* Error metrics of a tensor against a reference, accumulated batch by batch
 * (running sums only: no activation is kept). What each metric means is
 * documented with precis_sens_metrics in precis.h. */
#ifndef PR_SENS_METRICS_H
#define PR_SENS_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "precis/precis.h"

typedef struct pr_sens_acc {
    int64_t samples;
    double cos_min;
    double sqnr_sum;
    int64_t sqnr_inf;  /* samples with no noise at all */
    double rel_sum;
    double kl_sum;
    int64_t kl_rows;
    int64_t top1_agree, top1_rows;
} pr_sens_acc;

void pr_sens_acc_init(pr_sens_acc *a);

/* One batch of one output: x and ref hold n = prod(dims) floats of the same
 * shape. Samples are the indices of dim 0 when rank >= 2, else the whole
 * tensor is one. kl / top1: also accumulate those over the rows of the last
 * axis (see pr_sens_is_prob and precis_sens_metrics). */
void pr_sens_acc_add(pr_sens_acc *a, const float *ref, const float *x, int rank,
                     const int64_t *dims, bool kl, bool top1);

/* The metrics so far (NAN for what was never accumulated). */
void pr_sens_acc_result(const pr_sens_acc *a, precis_sens_metrics *m);

/* Is every row of ref (rows x cols) a probability distribution: no negative
 * value, summing to 1 within 1e-3? */
bool pr_sens_is_prob(const float *ref, int64_t rows, int64_t cols);

/* m := the worst of m and w, metric by metric (min cosine, SQNR, top1; max
 * rel_l2, KL; NAN counts as absent). */
void pr_sens_worst(precis_sens_metrics *m, const precis_sens_metrics *w);

/* Energies for an SQNR over many batches: *sig += sum ref^2, *noise +=
 * sum (x - ref)^2. pr_sens_sqnr_db turns them into dB (+inf for no noise,
 * -inf for no signal but noise, NAN for neither). */
void pr_sens_energy(const float *ref, const float *x, int64_t n, double *sig, double *noise);
double pr_sens_sqnr_db(double sig, double noise);

#endif
