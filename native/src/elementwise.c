/*
 * Element-wise kernels: SwiGLU and GELU with their backward passes, AdamW, Σx², axpy.
 * Each is one pass over memory, vectorized (omp simd, fast_expf) and split across threads in
 * chunks big enough to pay for the hand-off. The activations are fused kernels: a SwiGLU
 * forward as separate sigmoid, multiply, multiply ops would read and write the [tokens, ffn]
 * activations three times and keep two extra temporaries alive for backward; the backward
 * recomputes σ(gate) instead of storing it. AdamW is likewise one pass where an op-by-op
 * update would make about ten passes over the parameters and both moments.
 *
 * add_scaled (a + s·b: LoRA's base + s·up, and with s = 1 the residual adds) is exact rather
 * than fast: its bits must equal the TypeScript reference's, because decode steps and scoring
 * passes both run it and a sampled token's log-prob must equal the scored one bit for bit.
 */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"
#include "parallel.h"
#include "reduce.h"
#include "vecmath.h"

/* Elements per task: ~10-30 µs of work, well above the pool's hand-off cost. */
#define ELEMENT_CHUNK 32768

typedef struct {
  const float *a, *b, *c;
  float *x, *y;
  int64_t length;
  bool overwrite; /* swiglu_backward: write the gradients, not add to them */
} elementwise_task;

static void run_chunked(elementwise_task *task, pool_task function) {
  pool_run((size_t)chunk_count(task->length, ELEMENT_CHUNK), function, task);
}

static void swiglu_task(void *context, size_t index, int thread) {
  (void)thread;
  const elementwise_task *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, ELEMENT_CHUNK, t->length, &begin, &end);
  const float *gate = t->a, *up = t->b;
  float *output = t->x;
#pragma omp simd
  for (int64_t i = begin; i < end; i++) output[i] = gate[i] * fast_sigmoidf(gate[i]) * up[i];
}

void kernel_swiglu(const float *gate, const float *up, float *output, int64_t length) {
  elementwise_task task = {.a = gate, .b = up, .x = output, .length = length};
  run_chunked(&task, swiglu_task);
}

static void swiglu_backward_task(void *context, size_t index, int thread) {
  (void)thread;
  const elementwise_task *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, ELEMENT_CHUNK, t->length, &begin, &end);
  const float *gate = t->a, *up = t->b, *grad_output = t->c;
  float *grad_gate = t->x, *grad_up = t->y;
  if (t->overwrite) {
    /* 0 + the derivative: the bits adding it to zeros gives (−0 turns +0), nothing read. */
#pragma omp simd
    for (int64_t i = begin; i < end; i++) {
      float x = gate[i];
      float s = fast_sigmoidf(x);
      float g = grad_output[i];
      grad_gate[i] = 0.0f + g * up[i] * s * (1.0f + x * (1.0f - s));
      grad_up[i] = 0.0f + g * x * s;
    }
    return;
  }
#pragma omp simd
  for (int64_t i = begin; i < end; i++) {
    float x = gate[i];
    float s = fast_sigmoidf(x);
    float g = grad_output[i];
    grad_gate[i] += g * up[i] * s * (1.0f + x * (1.0f - s));
    grad_up[i] += g * x * s;
  }
}

void kernel_swiglu_backward(const float *gate, const float *up, const float *grad_output,
                            float *grad_gate, float *grad_up, int64_t length, bool overwrite) {
  elementwise_task task = {.a = gate, .b = up, .c = grad_output, .x = grad_gate, .y = grad_up,
                           .length = length, .overwrite = overwrite};
  run_chunked(&task, swiglu_backward_task);
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBIC 0.044715f

static void gelu_task(void *context, size_t index, int thread) {
  (void)thread;
  const elementwise_task *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, ELEMENT_CHUNK, t->length, &begin, &end);
  const float *input = t->a;
  float *output = t->x;
#pragma omp simd
  for (int64_t i = begin; i < end; i++) {
    float x = input[i];
    float tanh_value = fast_tanhf(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
    /* 0.5·x first: x·(1 + t) could overflow for x near the float maximum. */
    output[i] = 0.5f * x * (1.0f + tanh_value);
  }
}

void kernel_gelu(const float *input, float *output, int64_t length) {
  elementwise_task task = {.a = input, .x = output, .length = length};
  run_chunked(&task, gelu_task);
}

static void gelu_backward_task(void *context, size_t index, int thread) {
  (void)thread;
  const elementwise_task *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, ELEMENT_CHUNK, t->length, &begin, &end);
  const float *input = t->a, *grad_output = t->b;
  float *grad_input = t->x;
#pragma omp simd
  for (int64_t i = begin; i < end; i++) {
    float x = input[i];
    float tanh_value = fast_tanhf(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
    float inner = GELU_SCALE * (1.0f + 3.0f * GELU_CUBIC * x * x);
    /* Once tanh saturates, (1 − t²) is exactly 0: drop the term so x³ = inf cannot make NaN. */
    float slope = (tanh_value == 1.0f || tanh_value == -1.0f)
                      ? 0.0f
                      : 0.5f * x * (1.0f - tanh_value * tanh_value) * inner;
    grad_input[i] += grad_output[i] * (0.5f * (1.0f + tanh_value) + slope);
  }
}

void kernel_gelu_backward(const float *input, const float *grad_output, float *grad_input,
                          int64_t length) {
  elementwise_task task = {.a = input, .b = grad_output, .x = grad_input, .length = length};
  run_chunked(&task, gelu_backward_task);
}

typedef struct {
  const adamw_arguments *arguments;
  float decay, step_size, inverse_sqrt_correction, one_minus_beta1, one_minus_beta2;
} adamw_task_context;

static void adamw_task(void *context, size_t index, int thread) {
  (void)thread;
  const adamw_task_context *t = context;
  const adamw_arguments *a = t->arguments;
  int64_t begin, end;
  chunk_range((int64_t)index, ELEMENT_CHUNK, a->length, &begin, &end);
  float *parameter = a->parameter, *first = a->first_moment, *second = a->second_moment;
  const float *gradient = a->gradient;
  const float beta1 = (float)a->beta1, beta2 = (float)a->beta2;
  const float epsilon = (float)a->epsilon, scale = (float)a->gradient_scale;
#pragma omp simd
  for (int64_t i = begin; i < end; i++) {
    float g = gradient[i] * scale;
    float m = beta1 * first[i] + t->one_minus_beta1 * g;
    float v = beta2 * second[i] + t->one_minus_beta2 * g * g;
    first[i] = m;
    second[i] = v;
    float denominator = sqrtf(v) * t->inverse_sqrt_correction + epsilon;
    parameter[i] = parameter[i] * t->decay - t->step_size * m / denominator;
  }
}

void kernel_adamw(const adamw_arguments *arguments) {
  const adamw_arguments *a = arguments;
  adamw_task_context context = {
      .arguments = a,
      .decay = (float)(1.0 - a->learning_rate * a->weight_decay),
      .step_size = (float)(a->learning_rate / (1.0 - pow(a->beta1, a->step))),
      .inverse_sqrt_correction = (float)(1.0 / sqrt(1.0 - pow(a->beta2, a->step))),
      .one_minus_beta1 = (float)(1.0 - a->beta1),
      .one_minus_beta2 = (float)(1.0 - a->beta2),
  };
  pool_run((size_t)chunk_count(a->length, ELEMENT_CHUNK), adamw_task, &context);
}

typedef struct {
  const float *input;
  int64_t length;
  double *partials;
} sum_task_context;

static void sum_of_squares_task(void *context, size_t index, int thread) {
  (void)thread;
  sum_task_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, ELEMENT_CHUNK, t->length, &begin, &end);
  t->partials[index] = reduce_squares(t->input + begin, end - begin);
}

