/* fuse_attention: scaled dot-product attention -> Attention (ops.inc)
 *
 *   MatMul / FusedMatMul(A, B)      scores; FusedMatMul with alpha only, or
 *                                   with a bias or a residual Z (not both)
 *                                   that then is the mask
 *   -> Add(scores, M)               optional (either order): M any float32
 *                                   tensor, a constant too (Attention
 *                                   broadcasts it exactly as Add does)
 *   -> Softmax over the last axis   opset >= 13: axis -1 (or rank - 1);
 *                                   before 13 the 2-D coercion at axis
 *                                   rank - 1, which normalises the same rows
 *   -> MatMul(P, V)
 * with every intermediate private to the next node, becomes
 * Attention(Q = A, K, V, M) with scale = alpha. The graph cannot tell which
 * tensor is "the" K, so K := B with k_transposed = 1 ([..., D, Sk]), except
 * when B comes privately from a Transpose that moved its input's last axis
 * to position rank - 2 (an element-wise transpose making K^T, e.g. BERT
 * exports' perm [0, 2, 3, 1] and SVTR's [0, 1, 3, 2]): that Transpose then
 * keeps the last axis in place instead (row copies) and writes K itself,
 * k_transposed = 0; when its new perm is the identity it is dropped and the
 * Attention reads its input.
 */
#include <string.h>

#include "passes/graph_edit.h"
#include "passes/pass.h"
#include "passes/prec_req.h"

static bool is_op(const pr_graph *g, int ni, pr_op op, const char *domain) {
    return ni >= 0 && !pr_node_dead(&g->nodes[ni]) && g->nodes[ni].op == op &&
           !strcmp(g->nodes[ni].domain, domain) && g->nodes[ni].n_outputs == 1;
}

/* A float32 tensor of rank >= 2. */
static bool f32_rank2(const pr_graph *g, int t) {
    return pr_is_f32(g, t) && g->tensors[t].rank >= 2;
}

/* Does Softmax node n normalise the last axis of its rank-r input? */
static bool softmax_last_axis(const pr_node *n, int r) {
    bool old = n->opset < 13;
    int64_t ax = pr_attr_int(n, "axis", old ? 1 : -1);
    if (ax < 0) ax += r;
    return r >= 2 && ax == r - 1;
}

/* Is node ni a product of two activations with nothing but a scale (and
 * perhaps a mask in bias or Z)? Sets *alpha and *mask (-1: none). */
static bool scores_node(const pr_graph *g, int ni, float *alpha, int *mask) {
    const pr_node *n = &g->nodes[ni];
    *alpha = 1.0f;
    *mask = -1;
    if (is_op(g, ni, PR_OP_MatMul, "")) {
        if (n->n_inputs != 2) return false;
    } else if (is_op(g, ni, PR_OP_FusedMatMul, PR_FUSED_DOMAIN)) {
        pr_act a1, a2;
        if (!pr_act_from_node(n, "act", &a1) || !pr_act_from_node(n, "act2", &a2) ||
            a1.kind != PR_ACT_NONE || a2.kind != PR_ACT_NONE || pr_attr_int(n, "transA", 0) ||
            pr_attr_int(n, "transB", 0))
            return false;
        int b = pr_node_in(n, 2), z = pr_node_in(n, 3);
        if (b >= 0 && z >= 0) return false;
        *mask = b >= 0 ? b : z;
        if (*mask >= 0 && !pr_is_f32(g, *mask)) return false;
        *alpha = pr_attr_float(n, "alpha", 1.0f);
    } else {
        return false;
    }
    int a = n->inputs[0], b = n->inputs[1];
    return f32_rank2(g, a) && f32_rank2(g, b) && f32_rank2(g, n->outputs[0]);
}

/* A private Transpose producing B (input of node mm) that moved its input's
 * last axis to rank - 2: its index, and in perm2 the perm that writes K
 * instead (last two output axes swapped); -1 otherwise. */
static int kt_transpose(const pr_graph *g, const pr_uses *u, int mm, int b, int64_t *perm2) {
    int p = pr_producer(g, b);
    if (!is_op(g, p, PR_OP_Transpose, "") || pr_single_consumer(g, u, b) != mm) return -1;
    const pr_node *n = &g->nodes[p];
    int r = g->tensors[b].rank;
    if (r < 2 || !f32_rank2(g, n->inputs[0]) || g->tensors[n->inputs[0]].rank != r) return -1;
    const int64_t *perm;
    int np = pr_attr_ints(n, "perm", &perm);
    if (np >= 0 && np != r) return -1;
    for (int i = 0; i < r; i++) perm2[i] = np < 0 ? r - 1 - i : perm[i];
    if (perm2[r - 2] != r - 1) return -1;
    perm2[r - 2] = perm2[r - 1];
    perm2[r - 1] = r - 1;
    return p;
}

typedef struct amatch {
    int mm, add, sm, pv; /* scores node, mask Add (-1), Softmax, MatMul(P, V) */
    int q, k, v, mask;
    float scale;
    int tr;              /* Transpose making K^T (-1 none) */
    int64_t perm2[PR_MAX_RANK];
    bool drop_tr;        /* perm2 is the identity: read the Transpose's input */
} amatch;

