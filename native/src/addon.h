#ifndef TEAMTR_ADDON_H
#define TEAMTR_ADDON_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <stddef.h>

#include "kernel_signatures.h"

typedef struct {
  const char *name;
  napi_callback callback;
} addon_function;

void addon_export(napi_env env, napi_value exports, const addon_function *functions, size_t count);
/* host(), info() and setSgemm() (addon_host.c). */
void addon_export_host(napi_env env, napi_value exports);

/* The entry point of a kernel of kernel_signatures.h: entry_<c_name>(env, info). */
#define KERNEL_ENTRY(c_name) napi_value entry_##c_name(napi_env env, napi_callback_info info)
#define DECLARE_KERNEL_ENTRY(c_name, js_name) KERNEL_ENTRY(c_name);
KERNELS(DECLARE_KERNEL_ENTRY)

#endif
