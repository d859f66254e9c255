/*
 * A small persistent thread pool. The caller's thread always takes part, so a pool of N
 * threads has N - 1 workers. Work is split into `count` independent tasks handed out in order
 * through an atomic counter; every kernel that reduces across tasks writes one partial result
 * per task and sums them afterwards in task order, so results do not depend on which thread ran
 * which task (bit-for-bit reproducible runs).
 */
#ifndef TEAMTR_THREADPOOL_H
#define TEAMTR_THREADPOOL_H

#include <stddef.h>

/* Runs task `index` (0 <= index < count); `thread` is 0..threads-1, for per-thread scratch. */
typedef void (*pool_task)(void *context, size_t index, int thread);

/* Threads used (the caller included): TEAMTR_NUM_THREADS, else the CPUs this process may use. */
int pool_thread_count(void);

/* Changes the thread count (1..64). Must not be called while a job runs. */
void pool_set_thread_count(int threads);

/*
 * Runs task(context, i, thread) for every i in [0, count) and returns when all are done.
 * Runs inline on the caller when count is 1, the pool has one thread, or another thread is
 * already using the pool (e.g. kernels called from a Node worker thread at the same time).
 */
void pool_run(size_t count, pool_task task, void *context);

/*
 * Per-thread scratch memory, 64-byte aligned, grown on demand, kept between calls (NULL if
 * memory runs out). Slots: 0 = task-local rows and tiles (any thread); 1, 2 = packed gemm
 * operands; 3 = per-call buffers the calling thread shares with its workers (attention's Kᵀ,
 * norm-gradient partials, a transposed LoRA factor); 4 = a task's second buffer (the bfloat16
 * product's running sums). A kernel never holds a slot across calls.
 */
void *pool_scratch(int thread, int slot, size_t bytes);

#endif
