/* Helpers for splitting a range of elements or rows into fixed-size chunks for the pool. */
#ifndef TEAMTR_PARALLEL_H
#define TEAMTR_PARALLEL_H

#include <stdint.h>

#include "threadpool.h"

/* Number of chunks of `chunk` items covering `total` items. */
static inline int64_t chunk_count(int64_t total, int64_t chunk) {
  return total <= 0 ? 0 : (total + chunk - 1) / chunk;
}

/* [begin, end) of chunk `index`. */
static inline void chunk_range(int64_t index, int64_t chunk, int64_t total, int64_t *begin,
                               int64_t *end) {
  *begin = index * chunk;
  *end = *begin + chunk < total ? *begin + chunk : total;
}

/*
 * Rows per task so that each task holds at least `minimum_elements` elements (below that the
 * hand-off to another thread costs more than it saves) and the pool gets enough tasks.
 */
static inline int64_t rows_per_task(int64_t rows, int64_t columns, int64_t minimum_elements) {
  int64_t per_row = columns > 0 ? columns : 1;
  int64_t by_size = (minimum_elements + per_row - 1) / per_row;
  int64_t threads = pool_thread_count();
  int64_t by_balance = (rows + 4 * threads - 1) / (4 * threads);
  int64_t result = by_size > by_balance ? by_size : by_balance;
  return result < 1 ? 1 : result;
}

/* pool_run, or a plain loop on the caller when the job is too small to be worth sharing. */
static inline void run_maybe_parallel(size_t count, pool_task task, void *context, int parallel) {
  if (parallel) {
    pool_run(count, task, context);
    return;
  }
  for (size_t index = 0; index < count; index++) task(context, index, 0);
}

#endif
