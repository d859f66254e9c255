/*
 * The machine's memory read rate, for `teamtr bench`. Work on the decode side — every weight
 * read once per decode step, a key/value cache read once per step — is bound by it as well as
 * by the sgemm bound: with 16 rows a bfloat16 weight (2 bytes) feeds 32 FLOPs, so at 25 GB/s
 * such a product cannot pass 400 GFLOP/s whatever the kernel. The probe reads an array far
 * larger than the caches once, split over the pool; each task sums its chunk in vector lanes,
 * which only keeps the loads from being optimized away (the value means nothing).
 */
#include <stdint.h>
#include <stddef.h>

#include "kernels.h"
#include "parallel.h"
#include "simd.h"
#include "threadpool.h"

/* Floats a task reads: 4 MiB, many tasks per thread, each past a core's L2. */
#define PROBE_CHUNK (1 << 20)

typedef struct {
  const float *data;
  int64_t length;
  float *partials;
} probe_context;

static void probe_task(void *context, size_t index, int thread) {
  (void)thread;
  const probe_context *t = context;
  int64_t begin, end;
  chunk_range((int64_t)index, PROBE_CHUNK, t->length, &begin, &end);
  vfloat sums[4] = {{0}};
  int64_t i = begin;
  for (; i + 4 * VECTOR_WIDTH <= end; i += 4 * VECTOR_WIDTH) {
    for (int lane = 0; lane < 4; lane++) sums[lane] += vload(t->data + i + lane * VECTOR_WIDTH);
  }
  float total = 0.0f;
  for (; i < end; i++) total += t->data[i];
  vfloat all = sums[0] + sums[1] + sums[2] + sums[3];
  for (int lane = 0; lane < VECTOR_WIDTH; lane++) total += all[lane];
  t->partials[index] = total;
}

double kernel_memory_read(const float *data, int64_t length) {
  size_t tasks = (size_t)chunk_count(length, PROBE_CHUNK);
  float *partials = pool_scratch(0, 3, tasks * sizeof(float) + 64);
  if (!partials) return -1.0;
  probe_context context = {data, length, partials};
  pool_run(tasks, probe_task, &context);
  double total = 0.0;
  for (size_t task = 0; task < tasks; task++) total += partials[task];
  return total;
}
