/* Which uint8 tensors the CUDA backend stores biased (q - 128, cuda_qbias.h):
 * pr_cu_u8_biased on small hand-built int8 plan graphs. A graph-only
 * decision (the impls' supports()), so this runs without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "../unit/check.h"
#include "../unit/tnode.h"

#include "backends/cuda/cuda_qbias.h"

static pr_err e;

/* A rank-4 tensor [2, c, 8, 8] of dtype dt with flags. */
static int tensor(pr_graph *g, const char *name, pr_dtype dt, int64_t c, uint32_t flags) {
    int t = pr_graph_get_tensor(g, name, &e);
    pr_tensor *x = &g->tensors[t];
    x->dtype = dt;
    x->rank = 4;
    x->dims[0] = 2;
    x->dims[1] = c;
    x->dims[2] = x->dims[3] = 8;
    x->flags = flags;
    return t;
}

/* An int8 weight [16, cin, k, k] with its float32 scales. */
static int weight(pr_graph *g, const char *name, int64_t cin, int64_t k, int *ws) {
    int w = tensor(g, name, PRECIS_INT8, 16, PR_T_INIT);
    g->tensors[w].dims[0] = 16;
    g->tensors[w].dims[1] = cin;
    g->tensors[w].dims[2] = g->tensors[w].dims[3] = k;
    char sn[32];
    snprintf(sn, sizeof sn, "%s_s", name);
    *ws = tensor(g, sn, PRECIS_FLOAT32, 16, PR_T_INIT);
    g->tensors[*ws].rank = 1;
    g->tensors[*ws].dims[0] = 16;
    return w;
}

/* A node of op with inputs in (-1: omitted) and output y; attrs from t (or none). */
static int node(pr_graph *g, pr_op op, const char *type, const int *in, int n_in, int y,
                const tnode *t) {
    int ni = pr_graph_add_node(g, n_in, 1, 0, &e);
    pr_node *n = &g->nodes[ni];
    n->name = type;
    n->op_type = type;
    n->domain = op == PR_OP_QConv || op == PR_OP_QPool ? PR_FUSED_DOMAIN : "";
    n->op = op;
    n->opset = 13;
    if (t) {
        n->attrs = t->node.attrs;
        n->n_attrs = t->node.n_attrs;
    }
    for (int i = 0; i < n_in; i++) n->inputs[i] = in[i];
    n->outputs[0] = y;
    g->tensors[y].producer = ni;
    return ni;
}

static int conv(pr_graph *g, const char *wn, int x, int z, int y) {
    int ws, w = weight(g, wn, 16, 1, &ws);
    return node(g, PR_OP_QConv, "QConv", (int[]){x, w, ws, -1, z}, z >= 0 ? 5 : 3, y, NULL);
}

int main(void) {
    const pr_dtype U8 = PRECIS_UINT8;
    tnode dw, mp;
    n_init(&dw, PR_OP_QConv, "QConv", 1);
    n_int(&dw, "group", 16);
    n_init(&mp, PR_OP_MaxPool, "MaxPool", 12);
    n_ints(&mp, "kernel_shape", (int64_t[]){3, 3}, 2);
    pr_graph *g = pr_graph_create();
    /* in (graph input) -A-> t1 -B-> t2 -MaxPool-> t3 -C-> t4 -dw E-> t5 -F(+Z t1)-> out;
     * A's t1 also read by F as Z; G -> t6 read by a QPool; H -> t7 read by two pools */
    int in = tensor(g, "in", U8, 16, PR_T_INPUT), t1 = tensor(g, "t1", U8, 16, 0),
        t2 = tensor(g, "t2", U8, 16, 0), t3 = tensor(g, "t3", U8, 16, 0),
        t4 = tensor(g, "t4", U8, 16, 0), t5 = tensor(g, "t5", U8, 16, 0),
        out = tensor(g, "out", U8, 16, PR_T_OUTPUT), t6 = tensor(g, "t6", U8, 16, 0),
        p6 = tensor(g, "p6", U8, 16, PR_T_OUTPUT), t7 = tensor(g, "t7", U8, 16, 0),
        t8 = tensor(g, "t8", U8, 16, 0), t9 = tensor(g, "t9", U8, 16, 0),
        o9 = tensor(g, "o9", PRECIS_INT8, 16, PR_T_OUTPUT),
        i8 = tensor(g, "i8", PRECIS_INT8, 16, 0),
        o8 = tensor(g, "o8", PRECIS_INT8, 16, PR_T_OUTPUT);
    conv(g, "wa", in, -1, t1);
    conv(g, "wb", t1, -1, t2);
    node(g, PR_OP_MaxPool, "MaxPool", (int[]){t2}, 1, t3, &mp);
    conv(g, "wc", t3, -1, t4);
    int ws, w = weight(g, "we", 1, 3, &ws);
    node(g, PR_OP_QConv, "QConv", (int[]){t4, w, ws}, 3, t5, &dw);
    conv(g, "wf", t5, t1, out);
    conv(g, "wg", in, -1, t6);
    tnode gp;
    n_init(&gp, PR_OP_QPool, "QPool", 1);
    n_str(&gp, "kind", "GlobalAveragePool");
    node(g, PR_OP_QPool, "QPool", (int[]){t6}, 1, p6, &gp);
    conv(g, "wh", in, -1, t7); /* a pool of a pool: not passed on */
    node(g, PR_OP_MaxPool, "MaxPool", (int[]){t7}, 1, t8, &mp);
    node(g, PR_OP_MaxPool, "MaxPool", (int[]){t8}, 1, t9, &mp);
    conv(g, "wi", t9, -1, o9);
    conv(g, "wj", in, -1, i8); /* int8: never */
    conv(g, "wk", i8, -1, o8);
    CHECK(!pr_cu_u8_biased(g, in)); /* graph input */
    CHECK(pr_cu_u8_biased(g, t1));  /* conv -> conv (X) and conv (Z) */
    CHECK(pr_cu_u8_biased(g, t2));  /* conv -> MaxPool -> conv: passed on */
    CHECK(pr_cu_u8_biased(g, t3));
    CHECK(!pr_cu_u8_biased(g, t4)); /* read by the depthwise conv */
    CHECK(pr_cu_u8_biased(g, t5));  /* written by the depthwise conv, read by a GEMM */
    CHECK(!pr_cu_u8_biased(g, out)); /* graph output */
    CHECK(!pr_cu_u8_biased(g, t6)); /* read by a QPool */
    CHECK(!pr_cu_u8_biased(g, t7)); /* MaxPool whose output a MaxPool reads */
    CHECK(!pr_cu_u8_biased(g, t8));
    CHECK(!pr_cu_u8_biased(g, t9)); /* made by a pool of a pool */
    CHECK(!pr_cu_u8_biased(g, i8));
    setenv("PRECIS_CUDA_U8_BIAS", "0", 1);
    CHECK(!pr_cu_u8_biased(g, t1));
    unsetenv("PRECIS_CUDA_U8_BIAS");
    pr_graph_destroy(g);
    return check_report("test_cuda_qbias");
}
