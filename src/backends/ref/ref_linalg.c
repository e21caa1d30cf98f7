/* Reference kernels for the 'linalg' family (see ops.inc). STUB: to be implemented. */
#include "backends/ref/ref.h"

precis_status ref_MatMul(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Gemm(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_MatMulInteger(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_QLinearMatMul(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Einsum(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Softmax(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_LogSoftmax(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Hardmax(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceMean(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceSum(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceMax(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceMin(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceProd(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceL1(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceL2(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceLogSum(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceLogSumExp(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ReduceSumSquare(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ArgMax(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ArgMin(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_CumSum(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_TopK(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
