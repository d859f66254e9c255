/*
 * What this machine is, read once at run time: the CPU's vendor, model and instruction-set
 * features (cpuid, and xgetbv for the register state the OS saves), its cache sizes (sysfs,
 * else cpuid's cache leaves) and the CPUs this process may use. The addon is built in several
 * instruction-set variants (binding.gyp); the loader asks any of them what the host is and
 * loads the one it can run (src/backend/native.ts), and the kernels size their blocks from
 * `host_tuning()` rather than from constants measured on one CPU.
 */
#ifndef TEAMTR_HOST_H
#define TEAMTR_HOST_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  char vendor[16];  /* "intel", "amd", or the cpuid vendor text; the architecture off x86 */
  char model[64];   /* the brand string, e.g. "Intel(R) Xeon(R) Processor" */
  bool avx, avx2, fma, f16c;
  bool avx512f, avx512dq, avx512bw, avx512vl, avx512_vnni, avx512_bf16, avx512_fp16;
  bool amx_tile, amx_bf16;
  int64_t l1d_bytes, l2_bytes, l3_bytes; /* one core's L1d and L2, the whole L3; 0 unknown */
  int cpus;                              /* CPUs this process may run on */
} host_info;

const host_info *host_detect(void);

/* The widest instruction-set variant the host can run: "avx512", "avx2" or "portable". */
const char *host_widest_isa(const host_info *host);

/* "<vendor>-<isa>", e.g. "intel-avx512-bf16", "amd-avx512-bf16", "intel-avx512", "amd-avx2". */
void host_kind(const host_info *host, char *buffer, int size);

/*
 * Block sizes derived from the caches (host.c says how). Only the sizes that do not decide a
 * summation order: the 256-deep k slices of the GEMM kernels (gemm.h) are fixed, so a row of
 * C has the same bits on every host of one vector width.
 */
typedef struct {
  int64_t a_block_bytes;  /* gemm_panels: the block of A a task re-reads per column panel */
  int64_t packed_rows;    /* gemm_packed: rows of A per task at most */
  int64_t packed_columns; /* gemm_packed: columns of packed B a task keeps in L2 */
  int64_t row_tile_bytes; /* matmul_bfloat16: rows of A a task widens B for, kept in L2 */
} host_tuning_sizes;

const host_tuning_sizes *host_tuning(void);

#endif
