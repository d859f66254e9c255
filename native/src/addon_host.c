/*
 * N-API entry points that describe the addon and the machine: `host()` (host.h: what the CPU
 * is), `info()` (this build: its variant, the paths its kernels take, the block sizes derived
 * from the caches), `setSgemm(path)`, which switches the code running large float32 products
 * so a benchmark can time both in one process, and `paths()`/`resetPaths()`, the counts of
 * the code each hot kernel ran (paths.h), and `readMemory(data)`, the bench's probe of the
 * memory read rate (memory_probe.c), and `addressAlignment(buffer)`, for the buffer pool.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "addon.h"
#include "arguments.h"
#include "blas.h"
#include "host.h"
#include "kernels.h"
#include "paths.h"
#include "threadpool.h"

#ifndef TEAMTR_ISA
#define TEAMTR_ISA "native"
#endif

static void set_string(napi_env env, napi_value object, const char *name, const char *value) {
  napi_value text;
  napi_create_string_utf8(env, value, NAPI_AUTO_LENGTH, &text);
  napi_set_named_property(env, object, name, text);
}

static void set_number(napi_env env, napi_value object, const char *name, double value) {
  napi_value number;
  napi_create_double(env, value, &number);
  napi_set_named_property(env, object, name, number);
}

/* The features the kernels or the host kind depend on, by their /proc/cpuinfo names. */
static napi_value feature_list(napi_env env, const host_info *host) {
  const struct {
    const char *name;
    bool present;
  } features[] = {
      {"avx", host->avx},           {"avx2", host->avx2},
      {"fma", host->fma},           {"f16c", host->f16c},
      {"avx512f", host->avx512f},   {"avx512dq", host->avx512dq},
      {"avx512bw", host->avx512bw}, {"avx512vl", host->avx512vl},
      {"avx512_vnni", host->avx512_vnni}, {"avx512_bf16", host->avx512_bf16},
      {"avx512_fp16", host->avx512_fp16}, {"amx_tile", host->amx_tile},
      {"amx_bf16", host->amx_bf16},
  };
  napi_value list;
  napi_create_array(env, &list);
  uint32_t count = 0;
  for (size_t i = 0; i < sizeof features / sizeof features[0]; i++) {
    if (!features[i].present) continue;
    napi_value name;
    napi_create_string_utf8(env, features[i].name, NAPI_AUTO_LENGTH, &name);
    napi_set_element(env, list, count++, name);
  }
  return list;
}

static napi_value host(napi_env env, napi_callback_info callback_info) {
  (void)callback_info;
  const host_info *detected = host_detect();
  char kind[64];
  host_kind(detected, kind, sizeof kind);
  napi_value result;
  napi_create_object(env, &result);
  set_string(env, result, "vendor", detected->vendor);
  set_string(env, result, "model", detected->model);
  set_string(env, result, "kind", kind);
  set_string(env, result, "widestIsa", host_widest_isa(detected));
  napi_set_named_property(env, result, "features", feature_list(env, detected));
  set_number(env, result, "l1dBytes", (double)detected->l1d_bytes);
  set_number(env, result, "l2Bytes", (double)detected->l2_bytes);
  set_number(env, result, "l3Bytes", (double)detected->l3_bytes);
  set_number(env, result, "cpus", detected->cpus);
  return result;
}

static napi_value info(napi_env env, napi_callback_info callback_info) {
  (void)callback_info;
  napi_value result, tuning;
  napi_create_object(env, &result);
  set_string(env, result, "isa", TEAMTR_ISA);
  set_string(env, result, "blas", kernel_blas_name());
  set_string(env, result, "blasVersion", kernel_blas_version());
  set_string(env, result, "blasCore", blas_core());
  set_string(env, result, "sgemm", kernel_sgemm_name());
  set_string(env, result, "sgemmReason", sgemm_reason());
  set_number(env, result, "vectorWidth", kernel_vector_width());
  set_number(env, result, "threads", pool_thread_count());
  set_string(env, result, "signatures", KERNEL_SIGNATURES_FINGERPRINT);
  const host_tuning_sizes *sizes = host_tuning();
  napi_create_object(env, &tuning);
  set_number(env, tuning, "aBlockBytes", (double)sizes->a_block_bytes);
  set_number(env, tuning, "packedRows", (double)sizes->packed_rows);
  set_number(env, tuning, "packedColumns", (double)sizes->packed_columns);
  set_number(env, tuning, "rowTileBytes", (double)sizes->row_tile_bytes);
  napi_set_named_property(env, result, "tuning", tuning);
  return result;
}

