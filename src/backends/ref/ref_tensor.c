/* Reference kernels for the 'tensor' family (see ops.inc). STUB: to be implemented. */
#include "backends/ref/ref.h"

precis_status ref_Constant(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Reshape(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Flatten(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Transpose(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Squeeze(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Unsqueeze(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Concat(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Split(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Slice(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Gather(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_GatherElements(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_GatherND(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ScatterElements(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ScatterND(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Expand(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Shape(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Size(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_ConstantOfShape(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Range(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Tile(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Pad(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Resize(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Upsample(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_DepthToSpace(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_SpaceToDepth(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_OneHot(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_EyeLike(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_Trilu(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status ref_NonZero(pr_kernel *k) { return pr_kernelf(k, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
