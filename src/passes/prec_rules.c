#define _POSIX_C_SOURCE 200809L
#include "passes/prec_rules.h"

#include <errno.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

#define RULES_MAX_FILE ((long)16 << 20)

static const struct {
    const char *name;
    pr_dtype type;
} k_types[] = {{"fp32", PRECIS_FLOAT32},
               {"fp16", PRECIS_FLOAT16},
               {"bf16", PRECIS_BFLOAT16},
               {"int8", PRECIS_INT8},
               {"fp8", PRECIS_FLOAT8E4M3FN}};

const char *pr_rule_type_name(pr_dtype t) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].type == t) return k_types[i].name;
    return NULL;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static void rule_free(pr_prec_rule *r) {
    free(r->text);
    free(r->pattern);
    free(r->source);
    if (r->re) {
        regfree(r->re);
        free(r->re);
    }
    memset(r, 0, sizeof *r);
}

void pr_rules_free(pr_prec_rules *rs) {
    for (int i = 0; i < rs->n; i++) rule_free(&rs->r[i]);
    free(rs->r);
    memset(rs, 0, sizeof *rs);
}

static const char *what_flag(pr_rule_what w) {
    return w == PR_RULE_COMPUTE ? "layer precision" : "layer output type";
}

precis_status pr_rules_add(pr_prec_rules *rs, const char *spec, pr_rule_what what,
                           const char *source, pr_err *e) {
    const char *colon = strrchr(spec, ':');
    if (!colon)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: %s rule '%s' has no ':TYPE' (want SELECTOR:fp32|fp16|bf16|int8)",
                       source, what_flag(what), spec);
    const char *tname = colon + 1;
    pr_dtype type = PRECIS_UNDEFINED;
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (!strcmp(tname, k_types[i].name)) type = k_types[i].type;
    if (type == PRECIS_UNDEFINED)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: %s rule '%s': unknown type '%s' (want fp32, fp16, bf16 or int8)",
                       source, what_flag(what), spec, tname);
    size_t sl = (size_t)(colon - spec);
    pr_sel_kind kind = PR_SEL_EXACT;
    const char *pat = spec;
    if (sl >= 3 && !strncmp(spec, "re:", 3)) {
        kind = PR_SEL_REGEX;
        pat += 3;
    } else if (sl >= 3 && !strncmp(spec, "op:", 3)) {
        kind = PR_SEL_OP;
        pat += 3;
    } else if (memchr(spec, '*', sl) || memchr(spec, '?', sl) || memchr(spec, '[', sl)) {
        kind = PR_SEL_GLOB;
    }
    size_t pl = (size_t)(colon - pat);
    if (pl == 0)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: %s rule '%s' has an empty selector",
                       source, what_flag(what), spec);
    if (rs->n == rs->cap) {
        int nc = rs->cap ? rs->cap * 2 : 8;
        pr_prec_rule *nr = realloc(rs->r, (size_t)nc * sizeof *nr);
        if (!nr) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        rs->r = nr;
        rs->cap = nc;
    }
    pr_prec_rule *r = &rs->r[rs->n];
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->what = what;
    r->type = type;
    r->text = dup_n(spec, strlen(spec));
    r->pattern = dup_n(pat, pl);
    r->source = dup_n(source, strlen(source));
    if (!r->text || !r->pattern || !r->source) {
        rule_free(r);
        return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    if (kind == PR_SEL_REGEX) {
        r->re = malloc(sizeof(regex_t));
        int rc = r->re ? regcomp(r->re, r->pattern, REG_EXTENDED | REG_NOSUB) : REG_ESPACE;
        if (rc) {
            char msg[200] = "out of memory";
            if (r->re) regerror(rc, r->re, msg, sizeof msg);
            free(r->re);
            r->re = NULL;
            precis_status st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                                       "%s: %s rule '%s': bad regex: %s", source,
                                       what_flag(what), spec, msg);
            rule_free(r);
            return st;
        }
    }
    rs->n++;
    return PRECIS_OK;
}

bool pr_rule_matches(const pr_prec_rule *r, const char *node_name, const char *op_type) {
    switch (r->kind) {
    case PR_SEL_EXACT: return node_name && !strcmp(r->pattern, node_name);
    case PR_SEL_GLOB: return node_name && fnmatch(r->pattern, node_name, 0) == 0;
    case PR_SEL_REGEX: return node_name && regexec(r->re, node_name, 0, NULL, 0) == 0;
    case PR_SEL_OP: return op_type && fnmatch(r->pattern, op_type, 0) == 0;
    }
    return false;
}

int pr_rules_decide(const pr_prec_rules *rs, pr_rule_what what, const char *node_name,
                    const char *op_type) {
    int hit = -1;
    for (int i = 0; i < rs->n; i++)
        if (rs->r[i].what == what && pr_rule_matches(&rs->r[i], node_name, op_type)) hit = i;
    return hit;
}

/* Levenshtein distance, capped rows of at most 256 characters. */
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 256) la = 256;
    if (lb > 256) lb = 256;
    int row[257];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The up-to-three candidates closest to pattern, ", "-separated into out. */
