#include "passes/prec_req.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tname(pr_dtype t) {
    const char *s = pr_rule_type_name(t);
    return s ? s : pr_dtype_name(t);
}

precis_status pr_prec_stamp(pr_graph *g, const pr_prec_rules *rs, pr_dtype dflt, pr_err *e) {
    precis_status st = pr_rules_check(rs, g, e);
    if (st) return st;
    for (int i = 0; i < rs->n; i++)
        if (rs->r[i].type == PRECIS_INT8 && dflt != PRECIS_INT8)
            return pr_errf(e, PRECIS_ERR_INVALID_ARG,
                           "%s: rule '%s' asks for int8: build with --precision int8 (and "
                           "calibration data), then keep other nodes float with rules",
                           rs->r[i].source, rs->r[i].text);
    pr_prec_plan *p = pr_arena_alloc(g->arena, sizeof *p);
    if (!p) return pr_errf(e, PRECIS_ERR_OOM, "out of memory");
    memset(p, 0, sizeof *p);
    p->dflt = dflt;
    p->n_rules = rs->n;
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
            if (r->what == PR_RULE_COMPUTE) n->req_compute = r->type;
            else n->req_output = r->type;
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
            (c == PRECIS_FLOAT16 || c == PRECIS_BFLOAT16))
            continue; /* the fused kernel computes this part in float32 anyway */
        note2(g, h, x, "not fused: '%s' (%s) asks %s, '%s' (%s) %s", h->name, h->op_type,
              tname(c), x->name, x->op_type, tname(pr_prec_effective(g, x)));
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
                     h->name, tname(x->req_output), tname(c));
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
