/* Shape inference for the 'linalg' family (see ops.inc). STUB: to be implemented. */
#include "ir/infer.h"

precis_status pr_infer_MatMul(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Gemm(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_MatMulInteger(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_QLinearMatMul(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Einsum(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Softmax(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_LogSoftmax(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Hardmax(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceMean(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceSum(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceMax(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceMin(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceProd(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceL1(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceL2(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceLogSum(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceLogSumExp(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ReduceSumSquare(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ArgMax(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ArgMin(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_CumSum(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_TopK(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
