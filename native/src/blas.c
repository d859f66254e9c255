/*
 * OpenBLAS at run time, and the choice of sgemm (blas.h).
 *
 * The core type handed to OpenBLAS (through OPENBLAS_CORETYPE while it loads, unless the user
 * set it) follows our own cpuid reading and the variant loaded: "Cooperlake" for AVX-512 with
 * BF16, "SkylakeX" for other AVX-512, "Haswell" (Intel) or "Zen" (AMD) for AVX2. OpenBLAS's own detection is
 * keyed on model numbers and falls back to its oldest kernels on CPUs newer than the release.
 * OPENBLAS_NUM_THREADS=1 while it loads: it then starts no threads of its own (our pool runs
 * its calls, see blas_product).
 */
#define _GNU_SOURCE
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "parallel.h"
#include "simd.h"

static struct {
  blas_sgemm_function sgemm;
  char version[32];
  char core[32];
} blas;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/*
 * The host's instruction set as far as this variant uses it: an AVX2 build on an AVX-512 host
 * runs what an AVX2 host would, OpenBLAS included (TEAMTR_ISA=avx2 stands in for such a host).
 */
static const char *core_type_for(const host_info *host) {
  bool avx512 = strcmp(host_widest_isa(host), "avx512") == 0 && VECTOR_WIDTH == 16;
  bool avx2 = strcmp(host_widest_isa(host), "portable") != 0 && VECTOR_WIDTH >= 8;
  if (avx512) return host->avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (avx2) return strcmp(host->vendor, "amd") == 0 ? "Zen" : "Haswell";
  return NULL;
}

/* Sets `name` to `value` for the load unless the user set it; returns whether it was set. */
static bool set_for_load(const char *name, const char *value) {
  if (!value || getenv(name)) return false;
  setenv(name, value, 1);
  return true;
}

static void load(void) {
#ifdef TEAMTR_NO_BLAS
  return;
#endif
  const char *mode = getenv("TEAMTR_BLAS");
  if (mode && strcmp(mode, "none") == 0) return;
  const char *names[] = {"libopenblas.so.0", "libopenblas.so", "libopenblas.dylib"};
  bool core_set = set_for_load("OPENBLAS_CORETYPE", core_type_for(host_detect()));
  bool threads_set = set_for_load("OPENBLAS_NUM_THREADS", "1");
  void *library = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !library; i++)
    library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  /* Children of this process (e.g. a PyTorch reference run) keep their own detection. */
  if (core_set) unsetenv("OPENBLAS_CORETYPE");
  if (threads_set) unsetenv("OPENBLAS_NUM_THREADS");
  if (!library) return;
  blas.sgemm = (blas_sgemm_function)dlsym(library, "cblas_sgemm");
  void (*set_threads)(int) = (void (*)(int))dlsym(library, "openblas_set_num_threads");
  char *(*config)(void) = (char *(*)(void))dlsym(library, "openblas_get_config");
  char *(*core)(void) = (char *(*)(void))dlsym(library, "openblas_get_corename");
  if (!blas.sgemm) return;
  if (set_threads) set_threads(1);
  /* "OpenBLAS 0.3.21 NO_LAPACKE ..." → "0.3.21" */
  const char *text = config ? config() : NULL;
  const char *space = text ? strchr(text, ' ') : NULL;
  if (space) snprintf(blas.version, sizeof blas.version, "%.*s", (int)strcspn(space + 1, " "), space + 1);
  if (core) snprintf(blas.core, sizeof blas.core, "%s", core());
}

blas_sgemm_function blas_sgemm(void) {
  pthread_once(&load_once, load);
  return blas.sgemm;
}

const char *blas_version(void) {
  pthread_once(&load_once, load);
  return blas.version;
}

const char *blas_core(void) {
  pthread_once(&load_once, load);
  return blas.core;
}

/* ---- which code runs large products ------------------------------------------------------ */

static pthread_once_t choice_once = PTHREAD_ONCE_INIT;
static bool use_blas = false;
static char reason[96] = "";

/*
 * The default per host kind, from measurements of both in one process (docs/guides/
 * performance.md): with AVX-512, ours; with narrower vectors, OpenBLAS when installed.
 */
static void choose(void) {
  const char *override = getenv("TEAMTR_SGEMM");
  bool wide = VECTOR_WIDTH == 16;
  use_blas = !wide && blas_sgemm() != NULL;
  char kind[48];
  host_kind(host_detect(), kind, sizeof kind);
  snprintf(reason, sizeof reason, "default for %s with the %s kernels", kind,
           wide ? "AVX-512" : VECTOR_WIDTH == 8 ? "AVX2" : "portable");
  if (override && strcmp(override, "openblas") == 0 && blas_sgemm()) {
    use_blas = true;
    snprintf(reason, sizeof reason, "TEAMTR_SGEMM=openblas");
  } else if (override && strcmp(override, "own") == 0) {
    use_blas = false;
    snprintf(reason, sizeof reason, "TEAMTR_SGEMM=own");
  }
}

bool sgemm_uses_blas(void) {
  pthread_once(&choice_once, choose);
  return use_blas;
}

const char *sgemm_path(void) { return sgemm_uses_blas() ? "openblas" : "own"; }

const char *sgemm_reason(void) {
  pthread_once(&choice_once, choose);
  return reason;
}

bool sgemm_select(bool blas_wanted) {
  pthread_once(&choice_once, choose);
  if (blas_wanted && !blas_sgemm()) return false;
  use_blas = blas_wanted;
  snprintf(reason, sizeof reason, "selected at run time");
  return true;
}

/*
 * OpenBLAS runs single-threaded inside our pool's tasks, each task a block of C: letting it
 * start threads of its own would put two pools on the same cores, each spinning while the
 * other works. Blocks are BLAS_ROWS × BLAS_COLUMNS: each call packs its rows of A and columns
 * of B, so large square-ish blocks keep packing small beside the multiply-adds (64-row blocks
 * of all columns packed B once per 64 rows: 0.8 of the whole product's rate, single-threaded).
 */
#define BLAS_ROWS 256
#define BLAS_COLUMNS 512

typedef struct {
  const gemm_problem *g;
  int64_t column_blocks;
} blas_blocks;

static void blas_block_task(void *context, size_t index, int thread) {
  (void)thread;
  const blas_blocks *blocks = context;
  const gemm_problem *g = blocks->g;
  int64_t i0, i1, j0, j1;
  chunk_range((int64_t)index / blocks->column_blocks, BLAS_ROWS, g->m, &i0, &i1);
  chunk_range((int64_t)index % blocks->column_blocks, BLAS_COLUMNS, g->n, &j0, &j1);
  const float *a = g->transpose_a ? g->a + i0 : g->a + i0 * g->k;
  const float *b = g->transpose_b ? g->b + j0 * g->k : g->b + j0;
  blas.sgemm(101, g->transpose_a ? 112 : 111, g->transpose_b ? 112 : 111, (int)(i1 - i0),
             (int)(j1 - j0), (int)g->k, g->alpha, a, g->transpose_a ? (int)g->m : (int)g->k, b,
             g->transpose_b ? (int)g->k : (int)g->n, g->beta, g->c + i0 * g->n + j0, (int)g->n);
}

void blas_product(const gemm_problem *g, bool parallel) {
  blas_blocks blocks = {g, chunk_count(g->n, BLAS_COLUMNS)};
  size_t tasks = (size_t)(chunk_count(g->m, BLAS_ROWS) * blocks.column_blocks);
  run_maybe_parallel(tasks, blas_block_task, &blocks,
                     parallel && (double)g->m * g->n * g->k >= 1e6);
}
