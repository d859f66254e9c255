#ifndef TEAMTR_ADDON_H
#define TEAMTR_ADDON_H

#define NAPI_VERSION 8
#include <node_api.h>
#include <stddef.h>

typedef struct {
  const char *name;
  napi_callback callback;
} addon_function;

void addon_export(napi_env env, napi_value exports, const addon_function *functions, size_t count);
void addon_register_math(napi_env env, napi_value exports);
void addon_register_model(napi_env env, napi_value exports);

#endif
