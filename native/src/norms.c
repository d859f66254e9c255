/*
 * RMSNorm and LayerNorm, forward and backward, parallel over blocks of rows. Row statistics
 * are accumulated in float64. The backward passes reduce gradWeight/gradBias over rows: each
 * task of a fixed number of rows (independent of the thread count) writes its own partial
 * row, and the partials are added in task order, so the result is reproducible bit for bit.
 * Each norm is one fused kernel: composed from elementwise ops it would take five or six
 * passes over the activations forward and more backward, plus temporaries for autograd.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "parallel.h"
#include "reduce.h"

#define NORM_TASK_ELEMENTS 16384
/* Rows per backward task: fixed so the gradWeight summation order never changes. */
#define BACKWARD_ROWS 32

/* One row of a forward norm: reads row r of the input, writes row r of the output and stats. */
typedef void (*norm_row)(const norm_arguments *a, int64_t r);

typedef struct {
  const norm_arguments *arguments;
  int64_t rows_per_task;
  norm_row row;
} norm_context;

static void rms_norm_row(const norm_arguments *a, int64_t r) {
  int64_t columns = a->columns;
  const float *x = a->input + r * columns;
  float *y = a->output + r * columns;
  double sum = reduce_squares(x, columns);
  float inverse = (float)(1.0 / sqrt(sum / (double)columns + (double)a->epsilon));
  a->inverse_scale[r] = inverse;
#pragma omp simd
  for (int64_t j = 0; j < columns; j++) y[j] = x[j] * inverse * a->weight[j];
}

static void layer_norm_row(const norm_arguments *a, int64_t r) {
  int64_t columns = a->columns;
  const float *x = a->input + r * columns;
  float *y = a->output + r * columns;
  double mean = reduce_sum(x, columns) / (double)columns;
  /* Squared deviations in a second pass: E[x²] − E[x]² cancels badly for offset inputs. */
  double squares = reduce_centered_squares(x, mean, columns);
  float inverse = (float)(1.0 / sqrt(squares / (double)columns + (double)a->epsilon));
  float mean_float = (float)mean;
  a->mean[r] = mean_float;
  a->inverse_scale[r] = inverse;
  if (a->bias) {
#pragma omp simd
    for (int64_t j = 0; j < columns; j++) {
      y[j] = (x[j] - mean_float) * inverse * a->weight[j] + a->bias[j];
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < columns; j++) y[j] = (x[j] - mean_float) * inverse * a->weight[j];
  }
}

static void norm_task(void *context, size_t index, int thread) {
  (void)thread;
  const norm_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, t->rows_per_task, t->arguments->rows, &begin, &end);
  for (int64_t r = begin; r < end; r++) t->row(t->arguments, r);
}

/* Runs `row` on every row, in tasks of whole rows spread over the pool. */
static void norm_forward(const norm_arguments *arguments, norm_row row) {
  norm_context context = {arguments,
                          rows_per_task(arguments->rows, arguments->columns, NORM_TASK_ELEMENTS),
                          row};
  pool_run((size_t)chunk_count(arguments->rows, context.rows_per_task), norm_task, &context);
}

void kernel_rms_norm(const norm_arguments *arguments) { norm_forward(arguments, rms_norm_row); }

/*
 * A residual add fused into the RMSNorm after it (a decode step's layers run two each): the
 * row's sum is written, then rms_norm_row normalizes it, so the output has the bits rmsNorm
 * gives the same sum. A plain float add, nothing to contract.
 */
static void add_rms_norm_row(const norm_arguments *a, int64_t r) {
  const add_norm_arguments *t = (const add_norm_arguments *)a;
  int64_t columns = a->columns;
  const float *base = t->base + r * columns, *residual = t->residual + r * columns;
  float *sum = t->sum + r * columns;
#pragma omp simd
  for (int64_t j = 0; j < columns; j++) sum[j] = base[j] + residual[j];
  rms_norm_row(a, r);
}

void kernel_add_rms_norm(const add_norm_arguments *arguments) {
  norm_forward(&arguments->norm, add_rms_norm_row);
}

void kernel_layer_norm(const norm_arguments *arguments) { norm_forward(arguments, layer_norm_row); }

typedef struct {
  const norm_backward_arguments *arguments;
  /* [tasks][columns] partial gradWeight, then [tasks][columns] partial gradBias */
  float *partial_weight, *partial_bias;
} norm_backward_context;

