/* Copying row-major blocks into column-major order, through in-register tile transposes. */
#ifndef TEAMTR_TRANSPOSE_H
#define TEAMTR_TRANSPOSE_H

#include <stdint.h>

#include "simd.h"

/*
 * target[d·stride + j] = source[j·source_stride + d] for j < count, d < dim, zero-padded to
 * stride (a multiple of VECTOR_WIDTH). Full tiles are transposed in registers; ragged edges
 * (dim not a multiple of the vector width) element by element.
 */
static inline void transpose_rows(const float *source, int64_t source_stride, int64_t count,
                                  int64_t dim, float *target, int64_t stride) {
  int64_t full_dim = dim / VECTOR_WIDTH * VECTOR_WIDTH;
  for (int64_t j0 = 0; j0 < stride; j0 += VECTOR_WIDTH) {
    for (int64_t d0 = 0; d0 < full_dim; d0 += VECTOR_WIDTH) {
      vfloat tile[VECTOR_WIDTH];
      for (int r = 0; r < VECTOR_WIDTH; r++) {
        tile[r] = j0 + r < count ? vload(source + (j0 + r) * source_stride + d0) : (vfloat){0};
      }
      vtranspose(tile);
      for (int r = 0; r < VECTOR_WIDTH; r++) vstore(target + (d0 + r) * stride + j0, tile[r]);
    }
  }
  for (int64_t d = full_dim; d < dim; d++) {
    for (int64_t j = 0; j < stride; j++) {
      target[d * stride + j] = j < count ? source[j * source_stride + d] : 0.0f;
    }
  }
}

#endif
