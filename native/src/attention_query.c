/*
 * The pieces of attention for one query row at a time, shared by the forward pass's blocks
 * (attention.c) and decode steps (attention_decode.c): masking and softmax of a score row, the
 * head-dimension tail of a score, and the scores and values of a decode step's queries. One
 * definition of each, so a query sums the same way on every path (see attention.c's header).
 */
#include <math.h>
#include <stdlib.h>

#include "attention_query.h"
#include "gemm.h"
#include "reduce.h"
#include "vecmath.h"

/*
 * total + Σ q[d]·k[d] for d in [from, to), one FMA at a time in order: the head-dimension tail
 * of a score, shared by decode_scores and block_scores so that both round it alike (kept out of
 * the vectorizer, which would otherwise treat the inlined copies differently).
 */
__attribute__((noinline, optimize("no-tree-vectorize"))) float
dot_tail(float total, const float *q, const float *k, int64_t from, int64_t to) {
  for (int64_t d = from; d < to; d++) total = __builtin_fmaf(q[d], k[d], total);
  return total;
}

/*
 * Software prefetching for a decode step's cache, which streams from memory (30 layers of a
 * batch-16 cache exceed the last-level cache) read as a kv head's slice of every row, which the
 * hardware prefetchers follow poorly. While a task computes one sequence it streams the next
 * one's keys and values into L2 (`stream`, advanced every block of keys); a task's first
 * sequence has none before it, so its first kv head fetches whole rows (`prefetch_width`
 * floats) two key blocks or VALUE_PREFETCH_KEYS keys ahead. Same sums; only timing changes.
 */
#define VALUE_PREFETCH_KEYS 16

/*
 * scores[g][j] = scale·q_g·k_j for `queries` queries of one kv head (decode steps; the query
 * heads of a grouped-query group, `dim` floats apart), VECTOR_WIDTH keys at a time: one
 * accumulator vector per key along the head dimension, then all of their horizontal sums in
 * one reduction tree (vsum_rows). Keys are read in place from the cache, each block of keys
 * once for the whole group (it stays in L1 while the group's queries use it: read once per
 * query head, the keys and values were most of a batch-16 decode step's L2 traffic). Float
 * accumulation, as in the prefill path's gemm_small, so decoding and a full forward round
 * alike; each query's sums are the same whatever the group.
 */
void decode_scores(const float *query, int queries, const float *key, int64_t key_stride,
                          int64_t keys, int64_t dim, float scale, float *scores,
                          int64_t score_stride, int64_t prefetch_width,
                          prefetch_stream *stream) {
  int64_t full_dim = dim / VECTOR_WIDTH * VECTOR_WIDTH;
  for (int64_t j0 = 0; j0 < keys; j0 += VECTOR_WIDTH) {
    int count = keys - j0 < VECTOR_WIDTH ? (int)(keys - j0) : VECTOR_WIDTH;
    stream_advance(stream);
    for (int i = 0; i < VECTOR_WIDTH && j0 + 2 * VECTOR_WIDTH + i < keys; i++) {
      for (int64_t d = 0; d < prefetch_width; d += LINE_FLOATS)
        __builtin_prefetch(key + (j0 + 2 * VECTOR_WIDTH + i) * key_stride + d, 0, 2);
    }
    for (int g = 0; g < queries; g++) {
      const float *q_row = query + g * dim;
      vfloat sums[VECTOR_WIDTH] = {{0}};
      for (int64_t d = 0; d < full_dim; d += VECTOR_WIDTH) {
        vfloat q = vload(q_row + d);
#pragma GCC unroll 16
        for (int i = 0; i < VECTOR_WIDTH; i++) {
          if (i >= count) break;
          sums[i] += q * vload(key + (j0 + i) * key_stride + d);
        }
      }
      float totals[VECTOR_WIDTH];
      vstore(totals, vsum_rows(sums));
      for (int i = 0; i < count; i++) {
        float total = totals[i];
        if (full_dim < dim) total = dot_tail(total, q_row, key + (j0 + i) * key_stride, full_dim, dim);
        scores[g * score_stride + j0 + i] = scale * total;
      }
    }
  }
}

/*
 * output_g[d] = Σ_j probabilities_g[j]·v_j[d] for `queries` queries of one kv head (decode
 * steps; probability rows `probability_stride` apart, outputs `output_stride` apart):
 * gemm_small's order (one multiply-add chain over the keys per entry, the last columns by
 * gemm_small itself), but all of a head's vectors at once, four independent chains where
 * gemm_small's one-row block keeps two (one row's chains are latency-bound), and each value row
 * loaded once for up to VALUE_HEADS queries.
 */
#define VALUE_VECTORS 4
#define VALUE_HEADS 4
void decode_values(const float *probabilities, int64_t probability_stride, int queries,
                          const float *value, int64_t value_stride, int64_t keys, int64_t dim,
                          float *output, int64_t output_stride, int64_t prefetch_width,
                          prefetch_stream *stream) {
  int64_t full_dim = dim / VECTOR_WIDTH * VECTOR_WIDTH;
  for (int g0 = 0; g0 < queries; g0 += VALUE_HEADS) {
    int heads = queries - g0 < VALUE_HEADS ? queries - g0 : VALUE_HEADS;
    const float *p = probabilities + g0 * probability_stride;
    for (int64_t d0 = 0; d0 < full_dim; d0 += VALUE_VECTORS * VECTOR_WIDTH) {
      int64_t remaining = (full_dim - d0) / VECTOR_WIDTH;
      int vectors = remaining < VALUE_VECTORS ? (int)remaining : VALUE_VECTORS;
      vfloat sums[VALUE_HEADS][VALUE_VECTORS] = {{{0}}};
      for (int64_t j = 0; j < keys; j++) {
        const float *row = value + j * value_stride + d0;
        if (j % VECTOR_WIDTH == 0) stream_advance(stream);
        if (d0 == 0 && j + VALUE_PREFETCH_KEYS < keys) {
          for (int64_t v = 0; v < prefetch_width; v += LINE_FLOATS)
            __builtin_prefetch(row + VALUE_PREFETCH_KEYS * value_stride + v, 0, 2);
        }
        vfloat values[VALUE_VECTORS] = {{0}};
#pragma GCC unroll 4
        for (int v = 0; v < VALUE_VECTORS; v++) {
          if (v >= vectors) break;
          values[v] = vload(row + v * VECTOR_WIDTH);
        }
#pragma GCC unroll 4
        for (int g = 0; g < VALUE_HEADS; g++) {
          if (g >= heads) break;
          vfloat weight = vbroadcast(p[g * probability_stride + j]);
#pragma GCC unroll 4
          for (int v = 0; v < VALUE_VECTORS; v++) {
            if (v >= vectors) break;
            sums[g][v] += weight * values[v];
          }
        }
      }
      for (int g = 0; g < heads; g++) {
        for (int v = 0; v < vectors; v++)
          vstore(output + (g0 + g) * output_stride + d0 + v * VECTOR_WIDTH, sums[g][v]);
      }
    }
  }
  if (full_dim < dim) {
    for (int g = 0; g < queries; g++) {
      small_gemm tail = {.rows = 1, .columns = dim - full_dim, .depth = keys,
                         .a = probabilities + g * probability_stride, .a_row_stride = keys,
                         .a_depth_stride = 1, .b = value + full_dim, .b_stride = value_stride,
                         .c = output + g * output_stride + full_dim, .c_stride = dim,
                         .alpha = 1.0f, .accumulate = false};
      gemm_small(&tail);
    }
  }
}