static void closest(const pr_graph *g, const pr_prec_rule *r, char *out, size_t cap) {
    const char *best[3] = {0};
    int bd[3] = {1 << 30, 1 << 30, 1 << 30};
    for (int i = 0; i < g->n_nodes; i++) {
        const char *c = r->kind == PR_SEL_OP ? g->nodes[i].op_type : g->nodes[i].name;
        if (!c) continue;
        bool seen = false;
        for (int k = 0; k < 3; k++) seen |= best[k] && !strcmp(best[k], c);
        if (seen) continue;
        int d = edit_distance(r->pattern, c);
        for (int k = 0; k < 3; k++) {
            if (d >= bd[k]) continue;
            for (int m = 2; m > k; m--) best[m] = best[m - 1], bd[m] = bd[m - 1];
            best[k] = c;
            bd[k] = d;
            break;
        }
    }
    size_t n = 0;
    out[0] = 0;
    for (int k = 0; k < 3 && best[k] && n < cap; k++)
        n += (size_t)snprintf(out + n, cap - n, "%s'%s'", k ? ", " : "", best[k]);
}

precis_status pr_rules_check(const pr_prec_rules *rs, const pr_graph *g, pr_err *e) {
    for (int i = 0; i < rs->n; i++) {
        const pr_prec_rule *r = &rs->r[i];
        bool hit = false;
        for (int k = 0; k < g->n_nodes && !hit; k++)
            hit = pr_rule_matches(r, g->nodes[k].name, g->nodes[k].op_type);
        if (hit) continue;
        char near[800];
        closest(g, r, near, sizeof near);
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: %s rule '%s' matches no %s; closest: %s", r->source,
                       what_flag(r->what), r->text,
                       r->kind == PR_SEL_OP ? "op type in the model" : "node name",
                       near[0] ? near : "(the model has no nodes)");
    }
    return PRECIS_OK;
}

/* one {"select", "precision"?, "output_type"?} object of a rules file */
static precis_status load_one(pr_prec_rules *rs, const pr_json *o, const char *path, pr_err *e) {
    char src[600];
    snprintf(src, sizeof src, "%s:%d", path, o->line);
    const pr_json *sel = pr_json_get(o, "select");
    if (o->kind != PR_JSON_OBJ || !sel || sel->kind != PR_JSON_STR)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: a rule must be an object with a \"select\" string", src);
    static const char *const keys[2] = {"precision", "output_type"};
    int used = 0;
    for (int k = 0; k < o->n; k++) {
        const char *key = o->keys[k];
        if (!strcmp(key, "select")) continue;
        if (strcmp(key, keys[0]) != 0 && strcmp(key, keys[1]) != 0)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "%s: unknown key \"%s\" (want select, precision, output_type)", src,
                           key);
        const pr_json *v = &o->items[k];
        if (v->kind != PR_JSON_STR)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG, "%s: \"%s\" must be a string", src, key);
        size_t n = strlen(sel->str) + strlen(v->str) + 2;
        char *spec = malloc(n);
        if (!spec) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        snprintf(spec, n, "%s:%s", sel->str, v->str);
        precis_status st =
            pr_rules_add(rs, spec, strcmp(key, keys[0]) == 0 ? PR_RULE_COMPUTE : PR_RULE_OUTPUT,
                         src, e);
        free(spec);
        if (st) return st;
        used++;
    }
    if (!used)
        return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                       "%s: rule for '%s' sets neither \"precision\" nor \"output_type\"", src,
                       sel->str);
    return PRECIS_OK;
}

precis_status pr_rules_load(pr_prec_rules *rs, const char *path, pr_err *e) {
    FILE *f = fopen(path, "rb");
    if (!f) return pr_errf(e, PRECIS_ERR_IO, "cannot open rules file %s: %s", path, strerror(errno));
    char *buf = NULL;
    long len = -1;
    if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
    if (len < 0 || len > RULES_MAX_FILE || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return pr_errf(e, len > RULES_MAX_FILE ? PRECIS_ERR_OOM : PRECIS_ERR_IO,
                       "rules file %s: %s", path,
                       len > RULES_MAX_FILE ? "larger than 16 MiB" : "cannot read");
    }
    buf = malloc((size_t)len + 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    if (!buf) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    if (got != (size_t)len) {
        free(buf);
        return pr_errf(e, PRECIS_ERR_IO, "rules file %s: short read", path);
    }
    pr_json *j = NULL;
    precis_status st = pr_json_parse(buf, (size_t)len, path, &j, e);
    free(buf);
    if (st) return st;
    const pr_json *arr = j->kind == PR_JSON_ARR ? j : pr_json_get(j, "rules");
    if (!arr || arr->kind != PR_JSON_ARR) {
        st = pr_errf(e, PRECIS_ERR_INVALID_ARG,
                     "rules file %s: want {\"rules\": [...]} or a JSON array of rules", path);
    } else {
        for (int i = 0; i < arr->n && !st; i++) st = load_one(rs, &arr->items[i], path, e);
    }
    pr_json_free(j);
    return st;
}
