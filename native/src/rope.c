/*
 * Rotary position embedding (Hugging Face rotate_half convention), in place, parallel over
 * (batch, position) rows. cos/sin of position·θ^(−2i/D) come from a table cached across calls
 * (keyed by θ and D, grown to the largest position seen): a training step applies rope to q and
 * k forward and backward in every layer with the same positions, and recomputing ~10⁵ sin/cos
 * per call would cost more than the rotation itself.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "kernels.h"
#include "parallel.h"

#define TABLE_POSITION_LIMIT 65536
#define ROPE_TASK_ELEMENTS 16384

static struct {
  pthread_mutex_t mutex;
  double theta;
  int64_t head_dim;
  int64_t positions; /* rows in the table */
  float *cosines, *sines; /* [positions][head_dim / 2] */
} table = {.mutex = PTHREAD_MUTEX_INITIALIZER};

static void fill_angles(int64_t position, int64_t head_dim, double theta, float *cosines,
                        float *sines) {
  int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; i++) {
    double angle = (double)position * pow(theta, -2.0 * (double)i / (double)head_dim);
    cosines[i] = (float)cos(angle);
    sines[i] = (float)sin(angle);
  }
}

/* Makes the table cover positions [0, needed); returns false if it cannot (then compute inline). */
static bool ensure_table(double theta, int64_t head_dim, int64_t needed) {
  if (needed > TABLE_POSITION_LIMIT) return false;
  if (table.theta != theta || table.head_dim != head_dim) {
    table.theta = theta;
    table.head_dim = head_dim;
    table.positions = 0;
  }
  if (table.positions >= needed) return true;
  int64_t half = head_dim / 2, grown = needed < 256 ? 256 : needed;
  if (grown < 2 * table.positions) grown = 2 * table.positions;
  if (grown > TABLE_POSITION_LIMIT) grown = TABLE_POSITION_LIMIT;
  float *cosines = realloc(table.cosines, (size_t)(grown * half) * sizeof(float));
  if (cosines) table.cosines = cosines;
  float *sines = realloc(table.sines, (size_t)(grown * half) * sizeof(float));
  if (sines) table.sines = sines;
  if (!cosines || !sines) {
    table.positions = 0;
    return false;
  }
  for (int64_t p = table.positions; p < grown; p++) {
    fill_angles(p, head_dim, theta, table.cosines + p * half, table.sines + p * half);
  }
  table.positions = grown;
  return true;
}

typedef struct {
  const rope_arguments *arguments;
  bool use_table;
  int64_t rows_per_task;
} rope_context;

/*
 * One token's heads from `source` into `row` (the same row when in place: each pair is read
 * before it is written). Reading another array spares the caller a copy: the LoRA step's rope
 * took one of every query and key (and of their gradients) on the JavaScript thread first.
 */
static void rotate_row(const rope_arguments *a, float *row, const float *source,
                       const float *cosines, const float *sines) {
  int64_t half = a->head_dim / 2;
  float direction = a->inverse ? -1.0f : 1.0f;
  for (int64_t h = 0; h < a->heads; h++) {
    float *first = row + h * a->head_dim, *second = first + half;
    const float *source_first = source + h * a->head_dim, *source_second = source_first + half;
#pragma omp simd
    for (int64_t i = 0; i < half; i++) {
      float x1 = source_first[i], x2 = source_second[i], sine = direction * sines[i];
      first[i] = x1 * cosines[i] - x2 * sine;
      second[i] = x2 * cosines[i] + x1 * sine;
    }
  }
}

static void rope_task(void *context, size_t index, int thread) {
  const rope_context *t = context;
  const rope_arguments *a = t->arguments;
  int64_t begin, end, half = a->head_dim / 2;
  chunk_range((int64_t)index, t->rows_per_task, a->batch * a->length, &begin, &end);
  float *local = t->use_table ? NULL : pool_scratch(thread, 0, (size_t)(2 * half) * sizeof(float));
  for (int64_t r = begin; r < end; r++) {
    int32_t position = a->positions[r];
    const float *cosines, *sines;
    if (t->use_table && position >= 0) {
      cosines = table.cosines + (int64_t)position * half;
      sines = table.sines + (int64_t)position * half;
    } else {
      float *scratch = local ? local : pool_scratch(thread, 0, (size_t)(2 * half) * sizeof(float));
      fill_angles(position, a->head_dim, a->theta, scratch, scratch + half);
      cosines = scratch;
      sines = scratch + half;
    }
    int64_t offset = r * a->heads * a->head_dim;
    rotate_row(a, a->data + offset, a->source + offset, cosines, sines);
  }
}

void kernel_rope(const rope_arguments *arguments) {
  int64_t rows = arguments->batch * arguments->length;
  if (rows == 0 || arguments->head_dim == 0) return;
  int32_t largest = 0;
  for (int64_t r = 0; r < rows; r++) {
    if (arguments->positions[r] > largest) largest = arguments->positions[r];
  }
  /* The table is shared: hold its lock for the whole call (calls from the main thread never
     contend; Node worker threads calling at once simply take turns). */
  pthread_mutex_lock(&table.mutex);
  rope_context context = {
      arguments, ensure_table(arguments->theta, arguments->head_dim, (int64_t)largest + 1),
      rows_per_task(rows, arguments->heads * arguments->head_dim, ROPE_TASK_ELEMENTS)};
  pool_run((size_t)chunk_count(rows, context.rows_per_task), rope_task, &context);
  pthread_mutex_unlock(&table.mutex);
}
