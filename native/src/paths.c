/* Path counters (paths.h). */
#include "paths.h"

#include <stdatomic.h>

static _Atomic uint64_t calls[PATH_COUNT];
static _Atomic uint64_t multiply_adds_done[PATH_COUNT];

static const char *const kernels[PATH_COUNT] = {
#define PATH_KERNEL(id, kernel, description) kernel,
    KERNEL_PATHS(PATH_KERNEL)
#undef PATH_KERNEL
};
static const char *const descriptions[PATH_COUNT] = {
#define PATH_DESCRIPTION(id, kernel, description) description,
    KERNEL_PATHS(PATH_DESCRIPTION)
#undef PATH_DESCRIPTION
};

void path_taken(kernel_path path, double multiply_adds) {
  atomic_fetch_add_explicit(&calls[path], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&multiply_adds_done[path], (uint64_t)multiply_adds,
                            memory_order_relaxed);
}

path_record path_read(kernel_path path) {
  path_record record = {kernels[path], descriptions[path],
                        atomic_load_explicit(&calls[path], memory_order_relaxed),
                        (double)atomic_load_explicit(&multiply_adds_done[path],
                                                     memory_order_relaxed)};
  return record;
}

void paths_reset(void) {
  for (int path = 0; path < PATH_COUNT; path++) {
    atomic_store_explicit(&calls[path], 0, memory_order_relaxed);
    atomic_store_explicit(&multiply_adds_done[path], 0, memory_order_relaxed);
  }
}
