/*
 * Fused causal grouped-query attention, forward. One task per (batch, head, block of 32
 * queries), so even a single sequence spreads over all threads. For each query row a task
 * computes the scores scale·q·k_j against the keys it can see (causal: nothing past the
 * diagonal), masks padding to −∞, takes the softmax, optionally saves the probabilities for
 * backward, and multiplies by V.
 *
 * One summation order for a query whatever else is computed with it: a decode step (one query
 * against the cache) and a scoring pass (the whole sequence at once) give the same bits, so a
 * token's log-prob recorded while sampling equals the one scoring computes. Every loop over keys
 * therefore starts at the sequence's first real key (left padding of a generated batch is
 * skipped, not masked, so key j of a sequence lands in the same lane as in an unpadded pass) and
 * ends at the row's own last visible key; the scores are dot products along the head dimension
 * (decode_scores) and the values a sum over keys (decode_values) for every row. A block of
 * queries used to take Q·Kᵀ and P·V as small GEMMs over a transposed copy of K, which sums in
 * another order.
 *
 * Why fused: the op-by-op version materializes scores and probabilities as
 * [batch, heads, queries, keys] tensors, writes and re-reads them several times (scale, mask,
 * softmax, matmul) and runs the small per-head products one at a time; here the score block
 * of a task lives in cache from QKᵀ to PV. In no-grad mode the probabilities are never written.
 */
#include <math.h>
#include <stdlib.h>

#include "attention.h"
#include "parallel.h"
#include "reduce.h"
#include "vecmath.h"

typedef struct {
  const attention_arguments *a;
  int64_t query_blocks;
} forward_context;

/* Sets row[j] = −∞ where j ≥ limit or valid[j] = 0 and returns the largest remaining entry.
   Written with explicit vectors: the compiler's own max-reduction of this loop stalls. */