/* The pattern around Softmax node si. */
static bool match(const pr_graph *g, const pr_uses *u, int si, amatch *m) {
    const pr_node *s = &g->nodes[si];
    if (!is_op(g, si, PR_OP_Softmax, "") || s->n_inputs != 1) return false;
    int x = s->inputs[0], p = s->outputs[0];
    if (!f32_rank2(g, x) || !softmax_last_axis(s, g->tensors[x].rank)) return false;
    memset(m, 0, sizeof *m);
    m->sm = si;
    m->add = -1;
    m->tr = -1;
    int px = pr_producer(g, x);
    if (px < 0 || pr_single_consumer(g, u, x) != si) return false;
    int scores = x;
    m->mask = -1;
    if (is_op(g, px, PR_OP_Add, "") && g->nodes[px].n_inputs == 2) {
        m->add = px;
        scores = -1;
        for (int i = 0; i < 2 && scores < 0; i++) {
            int c = g->nodes[px].inputs[i], o = g->nodes[px].inputs[1 - i];
            int pc = pr_producer(g, c);
            float al;
            int zm;
            if (c == o || pc < 0 || pr_single_consumer(g, u, c) != px || !pr_is_f32(g, o) ||
                !scores_node(g, pc, &al, &zm) || zm >= 0)
                continue;
            scores = c;
            m->mask = o;
        }
        if (scores < 0) return false;
    }
    m->mm = pr_producer(g, scores);
    int zmask;
    if (m->mm < 0 || !scores_node(g, m->mm, &m->scale, &zmask)) return false;
    if (zmask >= 0) {
        if (m->add >= 0) return false;
        m->mask = zmask;
    }
    m->pv = pr_single_consumer(g, u, p);
    if (!is_op(g, m->pv, PR_OP_MatMul, "") || g->nodes[m->pv].n_inputs != 2 ||
        g->nodes[m->pv].inputs[0] != p)
        return false;
    m->v = g->nodes[m->pv].inputs[1];
    if (m->v == p || !f32_rank2(g, m->v) || !pr_is_f32(g, g->nodes[m->pv].outputs[0])) return false;
    m->q = g->nodes[m->mm].inputs[0];
    m->k = g->nodes[m->mm].inputs[1];
    m->tr = kt_transpose(g, u, m->mm, m->k, m->perm2);
    if (m->tr >= 0) {
        int r = g->tensors[m->k].rank;
        m->drop_tr = true;
        for (int i = 0; i < r; i++) m->drop_tr = m->drop_tr && m->perm2[i] == i;
        if (m->drop_tr) m->k = g->nodes[m->tr].inputs[0];
    }
    return true;
}

/* The nodes the scores MatMul absorbs; returns how many. */
static int absorbed(const amatch *m, int rest[4]) {
    int nr = 0;
    if (m->drop_tr) rest[nr++] = m->tr;
    if (m->add >= 0) rest[nr++] = m->add;
    rest[nr++] = m->sm;
    rest[nr++] = m->pv;
    return nr;
}

static precis_status fuse(pr_graph *g, pr_uses *u, const amatch *m, const int *rest, int nr,
                          pr_err *e) {
    precis_status st;
    int ni = m->mm;
    if (m->tr >= 0 && !m->drop_tr) { /* the Transpose now writes K */
        pr_tensor *kt = &g->tensors[m->k];
        int r = kt->rank;
        if ((st = pr_node_set_ints(g, m->tr, "perm", m->perm2, r, e))) return st;
        int64_t d = kt->dims[r - 1];
        kt->dims[r - 1] = kt->dims[r - 2];
        kt->dims[r - 2] = d;
    }
    pr_node_retype(g, ni, PR_OP_Attention, 1);
    pr_node_clear_attrs(g, ni);
    if ((st = pr_node_set_float(g, ni, "scale", m->scale, e))) return st;
    if ((st = pr_node_set_int(g, ni, "k_transposed", m->tr >= 0 ? 0 : 1, e))) return st;
    if ((st = pr_node_set_input(g, u, ni, 3, m->mask, e)) ||
        (st = pr_node_set_input(g, u, ni, 1, m->k, e)) ||
        (st = pr_node_set_input(g, u, ni, 2, m->v, e)))
        return st;
    if (m->mask < 0) g->nodes[ni].n_inputs = 3;
    return pr_fuse_absorb(g, u, ni, rest, nr, m->pv, e) < 0 ? PRECIS_ERR_OOM : PRECIS_OK;
}

static precis_status attn_run(pr_graph *g, pr_pass_ctx *pc) {
    pr_uses u;
    precis_status st = pr_uses_build(g, &u, pc->err);
    if (st) return st;
    for (int ni = 0; ni < g->n_nodes && !st; ni++) {
        amatch m;
        if (!match(g, &u, ni, &m)) continue;
        int rest[4], nr = absorbed(&m, rest);
        /* the kernel computes scores and softmax in float32 (k_attention.c) */
        if (!pr_prec_fusable_f32(g, m.mm, rest, nr, m.pv, m.sm)) continue;
        if (!(st = fuse(g, &u, &m, rest, nr, pc->err))) pc->changes++;
    }
    pr_uses_free(&u);
    if (st) return st;
    return pr_graph_compact(g, pc->err);
}

const pr_pass pr_pass_fuse_attention = {"fuse_attention", attn_run};