static void rms_norm_backward_task(void *context, size_t index, int thread) {
  (void)thread;
  const norm_backward_context *t = context;
  const norm_backward_arguments *a = t->arguments;
  int64_t begin, end, columns = a->columns;
  chunk_range((int64_t)index, BACKWARD_ROWS, a->rows, &begin, &end);
  float *partial = t->partial_weight ? t->partial_weight + (int64_t)index * columns : NULL;
  if (partial) memset(partial, 0, (size_t)columns * sizeof(float));
  for (int64_t r = begin; r < end; r++) {
    const float *x = a->input + r * columns, *g = a->grad_output + r * columns;
    float *dx = a->grad_input + r * columns;
    float inverse = a->inverse_scale[r];
    double projection = reduce_dot3(x, a->weight, g, columns);
    float correction = (float)((double)inverse * inverse * inverse * projection / (double)columns);
#pragma omp simd
    for (int64_t j = 0; j < columns; j++) dx[j] += inverse * a->weight[j] * g[j] - x[j] * correction;
    if (partial) {
#pragma omp simd
      for (int64_t j = 0; j < columns; j++) partial[j] += g[j] * x[j] * inverse;
    }
  }
}

static void layer_norm_backward_task(void *context, size_t index, int thread) {
  (void)thread;
  const norm_backward_context *t = context;
  const norm_backward_arguments *a = t->arguments;
  int64_t begin, end, columns = a->columns;
  chunk_range((int64_t)index, BACKWARD_ROWS, a->rows, &begin, &end);
  float *partial_weight = t->partial_weight ? t->partial_weight + (int64_t)index * columns : NULL;
  float *partial_bias = t->partial_bias ? t->partial_bias + (int64_t)index * columns : NULL;
  if (partial_weight) memset(partial_weight, 0, (size_t)columns * sizeof(float));
  if (partial_bias) memset(partial_bias, 0, (size_t)columns * sizeof(float));
  for (int64_t r = begin; r < end; r++) {
    const float *x = a->input + r * columns, *g = a->grad_output + r * columns;
    float *dx = a->grad_input + r * columns;
    float mean = a->mean[r], inverse = a->inverse_scale[r];
    double sum_d = reduce_dot(g, a->weight, columns);
    double sum_d_normalized = reduce_dot3_centered(g, a->weight, x, mean, columns) * inverse;
    float mean_d = (float)(sum_d / (double)columns);
    float mean_d_normalized = (float)(sum_d_normalized / (double)columns);
#pragma omp simd
    for (int64_t j = 0; j < columns; j++) {
      float normalized = (x[j] - mean) * inverse;
      dx[j] += inverse * (g[j] * a->weight[j] - mean_d - normalized * mean_d_normalized);
    }
    if (partial_weight) {
#pragma omp simd
      for (int64_t j = 0; j < columns; j++) partial_weight[j] += g[j] * (x[j] - mean) * inverse;
    }
    if (partial_bias) {
#pragma omp simd
      for (int64_t j = 0; j < columns; j++) partial_bias[j] += g[j];
    }
  }
}

/* Adds the per-task partial rows into `target` in task order (float64 running sums). */
static void add_partials(float *target, const float *partials, int64_t tasks, int64_t columns) {
  for (int64_t j = 0; j < columns; j++) {
    double sum = 0;
    for (int64_t task = 0; task < tasks; task++) sum += (double)partials[task * columns + j];
    target[j] += (float)sum;
  }
}

static void norm_backward(const norm_backward_arguments *a, pool_task task) {
  int64_t tasks = chunk_count(a->rows, BACKWARD_ROWS);
  if (tasks == 0) return;
  size_t partial_elements = (size_t)(tasks * a->columns);
  int partial_rows = (a->grad_weight ? 1 : 0) + (a->grad_bias ? 1 : 0);
  /* The caller's per-call scratch (slot 3): workers write their own task rows of it. */
  float *memory = partial_rows
                      ? pool_scratch(0, 3, partial_elements * (size_t)partial_rows * sizeof(float))
                      : NULL;
  if (partial_rows && !memory) abort();
  norm_backward_context context = {a, a->grad_weight ? memory : NULL, NULL};
  if (a->grad_bias) context.partial_bias = memory + (a->grad_weight ? partial_elements : 0);
  run_maybe_parallel((size_t)tasks, task, &context, a->rows * a->columns >= 2 * NORM_TASK_ELEMENTS);
  if (a->grad_weight) add_partials(a->grad_weight, context.partial_weight, tasks, a->columns);
  if (a->grad_bias) add_partials(a->grad_bias, context.partial_bias, tasks, a->columns);
}

void kernel_rms_norm_backward(const norm_backward_arguments *arguments) {
  norm_backward(arguments, rms_norm_backward_task);
}

void kernel_layer_norm_backward(const norm_backward_arguments *arguments) {
  norm_backward(arguments, layer_norm_backward_task);
}
