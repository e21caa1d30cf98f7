/* Shape inference for the 'conv' family (see ops.inc). STUB: to be implemented. */
#include "ir/infer.h"

precis_status pr_infer_Conv(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ConvTranspose(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ConvInteger(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_QLinearConv(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_MaxPool(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_AveragePool(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_GlobalAveragePool(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_GlobalMaxPool(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_LpPool(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_GlobalLpPool(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_BatchNormalization(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_InstanceNormalization(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_LayerNormalization(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_LpNormalization(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_LRN(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
