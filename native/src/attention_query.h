/*
 * One query row's pieces of the attention forward (attention_query.c; the softmax here, inlined
 * where it runs once per row), shared by its blocks (attention.c) and its decode steps
 * (attention_decode.c).
 */
#ifndef TEAMTR_ATTENTION_QUERY_H
#define TEAMTR_ATTENTION_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include <math.h>

#include "attention.h"
#include "prefetch_stream.h"
#include "reduce.h"
#include "vecmath.h"

/* Sets row[j] = −∞ where j ≥ limit or valid[j] = 0 and returns the largest remaining entry.
   Written with explicit vectors: the compiler's own max-reduction of this loop stalls. */
static inline float mask_scores(float *row, int64_t columns, int64_t limit, const float *valid) {
  const vint lane = LANES(LANE_INDEX, 0);
  const vfloat minus_infinity = vbroadcast(-INFINITY);
  vfloat maximum = minus_infinity;
  int64_t j = 0;
  for (; j + VECTOR_WIDTH <= columns; j += VECTOR_WIDTH) {
    vint keep = (lane + (int)j < (int)limit) & (vload(valid + j) != 0.0f);
    vfloat score = vselect(keep, vload(row + j), minus_infinity);
    vstore(row + j, score);
    maximum = vselect(score > maximum, score, maximum);
  }
  float result = vmax(maximum);
  for (; j < columns; j++) {
    float score = j < limit && valid[j] != 0.0f ? row[j] : -INFINITY;
    row[j] = score;
    result = score > result ? score : result;
  }
  return result;
}

/*
 * Masks, exponentiates and normalizes one score row in place (keys j < columns; visible keys
 * j < limit with valid[j] = 1). Returns false when no key is visible (the row is zeroed).
 * The row has room up to the next multiple of VECTOR_WIDTH: the exponentials run over whole
 * vectors (the padding is scratch), since decode rows are short and a scalar remainder of up
 * to 15 exponentials per row cost more than the vector part.
 */
static inline bool softmax_scores(float *row, int64_t columns, int64_t limit, const float *valid) {
  float maximum = mask_scores(row, columns, limit, valid);
  if (maximum == -INFINITY) {
    bool any_valid = false;
    for (int64_t j = 0; j < limit && !any_valid; j++) any_valid = valid[j] != 0.0f;
    if (!any_valid) {
      for (int64_t j = 0; j < columns; j++) row[j] = 0.0f;
      return false;
    }
  }
  int64_t padded = round_up_to_vector(columns);
  for (int64_t j = 0; j < padded; j += VECTOR_WIDTH) {
    vfloat exponentials;
    for (int lane = 0; lane < VECTOR_WIDTH; lane++) exponentials[lane] = fast_expf(row[j + lane] - maximum);
    vstore(row + j, exponentials);
  }
  float inverse = (float)(1.0 / reduce_sum(row, columns));
#pragma omp simd
  for (int64_t j = 0; j < columns; j++) row[j] *= inverse;
  return true;
}

/* total + Σ q[d]·k[d] for d in [from, to), one FMA at a time in order: a score's tail. */
float dot_tail(float total, const float *q, const float *k, int64_t from, int64_t to);

/* scores[g][j] = scale·q_g·k_j for `queries` queries of one kv head, as a decode step sums them. */
void decode_scores(const float *query, int queries, const float *key, int64_t key_stride,
                   int64_t keys, int64_t dim, float scale, float *scores, int64_t score_stride,
                   int64_t prefetch_width, prefetch_stream *stream);

/* output_g = Σ_j probabilities_g[j]·v_j for `queries` queries of one kv head. */
void decode_values(const float *probabilities, int64_t probability_stride, int queries,
                   const float *value, int64_t value_stride, int64_t keys, int64_t dim,
                   float *output, int64_t output_stride, int64_t prefetch_width,
                   prefetch_stream *stream);

/* A decode step without saved probabilities (attention_decode.c). */
void attention_decode_step(const attention_arguments *a, int parallel);

#endif
