/* TEMPORARY (lead): weak stand-in until onnx_export.c lands. */
#include "onnx/onnx_export.h"
__attribute__((weak)) precis_status pr_onnx_save(const pr_graph *g, const char *path, pr_err *e) {
    (void)g;
    return pr_errf(e, PRECIS_ERR_UNSUPPORTED, "ONNX export not built yet (%s)", path);
}
