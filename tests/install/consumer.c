/* Built against an installed precis through pkg-config: the public header and
 * library are all a consumer needs. */
#include <precis/precis.h>
#include <stdio.h>

int main(void) {
    precis_ctx *ctx = precis_ctx_create();
    precis_model *m = NULL;
    precis_status st = precis_model_load(ctx, "/nonexistent/model.onnx", &m);
    int ok = st == PRECIS_ERR_IO && precis_last_error(ctx)[0] != '\0';
    printf("precis %s: load of a missing file -> %d (%s)\n", precis_version(), (int)st,
           precis_last_error(ctx));
    precis_ctx_destroy(ctx);
    return ok ? 0 : 1;
}
