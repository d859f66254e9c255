/*
 * teamtr_native: the kernels of src/backend/types.ts as a plain N-API addon. This file sets up
 * the module (thread count, and every kernel of kernel_signatures.h); addon_host.c describes
 * the host and the build, addon_math.c and addon_model.c hold the kernel entry points.
 */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"
#include "threadpool.h"

void addon_export(napi_env env, napi_value exports, const addon_function *functions, size_t count) {
  for (size_t i = 0; i < count; i++) {
    napi_value function;
    napi_create_function(env, functions[i].name, NAPI_AUTO_LENGTH, functions[i].callback, NULL,
                         &function);
    napi_set_named_property(env, exports, functions[i].name, function);
  }
}

static napi_value set_threads(napi_env env, napi_callback_info callback_info) {
  arguments args;
  if (!arguments_read(&args, env, callback_info, "setThreads", 1)) return NULL;
  int64_t threads = arguments_size(&args, 0, "threads");
  if (!args.failed && (threads < 1 || threads > 64)) {
    arguments_range_error(&args, "threads must be between 1 and 64, got %lld", (long long)threads);
  }
  if (args.failed) return NULL;
  pool_set_thread_count((int)threads);
  return NULL;
}

#define KERNEL_FUNCTION(c_name, js_name) {js_name, entry_##c_name},

static napi_value initialize(napi_env env, napi_value exports) {
  const addon_function functions[] = {
      {"setThreads", set_threads},
  };
  addon_export(env, exports, functions, sizeof functions / sizeof functions[0]);
  addon_export_host(env, exports);
  const addon_function kernels[] = {KERNELS(KERNEL_FUNCTION)};
  addon_export(env, exports, kernels, sizeof kernels / sizeof kernels[0]);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, initialize)