static napi_value set_sgemm(napi_env env, napi_callback_info callback_info) {
  arguments args;
  if (!arguments_read(&args, env, callback_info, "setSgemm", 1)) return NULL;
  char path[16] = "";
  size_t length = 0;
  if (napi_get_value_string_utf8(env, args.values[0], path, sizeof path, &length) != napi_ok ||
      (strcmp(path, "own") != 0 && strcmp(path, "openblas") != 0)) {
    napi_throw_type_error(env, NULL, "setSgemm: the path must be \"own\" or \"openblas\"");
    return NULL;
  }
  if (!sgemm_select(strcmp(path, "openblas") == 0)) {
    napi_throw_error(env, NULL,
                     "setSgemm: OpenBLAS is not loaded (install libopenblas0, and leave "
                     "TEAMTR_BLAS unset)");
  }
  return NULL;
}

/* [{kernel, path, calls, multiplyAdds}] for every path taken since the last reset. */
static napi_value paths(napi_env env, napi_callback_info callback_info) {
  (void)callback_info;
  napi_value list;
  napi_create_array(env, &list);
  uint32_t count = 0;
  for (int path = 0; path < PATH_COUNT; path++) {
    path_record record = path_read((kernel_path)path);
    if (record.calls == 0) continue;
    napi_value entry;
    napi_create_object(env, &entry);
    set_string(env, entry, "kernel", record.kernel);
    set_string(env, entry, "path", record.description);
    set_number(env, entry, "calls", (double)record.calls);
    set_number(env, entry, "multiplyAdds", record.multiply_adds);
    napi_set_element(env, list, count++, entry);
  }
  return list;
}

static napi_value reset_paths(napi_env env, napi_callback_info callback_info) {
  (void)env;
  (void)callback_info;
  paths_reset();
  return NULL;
}

/* readMemory(data: Float32Array): one pass over it on the pool (memory_probe.c); the bench
   times the calls. Returns the meaningless sum, so the reads cannot be dropped. */
static napi_value read_memory(napi_env env, napi_callback_info callback_info) {
  arguments args;
  if (!arguments_read(&args, env, callback_info, "readMemory", 1)) return NULL;
  float_array data = arguments_floats(&args, 0, "data", false);
  if (args.failed) return NULL;
  double sum = kernel_memory_read(data.data, (int64_t)data.length);
  if (sum == -1.0) {
    napi_throw_error(env, NULL, "readMemory: out of memory for the per-task sums");
    return NULL;
  }
  napi_value result;
  napi_create_double(env, sum, &result);
  return result;
}

/*
 * addressAlignment(buffer: ArrayBuffer): where its bytes start, modulo a cache line (64). The
 * buffer pool places each view on a line boundary (src/tensor/memory.ts): with C's rows off the
 * line, two threads writing neighbouring column panels of C ran a 512 × 576 × 576 product at
 * 0.89 of the aligned speed.
 */
static napi_value address_alignment(napi_env env, napi_callback_info callback_info) {
  arguments args;
  if (!arguments_read(&args, env, callback_info, "addressAlignment", 1)) return NULL;
  void *data = NULL;
  size_t length = 0;
  if (napi_get_arraybuffer_info(env, args.values[0], &data, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "addressAlignment: the argument must be an ArrayBuffer");
    return NULL;
  }
  napi_value result;
  napi_create_uint32(env, (uint32_t)((uintptr_t)data % 64), &result);
  return result;
}

void addon_export_host(napi_env env, napi_value exports) {
  const addon_function functions[] = {{"host", host},           {"info", info},
                                      {"setSgemm", set_sgemm},  {"paths", paths},
                                      {"resetPaths", reset_paths}, {"readMemory", read_memory},
                                      {"addressAlignment", address_alignment}};
  addon_export(env, exports, functions, sizeof functions / sizeof functions[0]);
}
