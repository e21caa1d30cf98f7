/* The accessors of precis_protection and the rules file (precis.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/api.h"
#include "sens/protect_impl.h"

void precis_protect_destroy(precis_protection *p) {
    if (!p) return;
    precis_sens_destroy(p->sens);
    for (int i = 0; i < p->n_c; i++) free(p->c[i].in), free(p->c[i].layers);
    free(p->c);
    for (int i = 0; i < p->n_rules; i++) free(p->rules[i]);
    free(p->rules);
    free(p->notes);
    free(p->user_name);
    free(p);
}

const precis_sens *precis_protect_sens(const precis_protection *p) { return p ? p->sens : NULL; }
int precis_protect_num_candidates(const precis_protection *p) { return p ? p->n_c : 0; }
int precis_protect_met(const precis_protection *p) { return p ? p->met : 0; }
int precis_protect_max_layers(const precis_protection *p) { return p ? p->max_layers : 0; }
int precis_protect_num_budget(const precis_protection *p) { return p ? p->n_cond : 0; }
const char *precis_protect_notes(const precis_protection *p) {
    return p && p->notes ? p->notes : "";
}
const char *precis_protect_user_name(const precis_protection *p) {
    return p && p->user_name ? p->user_name : "user";
}
double precis_protect_seconds(const precis_protection *p) { return p ? p->seconds : 0; }
int precis_protect_pick(const precis_protection *p, int which) {
    return p && which >= 0 && which < 5 ? p->pick[which] : -1;
}

precis_status precis_protect_candidate_get(const precis_protection *p, int i,
                                           precis_protect_candidate *out) {
    if (!p || !out || i < 0 || i >= p->n_c) return PRECIS_ERR_INVALID_ARG;
    const prot_cand *c = &p->c[i];
    *out = (precis_protect_candidate){c->label, c->n_layers, c->layers, c->m, c->user,
                                      c->v.score, c->v.score >= 0, c->latency_ms, c->cost_ms};
    return PRECIS_OK;
}

precis_status precis_protect_budget(const precis_protection *p, int i, precis_budget *out,
                                    double *fp32) {
    if (!p || !out || i < 0 || i >= p->n_cond) return PRECIS_ERR_INVALID_ARG;
    *out = (precis_budget){p->cond[i].metric, p->cond[i].kind, p->cond[i].threshold};
    if (fp32) *fp32 = p->cond[i].fp32;
    return PRECIS_OK;
}

precis_status precis_protect_write_rules(precis_ctx *ctx, const precis_protection *p,
                                         const char *path) {
    if (!ctx || !p || !path)
        return pr_ctx_fail(ctx, PRECIS_ERR_INVALID_ARG, "precis_protect_write_rules: NULL argument");
    FILE *f = fopen(path, "w");
    if (!f) return pr_ctx_fail(ctx, PRECIS_ERR_IO, "cannot write the rules file '%s'", path);
    fprintf(f, "{\"rules\": [");
    for (int i = 0; i < p->n_rules; i++) {
        const char *r = p->rules[i], *colon = strrchr(r, ':');
        fprintf(f, "%s\n  {\"select\": \"", i ? "," : "");
        for (const char *c = r; c < colon; c++) {
            if (*c == '"' || *c == '\\') fputc('\\', f);
            if ((unsigned char)*c < 0x20) fprintf(f, "\\u%04x", *c);
            else fputc(*c, f);
        }
        fprintf(f, "\", \"precision\": \"%s\"}", colon + 1);
    }
    fprintf(f, "%s]}\n", p->n_rules ? "\n" : "");
    if (fclose(f) != 0) return pr_ctx_fail(ctx, PRECIS_ERR_IO, "cannot write the rules file '%s'", path);
    return PRECIS_OK;
}
