/* Private helpers shared by ref_elem.c and ref_elem_cast.c. */
#ifndef PR_BACKENDS_REF_REF_ELEM_H
#define PR_BACKENDS_REF_REF_ELEM_H

#include "backends/ref/ref.h"

/* Store the low bits of v into element i of an integer/bool buffer: C's
 * modular conversion (what numpy's astype does between integer types). */
static inline void pr_store_wrap(void *p, pr_dtype dt, int64_t i, uint64_t v) {
    switch (dt) {
    case PRECIS_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case PRECIS_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PRECIS_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case PRECIS_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case PRECIS_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case PRECIS_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case PRECIS_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case PRECIS_UINT64: ((uint64_t *)p)[i] = v; break;
    case PRECIS_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

#endif
