/* Shape inference for the 'tensor' family (see ops.inc). STUB: to be implemented. */
#include "ir/infer.h"

precis_status pr_infer_Constant(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Reshape(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Flatten(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Transpose(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Squeeze(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Unsqueeze(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Concat(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Split(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Slice(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Gather(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_GatherElements(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_GatherND(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ScatterElements(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ScatterND(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Expand(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Shape(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Size(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_ConstantOfShape(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Range(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Tile(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Pad(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Resize(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Upsample(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_DepthToSpace(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_SpaceToDepth(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_OneHot(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_EyeLike(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_Trilu(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
precis_status pr_infer_NonZero(pr_infer *ic) { return pr_inferf(ic, PRECIS_ERR_UNSUPPORTED, "not implemented"); }