/* Fixed-size chunks summed in order: the same answer whatever the thread count. */
double kernel_sum_of_squares(const float *input, int64_t length) {
  int64_t chunks = chunk_count(length, ELEMENT_CHUNK);
  if (chunks == 0) return 0;
  double single;
  double *partials = chunks == 1 ? &single : malloc((size_t)chunks * sizeof(double));
  if (!partials) abort();
  sum_task_context context = {input, length, partials};
  pool_run((size_t)chunks, sum_of_squares_task, &context);
  double total = 0;
  for (int64_t i = 0; i < chunks; i++) total += partials[i];
  if (partials != &single) free(partials);
  return total;
}

/*
 * Elements per task of a one-pass kernel over gradient-sized arrays (axpy, addScaled): at most
 * 4 · ELEMENT_CHUNK, and small enough to give every thread two tasks. A LoRA step's residual
 * gradients (512 × 576 floats) made 3 tasks of 131,072 before, so on two threads one thread
 * ran two of them while the other waited.
 */
static int64_t pass_chunk(int64_t length) {
  int64_t tasks = 2 * (int64_t)pool_thread_count();
  int64_t chunk = (length + tasks - 1) / tasks;
  chunk = (chunk + 63) / 64 * 64;
  if (chunk < ELEMENT_CHUNK) chunk = ELEMENT_CHUNK;
  return chunk > 4 * ELEMENT_CHUNK ? 4 * ELEMENT_CHUNK : chunk;
}

typedef struct {
  float alpha;
  const float *x;
  float *y;
  int64_t length;
  bool overwrite;
  int64_t chunk;
} axpy_task_context;

static void axpy_task(void *context, size_t index, int thread) {
  (void)thread;
  const axpy_task_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, t->chunk, t->length, &begin, &end);
  const float alpha = t->alpha;
  if (t->overwrite) {
#pragma omp simd
    for (int64_t i = begin; i < end; i++) t->y[i] = 0.0f + alpha * t->x[i];
    return;
  }
#pragma omp simd
  for (int64_t i = begin; i < end; i++) t->y[i] += alpha * t->x[i];
}

void kernel_axpy(float alpha, const float *x, float *y, int64_t length, bool overwrite) {
  axpy_task_context context = {alpha, x, y, length, overwrite, pass_chunk(length)};
  pool_run((size_t)chunk_count(length, context.chunk), axpy_task, &context);
}

/*
 * output = a + (float)(scale·b), the product in double and rounded once to float, then a float
 * sum: exactly what the reference computes (Math.fround(scale·b), then a float32 store). The
 * conversion between the double product and the float sum keeps -ffp-contract=fast from fusing
 * them into one FMA, which would round once instead of twice. In place (output = a) is fine.
 */
typedef struct {
  double scale;
  const float *a, *b;
  float *output;
  int64_t length, chunk;
} add_scaled_task_context;

static void add_scaled_task(void *context, size_t index, int thread) {
  (void)thread;
  const add_scaled_task_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, t->chunk, t->length, &begin, &end);
  const double scale = t->scale;
  const float *a = t->a, *b = t->b;
  float *output = t->output;
#pragma omp simd
  for (int64_t i = begin; i < end; i++) {
    float scaled = (float)(scale * (double)b[i]);
    output[i] = a[i] + scaled;
  }
}

void kernel_add_scaled(const float *a, const float *b, double scale, float *output,
                       int64_t length) {
  add_scaled_task_context context = {scale, a, b, output, length, pass_chunk(length)};
  pool_run((size_t)chunk_count(length, context.chunk), add_scaled_task, &context);
}
