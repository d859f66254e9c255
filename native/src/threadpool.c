#define _GNU_SOURCE
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_THREADS 64
#define SCRATCH_SLOTS 4
/*
 * Workers spin this many pause-iterations (about 0.1 ms) after a job before sleeping
 * on the condition variable: kernels arrive back to back during a training step, and waking a
 * sleeping thread costs far more than a short spin.
 */
#define SPIN_ITERATIONS 4000

static struct {
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  pthread_cond_t done;
  int threads;           /* total, caller included */
  int started_workers;   /* workers created so far */
  int sleeping;
  atomic_ulong generation;
  /* the current job */
  pool_task task;
  void *context;
  size_t count;
  int job_workers;       /* workers taking part in the current job */
  atomic_size_t next;
  atomic_int pending;    /* participating workers not yet finished */
} pool = {
    .mutex = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t configure_once = PTHREAD_ONCE_INIT;

static void configure_threads(void) {
  int threads = 0;
  const char *text = getenv("TEAMTR_NUM_THREADS");
  if (text && *text) threads = atoi(text);
  if (threads <= 0) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) threads = CPU_COUNT(&set);
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  }
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  pool.threads = threads;
}

int pool_thread_count(void) {
  pthread_once(&configure_once, configure_threads);
  return pool.threads;
}

void pool_set_thread_count(int threads) {
  pthread_once(&configure_once, configure_threads);
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  pthread_mutex_lock(&job_lock);
  pool.threads = threads;
  pthread_mutex_unlock(&job_lock);
}

static void run_tasks(int thread) {
  for (;;) {
    size_t index = atomic_fetch_add_explicit(&pool.next, 1, memory_order_relaxed);
    if (index >= pool.count) return;
    pool.task(pool.context, index, thread);
  }
}

/* Generation current when each worker was created: jobs posted later are the worker's to run,
   even if the thread only gets scheduled after the job was posted. */
static unsigned long start_generation[MAX_THREADS];

static void *worker_main(void *argument) {
  int thread = (int)(intptr_t)argument;
  unsigned long seen = start_generation[thread];
  for (;;) {
    unsigned long generation;
    int spins = 0;
    while ((generation = atomic_load_explicit(&pool.generation, memory_order_acquire)) == seen) {
      if (++spins < SPIN_ITERATIONS) {
        CPU_RELAX();
        continue;
      }
      pthread_mutex_lock(&pool.mutex);
      pool.sleeping++;
      while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.wake, &pool.mutex);
      pool.sleeping--;
      pthread_mutex_unlock(&pool.mutex);
      spins = 0;
    }
    seen = generation;
    if (thread > pool.job_workers) continue;
    run_tasks(thread);
    if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&pool.mutex);
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.mutex);
    }
  }
  return NULL;
}

/* Starts workers 1..wanted (idempotent); returns how many are running. */
static int ensure_workers(int wanted) {
  while (pool.started_workers < wanted) {
    pthread_t handle;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    start_generation[pool.started_workers + 1] = atomic_load(&pool.generation);
    int failed = pthread_create(&handle, &attributes, worker_main,
                                (void *)(intptr_t)(pool.started_workers + 1));
    pthread_attr_destroy(&attributes);
    if (failed) break;
    pool.started_workers++;
  }
  return pool.started_workers < wanted ? pool.started_workers : wanted;
}

void pool_run(size_t count, pool_task task, void *context) {
  if (count == 0) return;
  int threads = pool_thread_count();
  if (count == 1 || threads == 1 || pthread_mutex_trylock(&job_lock) != 0) {
    for (size_t index = 0; index < count; index++) task(context, index, 0);
    return;
  }
  int workers = threads - 1;
  if ((size_t)workers > count - 1) workers = (int)(count - 1);
  workers = ensure_workers(workers);
  pool.task = task;
  pool.context = context;
  pool.count = count;
  pool.job_workers = workers;
  atomic_store_explicit(&pool.next, 0, memory_order_relaxed);
  /* Every started worker wakes for the job; those above job_workers skip it. */
  atomic_store_explicit(&pool.pending, workers, memory_order_relaxed);
  pthread_mutex_lock(&pool.mutex);
  atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
  if (pool.sleeping) pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mutex);
  run_tasks(0);
  for (int spins = 0; atomic_load_explicit(&pool.pending, memory_order_acquire) > 0; spins++) {
    if (spins < SPIN_ITERATIONS) {
      CPU_RELAX();
      continue;
    }
    pthread_mutex_lock(&pool.mutex);
    while (atomic_load(&pool.pending) > 0) pthread_cond_wait(&pool.done, &pool.mutex);
    pthread_mutex_unlock(&pool.mutex);
  }
  pthread_mutex_unlock(&job_lock);
}

static _Thread_local struct {
  void *memory[SCRATCH_SLOTS];
  size_t bytes[SCRATCH_SLOTS];
} scratch;

void *pool_scratch(int thread, int slot, size_t bytes) {
  (void)thread; /* scratch is thread-local: the index only documents intent at call sites */
  if (scratch.bytes[slot] < bytes) {
    free(scratch.memory[slot]);
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    scratch.memory[slot] = aligned_alloc(64, rounded);
    scratch.bytes[slot] = scratch.memory[slot] ? rounded : 0;
  }
  return scratch.memory[slot];
}
