/* The per-node precision report (precis_engine_node): built from the planned
 * graph and its steps, stored in the plan as the metadata value
 * "precis.nodes" and read back on load.
 *
 * "precis.nodes": one line per original ONNX node, in graph order, fields
 * separated by tabs (tabs and newlines in names become spaces):
 *   name, op, step, req_compute, req_output, compute, output, accumulator,
 *   output_in_kernel, honored, rules, reason, scales
 * dtypes as their precis_dtype numbers (0: none). Plans written before
 * `scales` have 12 fields (scales read as "").
 *
 * scales: the INT8 scales of the node's step, space-separated NAME=VALUE
 * items: x/a/b/z = an int8 input's scale (real value = scale * q), w = the
 * weights' per-output-channel scales as MIN..MAX/COUNT (or one value),
 * y = the int8 output's scale; "" for a node that computes in float. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/convert.h"
#include "passes/prec_req.h"
#include "runtime/engine.h"

#define NODES_KEY "precis.nodes"

precis_status pr_engine_rules(const precis_build_options *o, pr_prec_rules *rs, pr_err *e) {
    precis_status st = PRECIS_OK;
    if (o->rules_file && (st = pr_rules_load(rs, o->rules_file, e))) return st;
    for (int i = 0; i < o->n_layer_precision && !st; i++)
        st = pr_rules_add(rs, o->layer_precision[i], PR_RULE_COMPUTE, "--layer-precision", e);
    for (int i = 0; i < o->n_layer_output_type && !st; i++)
        st = pr_rules_add(rs, o->layer_output_type[i], PR_RULE_OUTPUT, "--layer-output-type", e);
    return st;
}

static bool is_q8(pr_dtype t) { return t == PRECIS_INT8 || t == PRECIS_UINT8; }
static bool is_quant(pr_dtype t) { return is_q8(t) || t == PRECIS_FLOAT8E4M3FN; }

/* The type node n computes in: the int8 ops their (int8/uint8) data input's
 * (QBinary: whichever operand is int8),
 * others their first output's (what precis_engine_step reports). */
static pr_dtype compute_of(const pr_graph *g, const pr_node *n) {
    int t = -1;
    switch (n->op) {
    case PR_OP_QBinary: /* either operand may be the int8 one */
        t = pr_node_in(n, 0);
        if (t < 0 || !is_quant(g->tensors[t].dtype)) t = pr_node_in(n, 1);
        break;
    case PR_OP_QConv:
    case PR_OP_QMatMul:
    case PR_OP_QPool:
    case PR_OP_Attention: t = pr_node_in(n, 0); break; /* Y may be e4m3 (y_type) */
    default: t = pr_node_out(n, 0); break;
    }
    return t >= 0 ? g->tensors[t].dtype : PRECIS_UNDEFINED;
}

/* Ops that sum products or values (their accumulator matters). */
static bool sums(pr_op op) {
    switch (op) {
    case PR_OP_Conv: case PR_OP_FusedConv: case PR_OP_ConvTranspose: case PR_OP_MatMul:
    case PR_OP_FusedMatMul: case PR_OP_Gemm: case PR_OP_Attention: case PR_OP_QConv:
    case PR_OP_QMatMul: case PR_OP_QPool: case PR_OP_LayerNormalization: case PR_OP_Softmax:
    case PR_OP_ReduceMean: case PR_OP_ReduceSum: case PR_OP_AveragePool:
    case PR_OP_GlobalAveragePool: case PR_OP_BatchNormalization: case PR_OP_InstanceNormalization:
        return true;
    default: return false;
    }
}

static pr_dtype accumulator_of(const pr_node *n, pr_dtype compute) {
    if (!sums(n->op)) return PRECIS_UNDEFINED;
    if (is_q8(compute)) return PRECIS_INT32;
    return pr_prec_is_float(compute) || compute == PRECIS_FLOAT8E4M3FN ? PRECIS_FLOAT32 : compute;
}

/* Does a requested type match what runs? int8 requests take uint8 too. */
static bool meets(pr_dtype req, pr_dtype got) {
    if (req == PRECIS_UNDEFINED) return true;
    if (req == PRECIS_INT8) return is_q8(got);
    return req == got;
}

/* The type t's consumers read when every one of them reads it through an
 * inserted Cast to `want` (an output type request); else t's own type. */
