/* Sensitivity metrics (sens/sens_metrics.h) on arrays with known answers:
 * cosine (min over samples), SQNR (mean over samples, energies), relative
 * L2, KL over probability rows, top-1 agreement, the probability test and
 * the worst-of merge. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "sens/sens_metrics.h"

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

static void test_cosine_sqnr_rel(void) {
    /* two samples of 2 values: identical, and x = 2 * ref */
    const float ref[] = {3, 4, 1, 0};
    const float x[] = {3, 4, 2, 0};
    int64_t dims[] = {2, 2};
    pr_sens_acc a;
    pr_sens_acc_init(&a);
    pr_sens_acc_add(&a, ref, x, 2, dims, false, false);
    precis_sens_metrics m;
    pr_sens_acc_result(&a, &m);
    CHECK(NEAR(m.cosine, 1.0, 1e-12)); /* parallel vectors */
    /* sample 2: |ref|^2 = 1, noise 1: 0 dB; sample 1 is identical: left out of the mean */
    CHECK(NEAR(m.sqnr_db, 0.0, 1e-9));
    CHECK(NEAR(m.rel_l2, 0.5, 1e-12)); /* (0 + 1) / 2 */
    CHECK(isnan(m.kl) && isnan(m.top1));

    /* orthogonal: cosine 0; opposite: -1; x = ref + 0.1 ref: SQNR 20 dB */
    const float r2[] = {1, 0, 1, 1, 10, 0};
    const float x2[] = {0, 1, -1, -1, 11, 0};
    int64_t d2[] = {3, 2};
    pr_sens_acc_init(&a);
    pr_sens_acc_add(&a, r2, x2, 2, d2, false, false);
    pr_sens_acc_result(&a, &m);
    CHECK(NEAR(m.cosine, -1.0, 1e-12));
    /* per sample: 10log10(1/2) = -3.0103, 10log10(2/8) = -6.0206, 10log10(100/1) = 20 */
    CHECK(NEAR(m.sqnr_db, (-3.0103 - 6.0206 + 20.0) / 3, 1e-3));
    CHECK(NEAR(m.rel_l2, (sqrt(2.0) + 2.0 + 0.1) / 3, 1e-9));

    /* identical everywhere: SQNR +inf, rel 0, cosine 1 */
    pr_sens_acc_init(&a);
    pr_sens_acc_add(&a, r2, r2, 2, d2, false, false);
    pr_sens_acc_result(&a, &m);
    CHECK(isinf(m.sqnr_db) && m.sqnr_db > 0 && m.rel_l2 == 0 && m.cosine == 1);

    /* rank 1: one sample */
    int64_t d1[] = {6};
    pr_sens_acc_init(&a);
    pr_sens_acc_add(&a, r2, x2, 1, d1, false, false);
    CHECK(a.samples == 1);

    /* energies over batches */
    double sig = 0, noise = 0;
    pr_sens_energy(ref, x, 4, &sig, &noise);
    CHECK(sig == 26 && noise == 1);
    CHECK(NEAR(pr_sens_sqnr_db(sig, noise), 10 * log10(26.0), 1e-12));
    CHECK(isnan(pr_sens_sqnr_db(0, 0)) && isinf(pr_sens_sqnr_db(1, 0)));
}

static void test_kl_top1(void) {
    /* 2 rows of 3 classes */
    const float p[] = {0.5f, 0.25f, 0.25f, 0.1f, 0.8f, 0.1f};
    const float q[] = {0.25f, 0.5f, 0.25f, 0.1f, 0.8f, 0.1f};
    int64_t dims[] = {2, 3};
    CHECK(pr_sens_is_prob(p, 2, 3));
    const float notp[] = {0.5f, 0.6f, 0.0f};
    const float neg[] = {1.5f, -0.5f, 0.0f};
    CHECK(!pr_sens_is_prob(notp, 1, 3) && !pr_sens_is_prob(neg, 1, 3));
    const float close[] = {0.5f, 0.2995f, 0.2f}; /* sums to 0.9995: within 1e-3 */
    CHECK(pr_sens_is_prob(close, 1, 3));
    pr_sens_acc a;
    pr_sens_acc_init(&a);
    pr_sens_acc_add(&a, p, q, 2, dims, true, true);
    precis_sens_metrics m;
    pr_sens_acc_result(&a, &m);
    /* row 1: 0.5 ln 2 + 0.25 ln 0.5 = 0.25 ln 2; row 2: 0 */
    CHECK(NEAR(m.kl, 0.125 * log(2.0), 1e-7));
    CHECK(NEAR(m.top1, 0.5, 1e-12)); /* row 1 argmax 0 vs 1, row 2 agrees */
    /* rank 3 [1, 2, 3]: rows over the last axis, one sample */
    int64_t d3[] = {1, 2, 3};
    pr_sens_acc_init(&a);
    pr_sens_acc_add(&a, p, q, 3, d3, true, true);
    pr_sens_acc_result(&a, &m);
    CHECK(a.samples == 1 && a.top1_rows == 2 && NEAR(m.top1, 0.5, 1e-12));
    /* a zero where p is not: KL large but finite */
    const float z[] = {0.0f, 0.5f, 0.5f};
    pr_sens_acc_init(&a);
    int64_t d4[] = {1, 3};
    pr_sens_acc_add(&a, p, z, 2, d4, true, false);
    pr_sens_acc_result(&a, &m);
    CHECK(isfinite(m.kl) && m.kl > 5);
}

static void test_worst(void) {
    precis_sens_metrics m = {NAN, NAN, NAN, NAN, NAN};
    precis_sens_metrics a = {0.9, 30, 0.1, NAN, 1.0}, b = {0.99, 20, 0.05, 0.2, NAN};
    pr_sens_worst(&m, &a);
    pr_sens_worst(&m, &b);
    CHECK(m.cosine == 0.9 && m.sqnr_db == 20 && m.rel_l2 == 0.1 && m.kl == 0.2 && m.top1 == 1.0);
}

int main(void) {
    test_cosine_sqnr_rel();
    test_kl_top1();
    test_worst();
    return check_report("test_sens");
}
