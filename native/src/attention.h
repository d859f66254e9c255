/* Geometry shared by the attention forward (attention.c) and backward (attention_backward.c). */
#ifndef TEAMTR_ATTENTION_H
#define TEAMTR_ATTENTION_H

#include <stdint.h>

#include "kernels.h"
#include "simd.h"
#include "transpose.h"

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

#endif
