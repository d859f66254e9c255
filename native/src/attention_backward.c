/*
 * Fused attention backward. One task per (batch, kv head): the heads that share a kv head
 * accumulate into the same key/value gradients, so they run in one task, which collects
 * dK and dV in a private buffer and adds it to the caller's arrays once at the end (no
 * atomics, no races, and a fixed summation order). For each head and block of queries:
 *   dP = dO·Vᵀ,  dS = scale·P∘(dP − rowsum(P∘dP)),
 *   dQ += dS·K,  dK += dSᵀ·Q,  dV += Pᵀ·dO,
 * reading P from the probabilities saved by the forward pass. Keys past the causal limit of
 * a block are skipped entirely.
 *
 * Why fused: op by op this is five batched products plus softmax backward over full
 * [batch, heads, queries, keys] temporaries; here dP and dS exist only as one cache-sized
 * block per task.
 */
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "gemm.h"
#include "parallel.h"
#include "reduce.h"

typedef struct {
  const attention_arguments *a;
  int64_t keys, stride; /* keys any query can see; padded to whole vectors */
} backward_context;

typedef struct {
  float *transposed_value; /* [dim][stride] */
  float *grad_probability; /* [QUERY_BLOCK][stride]: dP, then dS in place */
  float *grad_key, *grad_value; /* [keys][dim] for this task */
} backward_scratch;

/* dS = scale·P∘(dP − Σ_j P·dP) in place over dP, for one query row. Zero where P = 0. */
static void score_gradient_row(const float *probability, float *grad, int64_t keys,
                               int64_t stride, float scale) {
  /* Entries with P = 0 (masked or future keys) must not contribute, even if dP is not finite. */
#pragma omp simd
  for (int64_t j = 0; j < keys; j++) grad[j] = probability[j] != 0.0f ? grad[j] : 0.0f;
  float center = (float)reduce_dot(probability, grad, keys);
#pragma omp simd
  for (int64_t j = 0; j < keys; j++) {
    grad[j] = probability[j] != 0.0f ? scale * probability[j] * (grad[j] - center) : 0.0f;
  }
  for (int64_t j = keys; j < stride; j++) grad[j] = 0.0f;
}

static void query_block(const attention_arguments *a, int64_t b, int64_t h, int64_t i0,
                        const backward_scratch *s, int64_t stride) {
  int64_t dim = a->head_dim, kv_head = h / (a->heads / a->kv_heads);
  int64_t rows = a->query_length - i0 < QUERY_BLOCK ? a->query_length - i0 : QUERY_BLOCK;
  int64_t keys = visible_keys(a, i0 + rows - 1), key_stride = a->kv_heads * dim;
  if (keys <= 0) return;
  int64_t row_stride = a->heads * dim, padded = round_up_to_vector(keys);
  const float *probability = a->saved_probabilities + probability_offset(a, b, h, i0);
  const float *grad_output = a->grad_output + query_offset(a, b, i0, h);
  const float *query = a->query + query_offset(a, b, i0, h);
  /* dP = dO·Vᵀ over the visible keys */
  small_gemm product = {.rows = rows, .columns = padded, .depth = dim, .a = grad_output,
                        .a_row_stride = row_stride, .a_depth_stride = 1,
                        .b = s->transposed_value, .b_stride = stride,
                        .c = s->grad_probability, .c_stride = stride, .alpha = 1.0f};
  gemm_small(&product);
  for (int64_t r = 0; r < rows; r++) {
    score_gradient_row(probability + r * a->key_length, s->grad_probability + r * stride, keys,
                       stride, a->scale);
  }
  /* dQ += dS·K */
  product = (small_gemm){.rows = rows, .columns = dim, .depth = keys, .a = s->grad_probability,
                         .a_row_stride = stride, .a_depth_stride = 1,
                         .b = a->key + key_offset(a, b, 0, kv_head), .b_stride = key_stride,
                         .c = a->grad_query + query_offset(a, b, i0, h), .c_stride = row_stride,
                         .alpha = 1.0f, .accumulate = true};
  gemm_small(&product);
  /* dK += dSᵀ·Q */
  product = (small_gemm){.rows = keys, .columns = dim, .depth = rows, .a = s->grad_probability,
                         .a_row_stride = 1, .a_depth_stride = stride, .b = query,
                         .b_stride = row_stride, .c = s->grad_key, .c_stride = dim,
                         .alpha = 1.0f, .accumulate = true};
  gemm_small(&product);
  /* dV += Pᵀ·dO */
  product = (small_gemm){.rows = keys, .columns = dim, .depth = rows, .a = probability,
                         .a_row_stride = 1, .a_depth_stride = a->key_length, .b = grad_output,
                         .b_stride = row_stride, .c = s->grad_value, .c_stride = dim,
                         .alpha = 1.0f, .accumulate = true};
  gemm_small(&product);
}

static void backward_task(void *context, size_t index, int thread) {
  const backward_context *t = context;
  const attention_arguments *a = t->a;
  int64_t kv_head = (int64_t)index % a->kv_heads, b = (int64_t)index / a->kv_heads;
  int64_t dim = a->head_dim, keys = t->keys, stride = t->stride;
  size_t floats = (size_t)(dim * stride + QUERY_BLOCK * stride + 2 * keys * dim);
  float *memory = pool_scratch(thread, 0, floats * sizeof(float));
  if (!memory) abort();
  backward_scratch s = {.transposed_value = memory};
  s.grad_probability = s.transposed_value + dim * stride;
  s.grad_key = s.grad_probability + QUERY_BLOCK * stride;
  s.grad_value = s.grad_key + keys * dim;
  memset(s.grad_key, 0, (size_t)(2 * keys * dim) * sizeof(float));
  transpose_rows(a->value + key_offset(a, b, 0, kv_head), a->kv_heads * dim, keys, dim,
                 s.transposed_value, stride);
  int64_t group = a->heads / a->kv_heads;
  for (int64_t h = kv_head * group; h < (kv_head + 1) * group; h++) {
    for (int64_t i0 = 0; i0 < a->query_length; i0 += QUERY_BLOCK) query_block(a, b, h, i0, &s, stride);
  }
  for (int64_t j = 0; j < keys; j++) {
    float *grad_key = a->grad_key + key_offset(a, b, j, kv_head);
    float *grad_value = a->grad_value + key_offset(a, b, j, kv_head);
#pragma omp simd
    for (int64_t d = 0; d < dim; d++) {
      grad_key[d] += s.grad_key[j * dim + d];
      grad_value[d] += s.grad_value[j * dim + d];
    }
  }
}

void kernel_attention_backward(const attention_arguments *a) {
  if (a->batch == 0 || a->heads == 0 || a->query_length == 0) return;
  backward_context context = {a, visible_keys(a, a->query_length - 1), 0};
  if (context.keys <= 0) return;
  context.stride = round_up_to_vector(context.keys);
  double work = (double)a->batch * a->heads * a->query_length * a->key_length * a->head_dim;
  run_maybe_parallel((size_t)(a->batch * a->kv_heads), backward_task, &context, work >= 100000.0);
}