static pr_dtype passed_on(const pr_graph *g, int t, pr_dtype want) {
    pr_dtype dt = g->tensors[t].dtype;
    if (!pr_prec_is_float(want) || want == dt) return dt;
    int casts = 0, others = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const pr_node *c = &g->nodes[i];
        for (int k = 0; k < c->n_inputs; k++) {
            if (c->inputs[k] != t) continue;
            int o = pr_node_out(c, 0);
            if (c->op == PR_OP_Cast && pr_node_inserted(c) && o >= 0 && g->tensors[o].dtype == want)
                casts++;
            else
                others++;
        }
    }
    return casts && !others ? want : dt;
}

/* The scale of int8 tensor t: its producer's y_scale (or QuantizeLinear's
 * scale), through pass-through ops (MaxPool, Relu, Reshape, Concat...: int8
 * in, int8 out) to their first input; 0 when not known. */
static float tensor_scale(const pr_graph *g, const int *producer, int t, int depth) {
    if (t < 0 || depth > 64 || producer[t] < 0) return 0;
    const pr_node *n = &g->nodes[producer[t]];
    switch (n->op) {
    case PR_OP_QConv: case PR_OP_QMatMul: case PR_OP_QBinary: case PR_OP_QPool:
        return pr_attr_float(n, "y_scale", 0);
    case PR_OP_QuantizeLinear: {
        int sc = pr_node_in(n, 1);
        const pr_tensor *x = sc >= 0 ? &g->tensors[sc] : NULL;
        return x && x->data && x->dtype == PRECIS_FLOAT32 && x->nbytes == sizeof(float)
                   ? *(const float *)x->data
                   : 0;
    }
    default: {
        int in = pr_node_in(n, 0);
        return in >= 0 && is_quant(g->tensors[in].dtype)
                   ? tensor_scale(g, producer, in, depth + 1)
                   : 0;
    }
    }
}

static void put_scale(char **w, const char *name, float s) {
    if (s > 0) *w += sprintf(*w, "%s%s=%.4g", (*w)[-1] == '\t' ? "" : " ", name, s);
}

/* w=MIN..MAX/COUNT of a float32 scale initializer (one value: w=V). */
static void put_scale_vec(char **w, const char *name, const pr_tensor *x) {
    if (!x || !x->data || x->dtype != PRECIS_FLOAT32 || !x->nbytes) return;
    const float *v = x->data;
    size_t n = x->nbytes / sizeof(float);
    float lo = v[0], hi = v[0];
    for (size_t i = 1; i < n; i++) lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
    const char *sep = (*w)[-1] == '\t' ? "" : " ";
    if (n == 1) *w += sprintf(*w, "%s%s=%.4g", sep, name, lo);
    else *w += sprintf(*w, "%s%s=%.4g..%.4g/%zu", sep, name, lo, hi, n);
}

/* The scales of step node n (see the header comment); writes after a tab. */
static void put_scales(char **w, const pr_graph *g, const int *producer, const pr_node *n) {
    bool q8_out = false;
    int y = pr_node_out(n, 0);
    if (y >= 0) q8_out = is_q8(g->tensors[y].dtype);
    switch (n->op) {
    case PR_OP_QConv:
    case PR_OP_QMatMul: {
        bool conv = n->op == PR_OP_QConv;
        put_scale(w, conv ? "x" : "a", pr_attr_float(n, conv ? "x_scale" : "a_scale", 0));
        int ws = pr_node_in(n, 2);
        put_scale_vec(w, conv ? "w" : "b", ws >= 0 ? &g->tensors[ws] : NULL);
        int z = pr_node_in(n, 4);
        if (z >= 0 && is_q8(g->tensors[z].dtype)) put_scale(w, "z", pr_attr_float(n, "z_scale", 0));
        break;
    }
    case PR_OP_QBinary:
        for (int j = 0; j < 2; j++) {
            int t = pr_node_in(n, j);
            if (t >= 0 && is_q8(g->tensors[t].dtype))
                put_scale(w, j ? "b" : "a", pr_attr_float(n, j ? "b_scale" : "a_scale", 0));
        }
        break;
    case PR_OP_QPool: put_scale(w, "x", pr_attr_float(n, "x_scale", 0)); break;
    case PR_OP_QuantizeLinear: {
        int sc = pr_node_in(n, 1);
        put_scale_vec(w, "y", sc >= 0 ? &g->tensors[sc] : NULL);
        return;
    }
    case PR_OP_DequantizeLinear: {
        int sc = pr_node_in(n, 1);
        put_scale_vec(w, "x", sc >= 0 ? &g->tensors[sc] : NULL);
        return;
    }
    default: {
        int x = pr_node_in(n, 0);
        if (x < 0 || !is_q8(g->tensors[x].dtype)) return;
        put_scale(w, "x", tensor_scale(g, producer, x, 0));
        break;
    }
    }
    if (q8_out) put_scale(w, "y", tensor_scale(g, producer, y, 0));
}

