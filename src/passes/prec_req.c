#include "passes/prec_req.h"

#include "passes/graph_edit.h"
#include "passes/pass.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pr_prec_type_name(pr_dtype t) {
    const char *s = pr_rule_type_name(t);
    return s ? s : pr_dtype_name(t);
}

static const char *const k_recognized[] = {"LayerNormalization", "Gelu"};

/* An op: rule that hits no imported node but names an op precis recognizes. */
static bool deferred(const pr_prec_rule *r, const pr_graph *g) {
    if (r->kind != PR_SEL_OP) return false;
    for (int k = 0; k < g->n_nodes; k++)
        if (pr_rule_matches(r, g->nodes[k].name, g->nodes[k].op_type)) return false;
    for (size_t i = 0; i < sizeof k_recognized / sizeof k_recognized[0]; i++)
        if (pr_rule_matches(r, "", k_recognized[i])) return true;
    return false;
}

precis_status pr_prec_stamp(pr_graph *g, const pr_prec_rules *rs, pr_dtype dflt, pr_err *e) {
    /* check all but the deferred rules (a view of the others) */
    pr_prec_rules now = {0};
    now.r = malloc((size_t)(rs->n ? rs->n : 1) * sizeof *now.r);
    if (!now.r) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    int n_late = 0;
    for (int i = 0; i < rs->n; i++) {
        if (deferred(&rs->r[i], g)) n_late++;
        else now.r[now.n++] = rs->r[i];
    }
    precis_status st = pr_rules_check(&now, g, e);
    free(now.r);
    if (st) return st;
    for (int i = 0; i < rs->n; i++) {
        pr_dtype t = rs->r[i].type;
        if ((t == PRECIS_INT8 || t == PRECIS_FLOAT8E4M3FN) && dflt != t) {
            const char *tn = t == PRECIS_INT8 ? "int8" : "fp8";
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "%s: rule '%s' asks for %s: build with --precision %s (and "
                           "calibration data), then keep other nodes float with rules",
                           rs->r[i].source, rs->r[i].text, tn, tn);
        }
    }
    pr_prec_plan *p = pr_arena_alloc(g->arena, sizeof *p);
    if (!p) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    memset(p, 0, sizeof *p);
    p->dflt = dflt;
    p->n_rules = rs->n;
    p->late = pr_arena_alloc(g->arena, (size_t)(n_late ? n_late : 1) * sizeof *p->late);
    if (!p->late) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < rs->n; i++) {
        const pr_prec_rule *r = &rs->r[i];
        if (!deferred(r, g)) continue;
        pr_prec_late *l = &p->late[p->n_late++];
        l->text = pr_arena_strdup(g->arena, r->text);
        l->source = pr_arena_strdup(g->arena, r->source);
        l->pattern = pr_arena_strdup(g->arena, r->pattern);
        l->what = r->what;
        l->type = r->type;
        l->index = i;
        if (!l->text || !l->source || !l->pattern) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    }
    p->nodes = pr_arena_alloc(g->arena, (size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *p->nodes);
    if (!p->nodes) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        pr_node *n = &g->nodes[i];
        pr_prec_node *q = &p->nodes[p->n++];
        memset(q, 0, sizeof *q);
        q->name = n->name;
        q->op_type = n->op_type;
        q->rules = "";
        size_t len = 0;
        for (int k = 0; k < rs->n; k++)
            if (pr_rule_matches(&rs->r[k], n->name, n->op_type))
                len += strlen(rs->r[k].text) + strlen(rs->r[k].source) + 32;
        n->req_compute = n->req_output = PRECIS_UNDEFINED;
        if (!len) continue;
        char *buf = pr_arena_alloc(g->arena, len);
        if (!buf) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
        size_t o = 0;
        for (int k = 0; k < rs->n; k++) {
            const pr_prec_rule *r = &rs->r[k];
            if (!pr_rule_matches(r, n->name, n->op_type)) continue;
            if (r->what == PR_RULE_COMPUTE) n->req_compute = r->type, q->compute_rule = k + 1;
            else n->req_output = r->type, q->output_rule = k + 1;
            o += (size_t)snprintf(buf + o, len - o, "%s%s %s (%s)", o ? "; " : "",
                                  r->what == PR_RULE_COMPUTE ? "precision" : "output",
                                  r->text, r->source);
        }
        q->rules = buf;
        q->req_compute = n->req_compute;
        q->req_output = n->req_output;
    }
    g->prec = p;
    return PRECIS_OK;
}

pr_dtype pr_prec_effective(const pr_graph *g, const pr_node *n) {
    if (n->req_compute != PRECIS_UNDEFINED) return n->req_compute;
    return g->prec ? g->prec->dflt : PRECIS_FLOAT32;
}

bool pr_prec_any(const pr_graph *g) { return g->prec && g->prec->n_rules > 0; }

pr_prec_node *pr_prec_find(const pr_graph *g, const char *name) {
    if (!g->prec) return NULL;
    for (int i = 0; i < g->prec->n; i++)
        if (!strcmp(g->prec->nodes[i].name, name)) return &g->prec->nodes[i];
    return NULL;
}

static void vnote(pr_graph *g, const pr_node *n, const char *fmt, va_list ap) {
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    int k = n->n_origins ? n->n_origins : 1;
    for (int j = 0; j < k; j++) {
        pr_prec_node *q = pr_prec_find(g, n->n_origins ? n->origins[j] : n->name);
        if (!q || q->reason || (!q->req_compute && !q->req_output)) continue;
        q->reason = pr_arena_strdup(g->arena, msg); /* NULL on OOM: the report says less */
    }
}

