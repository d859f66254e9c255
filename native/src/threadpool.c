#define _GNU_SOURCE
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_THREADS 64
#define SCRATCH_SLOTS 5
/*
 * After a job, workers spin this long before sleeping: kernels arrive back to back, a few to
 * a few hundred microseconds of JavaScript apart (a LoRA step at SmolLM2's shape makes ~1,500
 * calls in ~1.3 s). The caller never waits for a sleeping worker (it claims every task nobody
 * else has), so a worker that sleeps between two kernels misses the next one while it wakes.
 * The spin used to be 1,500 pause instructions: ~20 µs on an Intel Xeon (cpuid model 207),
 * shorter than many of those gaps, and in profiles of the step the one-pass kernels (axpy,
 * addScaled, swiglu, the norms' backward) ran almost wholly on the calling thread. A spin
 * yields the CPU every 64 steps, so on a busy machine it gives way to other work.
 */
#define WORKER_SPIN_NANOSECONDS 300000
/*
 * The caller spins this long for tasks other threads are still running, then sleeps: at most
 * one task's time, unless the machine is oversubscribed (it was 4,000 pause instructions,
 * ~55 µs, less than one panel task of a LoRA step's products).
 */
#define CALLER_SPIN_NANOSECONDS 500000

/*
 * One step of a spin-wait. Every 64th step yields the CPU: when the machine is oversubscribed
 * the thread we wait for may be queued behind us on this very core, and pure spinning would
 * keep it off the CPU until our time slice ends.
 */
static inline void spin_step(int spins) {
  if ((spins & 63) == 63) sched_yield();
  else CPU_RELAX();
}

/*
 * Tasks are claimed from one atomic word: job number (24 bits) | task count (20 bits) |
 * next unclaimed task (20 bits). A claim is a compare-and-swap that only succeeds on the
 * current job with tasks left, so a worker that wakes late can neither run a finished job's
 * task nor run tasks of the next job with stale arguments. Successful claims acquire the
 * word the caller released after writing the job, which makes the job's fields visible.
 */
#define INDEX_BITS 20
#define COUNT_BITS 20
#define MAX_TASKS ((1u << INDEX_BITS) - 1)

static struct {
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  pthread_cond_t done;
  int threads;         /* total, caller included */
  int started_workers; /* workers created so far */
  int sleeping_workers;
  bool caller_sleeping;
  atomic_uint generation; /* bumped for every job: workers wait for it to change */
  _Atomic uint64_t claim;
  atomic_size_t completed;
  /* the current job; written only while no task can be claimed */
  pool_task task;
  void *context;
  uint64_t job;
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

/* Claims the next task of the current job (and reads the job's task count); false when none
   is left. */
static bool claim_task(size_t *index, size_t *job_count) {
  uint64_t word = atomic_load_explicit(&pool.claim, memory_order_relaxed);
  for (;;) {
    uint64_t next = word & MAX_TASKS;
    uint64_t count = (word >> INDEX_BITS) & ((1u << COUNT_BITS) - 1);
    if (next >= count) return false;
    if (atomic_compare_exchange_weak_explicit(&pool.claim, &word, word + 1, memory_order_acquire,
                                              memory_order_relaxed)) {
      *index = (size_t)next;
      *job_count = (size_t)count;
      return true;
    }
  }
}

/* Runs tasks until none is left to claim. */
static void run_tasks(int thread) {
  size_t index, count;
  while (claim_task(&index, &count)) {
    pool.task(pool.context, index, thread);
    size_t finished = atomic_fetch_add_explicit(&pool.completed, 1, memory_order_acq_rel) + 1;
    if (finished == count) {
      pthread_mutex_lock(&pool.mutex);
      if (pool.caller_sleeping) pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.mutex);
    }
  }
}

/* Generation current when each worker was created: it only waits for jobs posted later. */
static unsigned start_generation[MAX_THREADS];

static int64_t monotonic_nanoseconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/*
 * Whether a spin that began at `started` (0: not read yet) should go on for `limit`
 * nanoseconds; the clock is read once every 64 steps.
 */
static bool keep_spinning(int spins, int64_t *started, int64_t limit) {
  if ((spins & 63) != 0) return true;
  int64_t now = monotonic_nanoseconds();
  if (*started == 0) *started = now;
  return now - *started < limit;
}

static void *worker_main(void *argument) {
  int thread = (int)(intptr_t)argument;
  unsigned seen = start_generation[thread];
  for (;;) {
    unsigned generation;
    int spins = 0;
    int64_t spin_started = 0;
    while ((generation = atomic_load_explicit(&pool.generation, memory_order_acquire)) == seen) {
      if (keep_spinning(++spins, &spin_started, WORKER_SPIN_NANOSECONDS)) {
        spin_step(spins);
        continue;
      }
      pthread_mutex_lock(&pool.mutex);
      pool.sleeping_workers++;
      while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.wake, &pool.mutex);
      pool.sleeping_workers--;
      pthread_mutex_unlock(&pool.mutex);
      spins = 0;
      spin_started = 0;
    }
    seen = generation;
    run_tasks(thread);
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
  return pool.started_workers;
}

static void wait_for_completion(size_t count) {
  int64_t spin_started = 0;
  for (int spins = 1; atomic_load_explicit(&pool.completed, memory_order_acquire) < count;
       spins++) {
    if (keep_spinning(spins, &spin_started, CALLER_SPIN_NANOSECONDS)) {
      spin_step(spins);
      continue;
    }
    pthread_mutex_lock(&pool.mutex);
    pool.caller_sleeping = true;
    while (atomic_load(&pool.completed) < count) pthread_cond_wait(&pool.done, &pool.mutex);
    pool.caller_sleeping = false;
    pthread_mutex_unlock(&pool.mutex);
  }
}

/* One job of at most MAX_TASKS tasks; the caller holds job_lock. */
static void run_job(size_t count, pool_task task, void *context) {
  pool.task = task;
  pool.context = context;
  atomic_store_explicit(&pool.completed, 0, memory_order_relaxed);
  pool.job = (pool.job + 1) & ((1u << 24) - 1);
  uint64_t word = (pool.job << (INDEX_BITS + COUNT_BITS)) | ((uint64_t)count << INDEX_BITS);
  atomic_store_explicit(&pool.claim, word, memory_order_release);
  atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
  pthread_mutex_lock(&pool.mutex);
  if (pool.sleeping_workers) pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mutex);
  run_tasks(0);
  wait_for_completion(count);
}

typedef struct {
  pool_task task;
  void *context;
  size_t offset;
} offset_context;

static void offset_task(void *context, size_t index, int thread) {
  const offset_context *shifted = context;
  shifted->task(shifted->context, shifted->offset + index, thread);
}

void pool_run(size_t count, pool_task task, void *context) {
  if (count == 0) return;
  int threads = pool_thread_count();
  if (count == 1 || threads == 1 || pthread_mutex_trylock(&job_lock) != 0) {
    for (size_t index = 0; index < count; index++) task(context, index, 0);
    return;
  }
  ensure_workers(threads - 1);
  if (count <= MAX_TASKS) {
    run_job(count, task, context);
  } else {
    for (size_t first = 0; first < count; first += MAX_TASKS) {
      offset_context shifted = {task, context, first};
      run_job(count - first < MAX_TASKS ? count - first : MAX_TASKS, offset_task, &shifted);
    }
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
