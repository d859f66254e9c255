/*
 * Row-wise softmax, log-softmax, and the fused log-softmax + gather used to score tokens.
 * Rows are independent: tasks take blocks of rows. Each row subtracts its maximum before
 * exponentiating and sums the exponentials in float64. Exponentials go through a per-thread
 * scratch row (or the output) so the exp loop vectorizes and the sums use reduce.h.
 *
 * gatherLogProbs is fused because scoring only needs one number per row (plus entropy and
 * logsumexp): an op-by-op log_softmax then gather would write and re-read a full
 * [tokens, vocab] log-probability matrix, the largest tensor in a small model's step.
 * Its backward likewise rebuilds softmax from the saved logsumexp in the same pass that
 * writes the logits gradient, instead of materializing probabilities.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "parallel.h"
#include "reduce.h"
#include "vecmath.h"

#define ROW_TASK_ELEMENTS 16384

/* target[j] = exp(x[j] − shift) */
static void exponentials(const float *x, float shift, float *target, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; j++) target[j] = fast_expf(x[j] - shift);
}

static float *row_scratch(int thread, int64_t columns, int rows) {
  float *scratch = pool_scratch(thread, 0, (size_t)(rows * columns) * sizeof(float));
  if (!scratch) abort();
  return scratch;
}

typedef struct {
  const float *input;
  float *output;
  int64_t rows, columns, rows_per_task;
  bool logarithm;
} softmax_context;

static void softmax_row(const float *in, float *out, int64_t columns, bool logarithm, int thread) {
  float maximum = reduce_max(in, columns);
  if (logarithm) {
    float *scratch = row_scratch(thread, columns, 1);
    exponentials(in, maximum, scratch, columns);
    /* (x − max) − log S, not x − (max + log S): the rounding of a large max must not leak in. */
    float log_sum = (float)log(reduce_sum(scratch, columns));
#pragma omp simd
    for (int64_t j = 0; j < columns; j++) out[j] = (in[j] - maximum) - log_sum;
    return;
  }
  exponentials(in, maximum, out, columns); /* in place is fine: out[j] only after in[j] */
  float inverse = (float)(1.0 / reduce_sum(out, columns));
#pragma omp simd
  for (int64_t j = 0; j < columns; j++) out[j] *= inverse;
}

static void softmax_task(void *context, size_t index, int thread) {
  const softmax_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, t->rows_per_task, t->rows, &begin, &end);
  for (int64_t r = begin; r < end; r++) {
    softmax_row(t->input + r * t->columns, t->output + r * t->columns, t->columns, t->logarithm,
                thread);
  }
}

void kernel_softmax(const float *input, float *output, int64_t rows, int64_t columns,
                    bool logarithm) {
  softmax_context context = {input, output, rows, columns,
                             rows_per_task(rows, columns, ROW_TASK_ELEMENTS), logarithm};
  pool_run((size_t)chunk_count(rows, context.rows_per_task), softmax_task, &context);
}

/*
 * Row maximum m and log S with S = Σ e_j, e_j = exp(x_j − m), so logsumexp = m + log S; and
 * optionally the entropy log S − Σ e_j·(x_j − m)/S, leaving out entries with e_j = 0 (−∞
 * logits), as p·log p → 0.
 */
static double row_log_sum(const float *row, int64_t columns, float *maximum_out, float *entropy,
                          int thread) {
  float maximum = reduce_max(row, columns);
  *maximum_out = maximum;
  float *exps = row_scratch(thread, columns, entropy ? 2 : 1);
  exponentials(row, maximum, exps, columns);
  double sum = reduce_sum(exps, columns);
  if (entropy) {
    float *weighted = exps + columns;
#pragma omp simd
    for (int64_t j = 0; j < columns; j++) {
      weighted[j] = exps[j] > 0.0f ? exps[j] * (row[j] - maximum) : 0.0f;
    }
    *entropy = (float)(log(sum) - reduce_sum(weighted, columns) / sum);
  }
  return log(sum);
}

/* log p(target) from the row's maximum and log S: gatherLogProbs' and sampleRows' one formula. */
static inline float log_prob_of(const float *row, int64_t target, float maximum, double log_sum) {
  return (float)((double)(row[target] - maximum) - log_sum);
}