static void put_clean(char **p, const char *s) {
    for (; s && *s; s++) *(*p)++ = (*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s;
}

/* Parse "precis.nodes" into e->nodes (strings pointing into a copy). */
precis_status pr_prec_report_parse(precis_engine *e, pr_err *err) {
    const char *v = NULL;
    for (int i = 0; i < e->g->n_metadata; i++)
        if (!strcmp(e->g->metadata[i].key, NODES_KEY)) v = e->g->metadata[i].value;
    e->n_nodes = 0;
    if (!v) return PRECIS_OK; /* plans from before the report: no rows */
    int lines = 0;
    for (const char *s = v; *s; s++) lines += *s == '\n';
    char *buf = pr_arena_strdup(e->g->arena, v);
    e->nodes = pr_arena_alloc(e->g->arena, (size_t)(lines ? lines : 1) * sizeof *e->nodes);
    if (!buf || !e->nodes) return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    char *line = buf;
    for (int i = 0; i < lines; i++) {
        char *nl = strchr(line, '\n');
        if (!nl) break;
        *nl = 0;
        char *f[13];
        int nf = 0;
        for (char *s = line; nf < 13;) {
            f[nf++] = s;
            char *tab = strchr(s, '\t');
            if (!tab) break;
            *tab = 0;
            s = tab + 1;
        }
        if (nf != 12 && nf != 13)
            return pr_errf(err, PRECIS_ERR_PARSE,
                           "plan metadata %s: line %d has %d fields, not 13", NODES_KEY, i + 1, nf);
        precis_node_info *q = &e->nodes[e->n_nodes++];
        q->name = f[0];
        q->op = f[1];
        q->step = atoi(f[2]);
        q->req_compute = (precis_dtype)atoi(f[3]);
        q->req_output = (precis_dtype)atoi(f[4]);
        q->compute = (precis_dtype)atoi(f[5]);
        q->output = (precis_dtype)atoi(f[6]);
        q->accumulator = (precis_dtype)atoi(f[7]);
        q->output_in_kernel = atoi(f[8]);
        q->honored = atoi(f[9]);
        q->rules = f[10];
        q->reason = f[11];
        q->scales = nf > 12 ? f[12] : "";
        if (q->step < -1 || q->step >= e->n_steps)
            return pr_errf(err, PRECIS_ERR_PARSE, "plan metadata %s: node '%s' names step %d of %d",
                           NODES_KEY, q->name, q->step, e->n_steps);
        line = nl + 1;
    }
    return PRECIS_OK;
}

precis_status pr_prec_report_build(precis_engine *e, bool strict, pr_err *err) {
    pr_graph *g = e->g;
    const pr_prec_plan *p = g->prec;
    if (!p) return PRECIS_OK;
    int *step = malloc((size_t)(p->n ? p->n : 1) * sizeof *step);
    int *last = malloc((size_t)(p->n ? p->n : 1) * sizeof *last);
    if (!step || !last) {
        free(step);
        free(last);
        return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    }
    int *producer = malloc((size_t)(g->n_tensors + 1) * sizeof *producer);
    if (!producer) {
        free(step);
        free(last);
        return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    }
    for (int t = 0; t < g->n_tensors; t++) producer[t] = -1;
    for (int k = 0; k < e->n_steps; k++) {
        const pr_node *n = &g->nodes[e->steps[k].node];
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] >= 0) producer[n->outputs[j]] = e->steps[k].node;
    }
    for (int i = 0; i < p->n; i++) step[i] = -1, last[i] = 0;
    for (int k = 0; k < e->n_steps; k++) {
        const pr_step *s = &e->steps[k];
        for (int j = 0; j < s->n_origins; j++)
            for (int i = 0; i < p->n; i++)
                if (step[i] < 0 && !strcmp(p->nodes[i].name, s->origins[j])) {
                    step[i] = k;
                    last[i] = j == s->n_origins - 1;
                    break;
                }
    }
    size_t cap = 1;
    for (int i = 0; i < p->n; i++) {
        const pr_prec_node *q = &p->nodes[i];
        cap += strlen(q->name) + strlen(q->op_type) + strlen(q->rules) +
               (q->reason ? strlen(q->reason) : 0) + 400;
    }
    char *buf = malloc(cap), *w = buf;
    if (!buf) {
        free(step);
        free(last);
        free(producer);
        return pr_errf(err, PRECIS_ERR_OOM, "out of memory");
    }
    precis_status st = PRECIS_OK;
    int unmet = 0;
    char first[1024] = "";
    for (int i = 0; i < p->n; i++) {
        const pr_prec_node *q = &p->nodes[i];
        pr_dtype c = PRECIS_UNDEFINED, o = PRECIS_UNDEFINED, acc = PRECIS_UNDEFINED;
        int in_kernel = 0;
        char why[600] = "";
        if (step[i] >= 0) {
            const pr_node *n = &g->nodes[e->steps[step[i]].node];
            c = compute_of(g, n);
            /* Attention kernels compute scores and softmax in float32 */
            if (n->op == PR_OP_Attention && !strcmp(q->op_type, "Softmax") && pr_prec_is_float(c))
                c = PRECIS_FLOAT32;
            acc = accumulator_of(n, c);
            in_kernel = !last[i];
            int t = pr_node_out(n, 0);
            o = in_kernel || t < 0 ? c : passed_on(g, t, q->req_output);
        }
        bool ok = meets(q->req_compute, c) && meets(q->req_output, o);
        if (!ok) {
            if (q->reason) snprintf(why, sizeof why, "%s", q->reason);
            else if (step[i] < 0) snprintf(why, sizeof why, "folded away at build time");
            else if (in_kernel && q->req_output)
                snprintf(why, sizeof why, "its output stays inside the fused kernel");
            else snprintf(why, sizeof why, "no kernel in the requested type was chosen");
            if (!unmet++) {
                char rq[64] = "";
                if (!meets(q->req_compute, c))
                    snprintf(rq, sizeof rq, "compute %s, runs %s", pr_prec_type_name(q->req_compute),
                             c ? pr_prec_type_name(c) : "nothing");
                else
                    snprintf(rq, sizeof rq, "output %s, passes on %s", pr_prec_type_name(q->req_output),
                             o ? pr_prec_type_name(o) : "nothing");
                snprintf(first, sizeof first, "node '%s' (%s): requested %s: %s", q->name,
                         q->op_type, rq, why);
            }
        }
        put_clean(&w, q->name);
        w += sprintf(w, "\t");
        put_clean(&w, q->op_type);
        w += sprintf(w, "\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t", step[i], (int)q->req_compute,
                     (int)q->req_output, (int)c, (int)o, (int)acc, in_kernel, ok ? 1 : 0);
        put_clean(&w, q->rules);
        *w++ = '\t';
        put_clean(&w, why);
        *w++ = '\t';
        if (step[i] >= 0) put_scales(&w, g, producer, &g->nodes[e->steps[step[i]].node]);
        *w++ = '\n';
    }
    *w = 0;
    if (strict && unmet)
        st = pr_errf(err, PRECIS_ERR_UNSUPPORTED, "--strict: %s%s", first,
                     unmet > 1 ? " (and more: build without --strict and see `precis inspect`)"
                               : "");
    free(step);
    free(last);
    free(producer);
    if (!st) {
        const char *v = pr_arena_strdup(g->arena, buf);
        pr_kv *kv = v ? pr_arena_alloc(g->arena, (size_t)(g->n_metadata + 1) * sizeof *kv) : NULL;
        if (!kv) {
            st = pr_errf(err, PRECIS_ERR_OOM, "out of memory");
        } else {
            if (g->n_metadata) memcpy(kv, g->metadata, (size_t)g->n_metadata * sizeof *kv);
            kv[g->n_metadata].key = NODES_KEY;
            kv[g->n_metadata].value = v;
            g->metadata = kv;
            g->n_metadata++;
        }
    }
    free(buf);
    return st ? st : pr_prec_report_parse(e, err);
}

int precis_engine_num_nodes(const precis_engine *e) { return e ? e->n_nodes : 0; }

precis_status precis_engine_node(const precis_engine *e, int i, precis_node_info *out) {
    if (!e || !out || i < 0 || i >= e->n_nodes) return PRECIS_ERR_INVALID_ARG;
    *out = e->nodes[i];
    return PRECIS_OK;
}
