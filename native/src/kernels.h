/*
 * The kernels, as plain C over raw pointers: no N-API here (addon_*.c validate arguments and
 * call these). Layouts and semantics follow src/backend/types.ts exactly; sizes are int64_t.
 * "Accumulate" outputs are added into, all others overwritten.
 */
#ifndef TEAMTR_KERNELS_H
#define TEAMTR_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  const float *a, *b;
  float *c;
  int64_t batch, m, n, k, stride_a, stride_b;
  bool transpose_a, transpose_b;
  float alpha, beta;
} matmul_arguments;

void kernel_matmul(const matmul_arguments *arguments);
/* Name of the BLAS doing large products ("openblas" or "none") and its version text. */
const char *kernel_blas_name(void);
const char *kernel_blas_version(void);
/* Which code runs large products: "openblas" or "own" (our packed kernel). */
const char *kernel_sgemm_name(void);
/* Floats per SIMD vector the kernels were compiled for (16 = AVX-512). */
int kernel_vector_width(void);

/*
 * A product with a fixed summation order (matmul_bfloat16.c, matmul_gemm_order.c): C =
 * alpha·A·op(B) + beta·C with B given as bfloat16 bits (matmulBfloat16) or float32
 * (matmulFixedOrder, matmulGemmOrder); exactly one of b_bfloat16 and b is set.
 */
typedef struct {
  const float *a;
  const uint16_t *b_bfloat16;
  const float *b;
  float *c;
  int64_t m, n, k;
  bool transpose_b;
  float alpha, beta;
} product_arguments;
void kernel_matmul_bfloat16(const product_arguments *arguments);
void kernel_matmul_fixed_order(const product_arguments *arguments);
/* alpha 1 and beta 0 only (matmulGemmOrder overwrites C). */
void kernel_matmul_gemm_order(const product_arguments *arguments);

void kernel_softmax(const float *input, float *output, int64_t rows, int64_t columns, bool logarithm);

typedef struct {
  const float *logits;
  const int32_t *targets;
  int64_t rows, columns;
  float *log_probs, *entropy, *log_sum_exp;  /* entropy and log_sum_exp may be NULL */
} gather_arguments;
void kernel_gather_log_probs(const gather_arguments *arguments);

typedef struct {
  const float *logits;
  int64_t rows, columns;
  const double *uniforms;
  int32_t *tokens;
  float *maximum;
  double *total;
  float *log_probs; /* NULL: not asked for */
} sample_rows_arguments;
void kernel_sample_rows(const sample_rows_arguments *arguments);

/* gatherLogProbs' log-probability of `target` in one row, the same bits (softmax.c). */
float row_log_prob(const float *row, int64_t columns, int64_t target, int thread);

typedef struct {
  const float *logits;
  const int32_t *targets;
  int64_t rows, columns;
  const float *log_sum_exp, *grad_log_probs, *grad_entropy;  /* grad_entropy may be NULL */
  float *grad_logits;
  bool overwrite; /* grad_logits written as 0 + the gradient, not added to */
} gather_backward_arguments;
void kernel_gather_log_probs_backward(const gather_backward_arguments *arguments);

/* Exact KL, TV, row totals and top ids of two log-distributions (distribution_comparison.c). */
typedef struct {
  const float *old_log_probs, *new_log_probs;
  int64_t rows, columns, top_count;
  float *kl, *total_variation;
  int32_t *top_tokens;
  double *old_total, *new_total;
} comparison_arguments;
void kernel_compare_log_distributions(const comparison_arguments *arguments);

typedef struct {
  const float *input, *weight, *bias;  /* bias: layer norm only, may be NULL */
  float *output, *mean, *inverse_scale; /* mean: layer norm only */
  int64_t rows, columns;
  float epsilon;
} norm_arguments;
void kernel_rms_norm(const norm_arguments *arguments);
void kernel_layer_norm(const norm_arguments *arguments);

typedef struct {
  const float *input, *weight, *mean, *inverse_scale, *grad_output;  /* mean: layer norm only */
  float *grad_input, *grad_weight, *grad_bias;  /* grad_weight, grad_bias may be NULL */
  int64_t rows, columns;
} norm_backward_arguments;
void kernel_rms_norm_backward(const norm_backward_arguments *arguments);
void kernel_layer_norm_backward(const norm_backward_arguments *arguments);

typedef struct {
  float *data;
  const float *source; /* rotated into data; may be data itself */
  const int32_t *positions;
  int64_t batch, length, heads, head_dim;
  double theta;
  bool inverse;
} rope_arguments;
void kernel_rope(const rope_arguments *arguments);

typedef struct {
  int64_t batch, query_length, key_length, key_capacity, heads, kv_heads, head_dim, query_start;
  float scale;
  const float *key_mask;  /* may be NULL */
  const float *query, *key, *value;
  float *output, *probabilities;  /* forward: probabilities may be NULL */
  /* backward only */
  const float *saved_probabilities, *grad_output;
  float *grad_query, *grad_key, *grad_value;
} attention_arguments;
void kernel_attention(const attention_arguments *arguments);
void kernel_attention_backward(const attention_arguments *arguments);

void kernel_swiglu(const float *gate, const float *up, float *output, int64_t length);
/* overwrite: the gradients written as 0 + the derivative, not added to (their old values unread). */
void kernel_swiglu_backward(const float *gate, const float *up, const float *grad_output,
                            float *grad_gate, float *grad_up, int64_t length, bool overwrite);
void kernel_gelu(const float *input, float *output, int64_t length);
void kernel_gelu_backward(const float *input, const float *grad_output, float *grad_input,
                          int64_t length);

typedef struct {
  float *parameter;
  const float *gradient;
  float *first_moment, *second_moment;
  int64_t length;
  double learning_rate, beta1, beta2, epsilon, weight_decay, step, gradient_scale;
} adamw_arguments;
void kernel_adamw(const adamw_arguments *arguments);

double kernel_sum_of_squares(const float *input, int64_t length);
/* Reads every float once on the pool (memory_probe.c: the bench's memory read rate); -1 when
   its scratch cannot be had. The sum returned means nothing. */
double kernel_memory_read(const float *data, int64_t length);
/* y += alpha·x, or y = 0 + alpha·x with overwrite (y's old values unread). */
void kernel_axpy(float alpha, const float *x, float *y, int64_t length, bool overwrite);

/* ---- exact element-wise kernels (the TypeScript reference's bits; see elementwise.c) ---- */
void kernel_add_scaled(const float *a, const float *b, double scale, float *output,
                       int64_t length);
/* sum = base + residual, then RMSNorm of sum (norm.input is sum); see norms.c. */
typedef struct {
  norm_arguments norm; /* first: the row function reads it as a norm_arguments */
  const float *base, *residual;
  float *sum;
} add_norm_arguments;
void kernel_add_rms_norm(const add_norm_arguments *arguments);

#endif
