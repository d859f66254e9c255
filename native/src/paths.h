/*
 * Which code each hot kernel ran: one counter per dispatch choice, bumped where the choice is
 * made (a relaxed atomic add per call, not per task). `teamtr bench` reads and resets them
 * around each workload and prints the share of calls and of multiply-adds every path took, so
 * a figure says which kernels produced it on this host.
 */
#ifndef TEAMTR_PATHS_H
#define TEAMTR_PATHS_H

#include <stdint.h>

#define KERNEL_PATHS(X)                                                              \
  X(MATMUL_SKINNY, "matmul", "skinny (≤16 rows, B in place)")                        \
  X(MATMUL_FEW_COLUMNS, "matmul", "few columns (transposed skinny)")                 \
  X(MATMUL_BATCHED_SMALL, "matmul", "small batch items in parallel")                 \
  X(MATMUL_OPENBLAS, "matmul", "OpenBLAS")                                           \
  X(OWN_PANELS, "own sgemm", "column panels (matmul, matmulGemmOrder)")              \
  X(OWN_PACKED, "own sgemm", "packed (matmul, matmulGemmOrder)")                     \
  X(OWN_WEIGHT_ROWS, "own sgemm", "weight rows (x·Wᵀ, 24–128 rows)")                 \
  X(BFLOAT16_IN_REGISTERS, "matmulBfloat16", "dot blocks (<24 rows or <64 columns)") \
  X(BFLOAT16_LANE_PANELS, "matmulBfloat16", "lane panels (≥24 rows, ≥64 columns)")  \
  X(BFLOAT16_ROWS, "matmulBfloat16", "B [k×n] rows")                                 \
  X(BFLOAT16_TILES, "matmulBfloat16", "AMX tiles (n % 16 = k % 32 = 0)")             \
  X(BFLOAT16_TILE_ORDER, "matmulBfloat16", "AMX tiles' order on lanes (TEAMTR_AMX=lanes)") \
  X(FIXED_ORDER, "matmulFixedOrder", "float32 B, fixed order")                       \
  X(GEMM_ORDER_CHAINED, "matmulGemmOrder", "in place (≤8 rows)")                     \
  X(GEMM_ORDER_GEMM, "matmulGemmOrder", "own GEMM kernels")                          \
  X(ATTENTION_DECODE, "attention", "decode step")                                    \
  X(ATTENTION_BLOCKS, "attention", "query blocks")

typedef enum {
#define PATH_ENUM(id, kernel, description) PATH_##id,
  KERNEL_PATHS(PATH_ENUM)
#undef PATH_ENUM
  PATH_COUNT
} kernel_path;

/* Counts one call on `path` doing `multiply_adds` multiply-adds (0 where not meaningful). */
void path_taken(kernel_path path, double multiply_adds);

typedef struct {
  const char *kernel, *description;
  uint64_t calls;
  double multiply_adds;
} path_record;

/* The counters since the last reset, in KERNEL_PATHS order. */
path_record path_read(kernel_path path);
void paths_reset(void);

#endif
