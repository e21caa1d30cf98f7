/* Reference kernels for the 'conv' family (see ops.inc). STUB: to be implemented. */
#include "backends/ref/ref.h"

precis_status ref_Conv(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ConvTranspose(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ConvInteger(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_QLinearConv(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_MaxPool(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_AveragePool(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_GlobalAveragePool(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_GlobalMaxPool(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_LpPool(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_GlobalLpPool(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_BatchNormalization(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_InstanceNormalization(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_LayerNormalization(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_LpNormalization(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_LRN(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