void pr_prec_note(pr_graph *g, const pr_node *n, const char *fmt, ...) {
    if (!pr_prec_any(g)) return;
    va_list ap;
    va_start(ap, fmt);
    vnote(g, n, fmt, ap);
    va_end(ap);
}

static void note2(pr_graph *g, const pr_node *a, const pr_node *b, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note2(pr_graph *g, const pr_node *a, const pr_node *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vnote(g, a, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    vnote(g, b, fmt, ap);
    va_end(ap);
}

bool pr_prec_fusable(pr_graph *g, int ni, const int *nodes, int n, int out_node) {
    return pr_prec_fusable_f32(g, ni, nodes, n, out_node, -1);
}

bool pr_prec_fusable_f32(pr_graph *g, int ni, const int *nodes, int n, int out_node, int f32) {
    if (!pr_prec_any(g)) return true;
    const pr_node *h = &g->nodes[ni];
    pr_dtype c = pr_prec_effective(g, h);
    for (int i = 0; i < n; i++) {
        const pr_node *x = &g->nodes[nodes[i]];
        if (nodes[i] == ni || pr_prec_effective(g, x) == c) continue;
        if (nodes[i] == f32 && pr_prec_effective(g, x) == PRECIS_FLOAT32 &&
            (c == PRECIS_FLOAT16 || c == PRECIS_BFLOAT16 || c == PRECIS_INT8 ||
             c == PRECIS_FLOAT8E4M3FN))
            continue; /* the fused kernel computes this part in float32 anyway */
        note2(g, h, x, "not fused: '%s' (%s) asks %s, '%s' (%s) %s", h->name, h->op_type,
              pr_prec_type_name(c), x->name, x->op_type, pr_prec_type_name(pr_prec_effective(g, x)));
        return false;
    }
    /* outputs that end inside the fused node: ni's unless it is out_node (or
     * out_node < 0, when ni keeps its output), every absorbed node's but
     * out_node's */
    for (int i = -1; i < n; i++) {
        int k = i < 0 ? ni : nodes[i];
        if (k == out_node || (i < 0 && out_node < 0) || (i >= 0 && k == ni)) continue;
        const pr_node *x = &g->nodes[k];
        if (x->req_output == PRECIS_UNDEFINED || x->req_output == c) continue;
        pr_prec_note(g, x,
                     "not fused into '%s': its output type %s would live inside a %s kernel",
                     h->name, pr_prec_type_name(x->req_output), pr_prec_type_name(c));
        return false;
    }
    return true;
}

void pr_prec_merge(pr_graph *g, int ni, const int *nodes, int n, int out_node) {
    if (!pr_prec_any(g)) return;
    pr_node *h = &g->nodes[ni];
    pr_dtype c = pr_prec_effective(g, h);
    for (int i = 0; i < n && h->req_compute == PRECIS_UNDEFINED; i++)
        if (pr_prec_effective(g, &g->nodes[nodes[i]]) == c) /* not an exempt float32 part */
            h->req_compute = g->nodes[nodes[i]].req_compute;
    if (out_node >= 0 && out_node != ni) h->req_output = g->nodes[out_node].req_output;
}

precis_status pr_prec_apply_late(pr_graph *g, pr_err *e) {
    pr_prec_plan *p = g->prec;
    if (!p || !p->n_late) return PRECIS_OK;
    for (int r = 0; r < p->n_late; r++) {
        const pr_prec_late *l = &p->late[r];
        pr_prec_rule m = {0};
        m.pattern = (char *)l->pattern;
        m.kind = PR_SEL_OP;
        int hits = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            pr_node *n = &g->nodes[i];
            if (pr_node_dead(n) || !n->n_origins || !pr_rule_matches(&m, n->name, n->op_type))
                continue;
            hits++;
            bool taken = false;
            for (int j = 0; j < n->n_origins; j++) {
                pr_prec_node *q = pr_prec_find(g, n->origins[j]);
                if (!q) continue;
                bool compute = l->what == PR_RULE_COMPUTE;
                /* a name rule given after this op: rule wins on that node */
                bool later = (compute ? q->compute_rule : q->output_rule) > l->index + 1;
                if (!later) {
                    if (compute) q->req_compute = l->type, q->compute_rule = l->index + 1;
                    else q->req_output = l->type, q->output_rule = l->index + 1;
                    taken = true;
                }
                size_t len = strlen(q->rules) + strlen(l->text) + strlen(l->source) + 96;
                char *buf = pr_arena_alloc(g->arena, len);
                if (!buf) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
                snprintf(buf, len, "%s%s%s %s (%s, recognized %s%s)", q->rules,
                         q->rules[0] ? "; " : "", compute ? "precision" : "output", l->text,
                         l->source, n->op_type, later ? "; a later rule wins" : "");
                q->rules = buf;
            }
            if (taken && l->what == PR_RULE_COMPUTE) n->req_compute = l->type;
            else if (taken) n->req_output = l->type;
        }
        if (!hits)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "%s: rule '%s' matches no op type in the model, nor a pattern precis "
                           "recognizes as one",
                           l->source, l->text);
    }
    return PRECIS_OK;
}

static precis_status late_run(pr_graph *g, pr_pass_ctx *pc) { return pr_prec_apply_late(g, pc->err); }

const pr_pass pr_pass_prec_late = {"prec_late", late_run};