float row_log_prob(const float *row, int64_t columns, int64_t target, int thread) {
  float maximum;
  double log_sum = row_log_sum(row, columns, &maximum, NULL, thread);
  return log_prob_of(row, target, maximum, log_sum);
}

typedef struct {
  const gather_arguments *arguments;
  int64_t rows_per_task;
} gather_context;

static void gather_task(void *context, size_t index, int thread) {
  const gather_context *t = context;
  const gather_arguments *a = t->arguments;
  int64_t begin, end;
  chunk_range((int64_t)index, t->rows_per_task, a->rows, &begin, &end);
  for (int64_t r = begin; r < end; r++) {
    const float *row = a->logits + r * a->columns;
    float entropy = 0, maximum;
    double log_sum = row_log_sum(row, a->columns, &maximum, a->entropy ? &entropy : NULL, thread);
    a->log_probs[r] = log_prob_of(row, a->targets[r], maximum, log_sum);
    if (a->entropy) a->entropy[r] = entropy;
    if (a->log_sum_exp) a->log_sum_exp[r] = (float)((double)maximum + log_sum);
  }
}

void kernel_gather_log_probs(const gather_arguments *arguments) {
  gather_context context = {arguments,
                            rows_per_task(arguments->rows, arguments->columns, ROW_TASK_ELEMENTS)};
  pool_run((size_t)chunk_count(arguments->rows, context.rows_per_task), gather_task, &context);
}

/* −Σ p_j·log p_j from the saved logsumexp (p_j = 0 entries skipped). */
static double row_entropy(const float *row, int64_t columns, float log_sum_exp, int thread) {
  float *terms = row_scratch(thread, columns, 1);
#pragma omp simd
  for (int64_t j = 0; j < columns; j++) {
    float log_probability = row[j] - log_sum_exp;
    float probability = fast_expf(log_probability);
    terms[j] = probability > 0.0f ? probability * log_probability : 0.0f;
  }
  return -reduce_sum(terms, columns);
}

static void gather_backward_row(const gather_backward_arguments *a, int64_t r, int thread) {
  float gradient = a->grad_log_probs[r];
  float entropy_gradient = a->grad_entropy ? a->grad_entropy[r] : 0.0f;
  float *out = a->grad_logits + r * a->columns;
  if (gradient == 0.0f && entropy_gradient == 0.0f) {
    if (a->overwrite) memset(out, 0, (size_t)a->columns * sizeof(float));
    return;
  }
  const float *row = a->logits + r * a->columns;
  float log_sum_exp = a->log_sum_exp[r];
  if (entropy_gradient == 0.0f && a->overwrite) {
    /* 0 − the term: the bits subtracting it from zeros gives, nothing read. */
#pragma omp simd
    for (int64_t j = 0; j < a->columns; j++)
      out[j] = 0.0f - gradient * fast_expf(row[j] - log_sum_exp);
  } else if (entropy_gradient == 0.0f) {
#pragma omp simd
    for (int64_t j = 0; j < a->columns; j++) out[j] -= gradient * fast_expf(row[j] - log_sum_exp);
  } else {
    if (a->overwrite) memset(out, 0, (size_t)a->columns * sizeof(float));
    float entropy = (float)row_entropy(row, a->columns, log_sum_exp, thread);
#pragma omp simd
    for (int64_t j = 0; j < a->columns; j++) {
      float log_probability = row[j] - log_sum_exp;
      float probability = fast_expf(log_probability);
      float entropy_term = probability != 0.0f
                               ? entropy_gradient * probability * (log_probability + entropy)
                               : 0.0f;
      out[j] -= gradient * probability + entropy_term;
    }
  }
  out[a->targets[r]] += gradient;
}

typedef struct {
  const gather_backward_arguments *arguments;
  int64_t rows_per_task;
} gather_backward_context;

static void gather_backward_task(void *context, size_t index, int thread) {
  const gather_backward_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, t->rows_per_task, t->arguments->rows, &begin, &end);
  for (int64_t r = begin; r < end; r++) gather_backward_row(t->arguments, r, thread);
}

void kernel_gather_log_probs_backward(const gather_backward_arguments *arguments) {
  gather_backward_context context = {
      arguments, rows_per_task(arguments->rows, arguments->columns, ROW_TASK_ELEMENTS)};
  pool_run((size_t)chunk_count(arguments->rows, context.rows_per_task), gather_backward_task,
           &context);
}
