/* libFuzzer target: ONNX model decoding and import from memory. External
 * data is off (no base directory), so the fuzzer never touches files. */
#include <stddef.h>
#include <stdint.h>

#include "onnx/onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pr_err e = {0};
    pr_graph *g = NULL;
    precis_status st = pr_onnx_load_memory(data, size, NULL, &g, &e);
    /* invariants: success <=> graph; failure => one-line message */
    if ((st == PRECIS_OK) != (g != NULL)) __builtin_trap();
    if (st != PRECIS_OK && (!e.msg[0] || e.status != st)) __builtin_trap();
    for (const char *p = e.msg; *p; p++)
        if (*p == '\n') __builtin_trap();
    if (g) {
        /* touch what consumers read: producers and data sizes */
        for (int t = 0; t < g->n_tensors; t++) {
            const pr_tensor *pt = &g->tensors[t];
            if (pt->producer >= g->n_nodes) __builtin_trap();
            if ((pt->flags & PR_T_INIT) && pt->nbytes) {
                volatile const unsigned char *d = pt->data;
                (void)d[0];
                (void)d[pt->nbytes - 1];
            }
        }
        for (int n = 0; n < g->n_nodes; n++) {
            const pr_node *nd = &g->nodes[n];
            for (int i = 0; i < nd->n_inputs; i++)
                if (nd->inputs[i] >= g->n_tensors) __builtin_trap();
            for (int i = 0; i < nd->n_outputs; i++)
                if (nd->outputs[i] >= 0 && g->tensors[nd->outputs[i]].producer != n)
                    __builtin_trap();
        }
    }
    pr_graph_destroy(g);
    return 0;
}