static float mask_scores(float *row, int64_t columns, int64_t limit, const float *valid) {
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
static bool softmax_scores(float *row, int64_t columns, int64_t limit, const float *valid) {
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

/*
 * scores[j] = scale·q·k_j for one query (decode steps), VECTOR_WIDTH keys at a time: one
 * accumulator vector per key along the head dimension, then all of their horizontal sums in
 * one reduction tree (vsum_rows). Keys are read in place from the cache; float accumulation,
 * as in the prefill path's gemm_small, so decoding and a full forward round alike.
 */
static void decode_scores(const float *query, const float *key, int64_t key_stride, int64_t keys,
                          int64_t dim, float scale, float *scores) {
  int64_t full_dim = dim / VECTOR_WIDTH * VECTOR_WIDTH;
  for (int64_t j0 = 0; j0 < keys; j0 += VECTOR_WIDTH) {
    int count = keys - j0 < VECTOR_WIDTH ? (int)(keys - j0) : VECTOR_WIDTH;
    vfloat sums[VECTOR_WIDTH] = {{0}};
    for (int64_t d = 0; d < full_dim; d += VECTOR_WIDTH) {
      vfloat q = vload(query + d);
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
      for (int64_t d = full_dim; d < dim; d++) total += query[d] * key[(j0 + i) * key_stride + d];
      scores[j0 + i] = scale * total;
    }
  }
}

/*
 * output[d] = Σ_j probabilities[j]·v_j[d] for one query (decode steps). gemm_small's one-row
 * block would chain every key's multiply-add through the same accumulator (latency-bound);
 * here four keys go to four independent accumulator sets, summed at the end.
 */
#define VALUE_CHUNK (4 * VECTOR_WIDTH)
static void decode_values(const float *probabilities, const float *value, int64_t value_stride,
                          int64_t keys, int64_t dim, float *output) {
  int64_t full_dim = dim / VECTOR_WIDTH * VECTOR_WIDTH;
  for (int64_t d0 = 0; d0 < full_dim; d0 += VALUE_CHUNK) {
    int vectors = full_dim - d0 < VALUE_CHUNK ? (int)((full_dim - d0) / VECTOR_WIDTH) : 4;
    vfloat sums[4][4] = {{{0}}};
    int64_t j = 0;
    for (; j + 4 <= keys; j += 4) {
#pragma GCC unroll 4
      for (int u = 0; u < 4; u++) {
        vfloat weight = vbroadcast(probabilities[j + u]);
        const float *row = value + (j + u) * value_stride + d0;
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
          if (v >= vectors) break;
          sums[u][v] += weight * vload(row + v * VECTOR_WIDTH);
        }
      }
    }
    for (; j < keys; j++) {
      vfloat weight = vbroadcast(probabilities[j]);
      for (int v = 0; v < vectors; v++) {
        sums[0][v] += weight * vload(value + j * value_stride + d0 + v * VECTOR_WIDTH);
      }
    }
    for (int v = 0; v < vectors; v++) {
      vstore(output + d0 + v * VECTOR_WIDTH, (sums[0][v] + sums[1][v]) + (sums[2][v] + sums[3][v]));
    }
  }
  for (int64_t d = full_dim; d < dim; d++) {
    float total = 0.0f;
    for (int64_t j = 0; j < keys; j++) total += probabilities[j] * value[j * value_stride + d];
    output[d] = total;
  }
}

/* Zeroes query row r's output and, when saved, its probabilities. */
static void zero_row(const attention_arguments *a, int64_t b, int64_t h, int64_t i, float *output) {
  for (int64_t d = 0; d < a->head_dim; d++) output[d] = 0.0f;
  if (a->probabilities) {
    float *saved = a->probabilities + probability_offset(a, b, h, i);
    for (int64_t j = 0; j < a->key_length; j++) saved[j] = 0.0f;
  }
}

static void forward_task(void *context, size_t index, int thread) {
  const forward_context *t = context;
  const attention_arguments *a = t->a;
  int64_t block = (int64_t)index % t->query_blocks;
  int64_t h = (int64_t)index / t->query_blocks % a->heads;
  int64_t b = (int64_t)index / t->query_blocks / a->heads;
  int64_t i0 = block * QUERY_BLOCK;
  int64_t rows = a->query_length - i0 < QUERY_BLOCK ? a->query_length - i0 : QUERY_BLOCK;
  int64_t keys = visible_keys(a, i0 + rows - 1), stride = round_up_to_vector(keys);
  int64_t dim = a->head_dim, kv_head = h / (a->heads / a->kv_heads);
  int64_t key_stride = a->kv_heads * dim;
  float *output = a->output + query_offset(a, b, i0, h);
  float *row = pool_scratch(thread, 0, (size_t)(2 * stride + VECTOR_WIDTH) * sizeof(float));
  if (!row) abort();
  float *valid = row + stride + VECTOR_WIDTH;
  key_validity(a, b, keys, valid);
  /* The sequence's first real key: left padding is skipped (see the header). */
  int64_t first = 0;
  while (first < keys && valid[first] == 0.0f) first++;
  const float *query = a->query + query_offset(a, b, i0, h);
  const float *key = a->key + key_offset(a, b, first, kv_head);
  const float *value = a->value + key_offset(a, b, first, kv_head);
  for (int64_t r = 0; r < rows; r++) {
    float *row_output = output + r * a->heads * dim;
    int64_t count = visible_keys(a, i0 + r) - first;
    if (count <= 0) {
      zero_row(a, b, h, i0 + r, row_output);
      continue;
    }
    decode_scores(query + r * a->heads * dim, key, key_stride, count, dim, a->scale, row);
    if (!softmax_scores(row, count, count, valid + first)) {
      zero_row(a, b, h, i0 + r, row_output);
      continue;
    }
    if (a->probabilities) {
      float *saved = a->probabilities + probability_offset(a, b, h, i0 + r);
      for (int64_t j = 0; j < first; j++) saved[j] = 0.0f;
      for (int64_t j = 0; j < count; j++) saved[first + j] = row[j];
      for (int64_t j = first + count; j < a->key_length; j++) saved[j] = 0.0f;
    }
    decode_values(row, value, key_stride, count, dim, row_output);
  }
}

void kernel_attention(const attention_arguments *a) {
  if (a->batch == 0 || a->heads == 0 || a->query_length == 0) return;
  forward_context context = {a, chunk_count(a->query_length, QUERY_BLOCK)};
  double work = (double)a->batch * a->heads * a->query_length * a->key_length * a->head_dim;
  int parallel = work >= 100000.0;
  size_t tasks = (size_t)(a->batch * a->heads * context.query_blocks);
  run_maybe_parallel(tasks, forward_task, &context, parallel);
}
