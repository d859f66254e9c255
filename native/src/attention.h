/* Geometry shared by the attention forward (attention.c) and backward (attention_backward.c). */
#ifndef TEAMTR_ATTENTION_H
#define TEAMTR_ATTENTION_H

#include <stdint.h>

#include "kernels.h"
#include "simd.h"

/* Query rows handled together: the score block [QUERY_BLOCK × keys] stays in L1/L2. */
#define QUERY_BLOCK 32

static inline int64_t round_up_to_vector(int64_t count) {
  return (count + VECTOR_WIDTH - 1) / VECTOR_WIDTH * VECTOR_WIDTH;
}

/* Last key slot query i may see, plus one (0 = none). */
static inline int64_t visible_keys(const attention_arguments *a, int64_t i) {
  int64_t last = a->query_start + i;
  if (last > a->key_length - 1) last = a->key_length - 1;
  return last + 1;
}

static inline int64_t query_offset(const attention_arguments *a, int64_t b, int64_t i, int64_t h) {
  return ((b * a->query_length + i) * a->heads + h) * a->head_dim;
}

static inline int64_t key_offset(const attention_arguments *a, int64_t b, int64_t j,
                                 int64_t kv_head) {
  return ((b * a->key_capacity + j) * a->kv_heads + kv_head) * a->head_dim;
}

static inline int64_t probability_offset(const attention_arguments *a, int64_t b, int64_t h,
                                         int64_t i) {
  return ((b * a->heads + h) * a->query_length + i) * a->key_length;
}

/* valid[j] = 1 if key slot j of batch b is not padding, for j < count. */
static inline void key_validity(const attention_arguments *a, int64_t b, int64_t count,
                                float *valid) {
  for (int64_t j = 0; j < count; j++) {
    valid[j] = a->key_mask == NULL || a->key_mask[b * a->key_capacity + j] != 0.0f ? 1.0f : 0.0f;
  }
}

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
