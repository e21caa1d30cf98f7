/* The per-step profile that `precis bench PLAN --profile` leaves beside the
 * plan (PLAN.profile.json) and `precis inspect PLAN` shows as each step's time
 * share. The file names the plan by its checksum (the CRC-32C stored at byte
 * 12 of every plan), so a profile of an older build of the same path is
 * recognised and ignored. Format (written and read here only):
 *
 *   {"plan": "...", "plan_checksum": 1234, "threads": 2, "runs": 50,
 *    "inputs": "x=1x3x640x640", "steps": 130,
 *    "ms": [0.123, ...],            one per step, mean per run
 *    "kernels": ["...", ...]}       informational
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int plan_checksum(const char *plan_path, uint32_t *crc) {
    FILE *f = fopen(plan_path, "rb");
    if (!f) return -1;
    unsigned char h[16];
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n != sizeof h || memcmp(h, "PRECISPL", 8) != 0) return -1;
    *crc = (uint32_t)h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 | (uint32_t)h[15] << 24;
    return 0;
}

void profile_default_path(const char *plan_path, char *out, size_t cap) {
    snprintf(out, cap, "%s.profile.json", plan_path);
}

int profile_save(const char *path, const char *plan_path, const precis_engine *e,
                 const precis_context *c, const char *inputs_desc) {
    uint32_t crc = 0;
    int have_crc = plan_path && plan_checksum(plan_path, &crc) == 0;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "precis: note: cannot write the profile %s: %s\n", path, strerror(errno));
        return -1;
    }
    int n = precis_engine_num_steps(e), runs = precis_context_profiled_runs(c);
    fprintf(f, "{\"plan\": ");
    json_fstr(f, plan_path ? plan_path : "");
    if (have_crc) fprintf(f, ", \"plan_checksum\": %u", (unsigned)crc);
    fprintf(f, ", \"threads\": %d, \"runs\": %d, \"inputs\": ", precis_engine_num_threads(e), runs);
    json_fstr(f, inputs_desc);
    fprintf(f, ", \"steps\": %d,\n \"ms\": [", n);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.6f", i ? ", " : "",
                1e3 * precis_context_step_seconds(c, i) / (runs ? runs : 1));
    fprintf(f, "],\n \"kernels\": [");
    for (int i = 0; i < n; i++) {
        precis_step_info si;
        precis_engine_step(e, i, &si);
        fprintf(f, "%s", i ? ", " : "");
        json_fstr(f, si.kernel);
    }
    fprintf(f, "]}\n");
    int bad = ferror(f);
    if (fclose(f) || bad) {
        fprintf(stderr, "precis: note: could not write the profile %s\n", path);
        return -1;
    }
    return 0;
}

/* The number after "key": in s, or -1 when absent. */
static long long json_int(const char *s, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(s, pat);
    if (!p) return -1;
    char *end;
    long long v = strtoll(p + strlen(pat), &end, 10);
    return end == p + strlen(pat) ? -1 : v;
}

/* The string value of "key" (no escapes expected) into out. */
static void json_text(const char *s, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(s, pat);
    out[0] = 0;
    if (!p) return;
    p += strlen(pat);
    size_t k = 0;
    while (p[k] && p[k] != '"' && k + 1 < cap) k++;
    memcpy(out, p, k);
    out[k] = 0;
}

int profile_load(const char *path, const char *plan_path, int n_steps, double *ms,
                 char *info, size_t info_cap, char *why, size_t why_cap) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_cap, "cannot open %s: %s", path, strerror(errno));
        return errno == ENOENT ? -2 : -1;
    }
    size_t cap = 64 + (size_t)n_steps * 80 + 4096, len = 0;
    char *s = malloc(cap + 1);
    if (!s) {
        fclose(f);
        snprintf(why, why_cap, "out of memory reading %s", path);
        return -1;
    }
    len = fread(s, 1, cap, f);
    fclose(f);
    s[len] = 0;
    int rc = -1;
    uint32_t crc = 0;
    long long file_crc = json_int(s, "plan_checksum"), steps = json_int(s, "steps");
    const char *arr = strstr(s, "\"ms\": [");
    if (steps < 0 || !arr) {
        snprintf(why, why_cap, "%s is not a precis profile (no \"steps\"/\"ms\")", path);
    } else if (plan_checksum(plan_path, &crc) != 0 || file_crc != (long long)crc) {
        snprintf(why, why_cap, "%s was measured on another build of the plan (checksum differs)",
                 path);
    } else if (steps != n_steps) {
        snprintf(why, why_cap, "%s has %lld steps, the plan %d", path, steps, n_steps);
    } else {
        const char *p = arr + strlen("\"ms\": [");
        int k = 0;
        for (; k < n_steps; k++) {
            char *end;
            ms[k] = strtod(p, &end);
            if (end == p || !(ms[k] >= 0)) break;
            p = end;
            while (*p == ',' || *p == ' ' || *p == '\n') p++;
        }
        if (k != n_steps) {
            snprintf(why, why_cap, "%s: step %d of \"ms\" is not a time", path, k);
        } else {
            char inputs[512];
            json_text(s, "inputs", inputs, sizeof inputs);
            snprintf(info, info_cap, "%s (%lld runs, %lld threads, inputs %s)", path,
                     json_int(s, "runs"), json_int(s, "threads"), inputs[0] ? inputs : "?");
            rc = 0;
        }
    }
    free(s);
    return rc;
}
