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
 * starts at the sequence's first real key (left padding of a generated batch is skipped, not
 * masked, so key j of a sequence lands in the same lane as in an unpadded pass); a score is a
 * dot product along the head dimension in lanes reduced by one fixed tree (decode_scores for
 * one query, block_scores four queries × four keys at a time, the same sums); the softmax runs
 * over the row's own visible keys; and P·V is one multiply-add chain over the keys per output
 * entry (gemm_small for a block, decode_values for one query, the same chains). Blocks used to
 * take Q·Kᵀ as a GEMM over a transposed copy of K and decode steps dot products, two orders;
 * the tiled dot products cost blocks more than that GEMM did (see the README's Engine section).
 */
#include <stdlib.h>

#include "attention_query.h"
#include "gemm.h"
#include "parallel.h"
#include "paths.h"

typedef struct {
  const attention_arguments *a;
  int64_t query_blocks;
} forward_context;

/*
 * The block version of decode_scores: scores[r][j] = scale·q_r·k_j for rows r < rows and keys
 * j < keys, summed exactly as decode_scores sums them (lane sums along the head dimension, the
 * vsum_rows tree, then the tail), four queries × four keys at a time so each loaded vector
 * serves four products and one tree reduces sixteen of them. Entries past a row's own visible
 * keys are computed too and never read.
 */
static void block_scores(const float *query, int64_t query_stride, int64_t rows, const float *key,
                         int64_t key_stride, int64_t keys, int64_t dim, float scale,
                         float *scores, int64_t score_stride) {
  int64_t full_dim = dim / VECTOR_WIDTH * VECTOR_WIDTH;
  for (int64_t r0 = 0; r0 < rows; r0 += 4) {
    int row_count = rows - r0 < 4 ? (int)(rows - r0) : 4;
    const float *q[4];
    for (int r = 0; r < 4; r++) q[r] = query + (r0 + (r < row_count ? r : 0)) * query_stride;
    for (int64_t j0 = 0; j0 < keys; j0 += 4) {
      int key_count = keys - j0 < 4 ? (int)(keys - j0) : 4;
      const float *k[4];
      for (int i = 0; i < 4; i++) k[i] = key + (j0 + (i < key_count ? i : 0)) * key_stride;
      vfloat sums[16] = {{0}};
      for (int64_t d = 0; d < full_dim; d += VECTOR_WIDTH) {
        vfloat qv[4], kv[4];
        for (int r = 0; r < 4; r++) qv[r] = vload(q[r] + d);
        for (int i = 0; i < 4; i++) kv[i] = vload(k[i] + d);
        for (int r = 0; r < 4; r++) {
          for (int i = 0; i < 4; i++) sums[r * 4 + i] += qv[r] * kv[i];
        }
      }
      float totals[16];
      for (int group = 0; group < 16; group += VECTOR_WIDTH) vstore(totals + group, vsum_rows(sums + group));
      if (full_dim == dim) {
        /* No tail: a row's scores scaled and stored together (the same products as below). */
        for (int r = 0; r < row_count; r++) {
          quad total;
          memcpy(&total, totals + r * 4, sizeof total);
          total *= scale;
          memcpy(scores + (r0 + r) * score_stride + j0, &total, (size_t)key_count * sizeof(float));
        }
        continue;
      }
      for (int r = 0; r < row_count; r++) {
        for (int i = 0; i < key_count; i++) {
          float total = totals[r * 4 + i];
          if (full_dim < dim) total = dot_tail(total, q[r], k[i], full_dim, dim);
          scores[(r0 + r) * score_stride + j0 + i] = scale * total;
        }
      }
    }
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
  int64_t key_stride = a->kv_heads * dim, query_stride = a->heads * dim;
  float *output = a->output + query_offset(a, b, i0, h);
  float *scores = pool_scratch(thread, 0, (size_t)((QUERY_BLOCK + 1) * stride) * sizeof(float));
  if (!scores) abort();
  float *valid = scores + QUERY_BLOCK * stride;
  key_validity(a, b, keys, valid);
  /* The sequence's first real key: left padding is skipped (see the header). */
  int64_t first = 0;
  while (first < keys && valid[first] == 0.0f) first++;
  const float *query = a->query + query_offset(a, b, i0, h);
  const float *key = a->key + key_offset(a, b, first, kv_head);
  int64_t span = keys - first; /* keys from the first real one to the block's last visible */
  if (span > 0) {
    if (rows == 1)
      decode_scores(query, 1, key, key_stride, span, dim, a->scale, scores, stride, 0, NULL);
    else block_scores(query, query_stride, rows, key, key_stride, span, dim, a->scale, scores, stride);
  }
  for (int64_t r = 0; r < rows; r++) {
    float *row = scores + r * stride;
    int64_t count = visible_keys(a, i0 + r) - first;
    bool any = count > 0 && softmax_scores(row, count, count, valid + first);
    if (!any) count = 0;
    /* P·V runs over the block's span: a row's later entries are zero and add nothing. */
    for (int64_t j = count; j < span; j++) row[j] = 0.0f;
    if (a->probabilities) {
      float *saved = a->probabilities + probability_offset(a, b, h, i0 + r);
      for (int64_t j = 0; j < a->key_length; j++) saved[j] = 0.0f;
      for (int64_t j = 0; j < count; j++) saved[first + j] = row[j];
    }
  }
  if (span <= 0) {
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t d = 0; d < dim; d++) output[r * query_stride + d] = 0.0f;
    }
    return;
  }
  /* Every output entry is one multiply-add chain over the keys in order, whatever the rows. */
  const float *value = a->value + key_offset(a, b, first, kv_head);
  if (rows == 1) {
    decode_values(scores, stride, 1, value, key_stride, span, dim, output, query_stride, 0, NULL);
    return;
  }
  small_gemm product = {.rows = rows, .columns = dim, .depth = span, .a = scores,
                        .a_row_stride = stride, .a_depth_stride = 1,
                        .b = value, .b_stride = key_stride, .c = output, .c_stride = query_stride,
                        .alpha = 1.0f, .accumulate = false};
  gemm_small(&product);
}

void kernel_attention(const attention_arguments *a) {
  if (a->batch == 0 || a->heads == 0 || a->query_length == 0) return;
  forward_context context = {a, chunk_count(a->query_length, QUERY_BLOCK)};
  double work = (double)a->batch * a->heads * a->query_length * a->key_length * a->head_dim;
  int parallel = work >= 100000.0;
  /* Two products per query and key (scores, values), each head_dim multiply-adds. */
  if (a->query_length == 1 && a->probabilities == NULL) {
    path_taken(PATH_ATTENTION_DECODE, 2 * work);
    attention_decode_step(a, parallel);
    return;
  }
  path_taken(PATH_ATTENTION_BLOCKS, 2 * work);
  size_t tasks = (size_t)(a->batch * a->heads * context.query_blocks);
  run_maybe_parallel(tasks, forward_task, &context, parallel);
}
