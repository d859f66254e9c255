/* N-API entry points for rope, attention, the activations and the optimizer kernels. */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"

static napi_value rope(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "rope", 8)) return NULL;
  float_array data = arguments_floats(&args, 0, "data", false);
  int_array positions = arguments_ints(&args, 1, "positions");
  rope_arguments call = {
      .data = data.data, .positions = positions.data,
      .batch = arguments_size(&args, 2, "batch"),
      .length = arguments_size(&args, 3, "length"),
      .heads = arguments_size(&args, 4, "heads"),
      .head_dim = arguments_size(&args, 5, "headDim"),
      .theta = arguments_number(&args, 6, "theta"),
      .inverse = arguments_boolean(&args, 7, "inverse"),
  };
  if (!args.failed && call.head_dim % 2 != 0) {
    arguments_range_error(&args, "headDim must be even, got %lld", (long long)call.head_dim);
  }
  double rows = (double)call.batch * call.length;
  arguments_require(&args, "data", data.length, rows * call.heads * call.head_dim);
  arguments_require(&args, "positions", positions.length, rows);
  if (args.failed) return NULL;
  kernel_rope(&call);
  return NULL;
}

/* Reads the AttentionShape fields, which follow the arrays, starting at argument `first`. */
static void read_attention_shape(arguments *args, size_t first, attention_arguments *call) {
  float_array key_mask = arguments_floats(args, first, "keyMask", true);
  call->key_mask = key_mask.data;
  call->batch = arguments_size(args, first + 1, "batch");
  call->query_length = arguments_size(args, first + 2, "queryLength");
  call->key_length = arguments_size(args, first + 3, "keyLength");
  call->key_capacity = arguments_size(args, first + 4, "keyCapacity");
  call->heads = arguments_size(args, first + 5, "heads");
  call->kv_heads = arguments_size(args, first + 6, "kvHeads");
  call->head_dim = arguments_size(args, first + 7, "headDim");
  call->query_start = arguments_size(args, first + 8, "queryStart");
  call->scale = (float)arguments_number(args, first + 9, "scale");
  if (args->failed) return;
  if (call->kv_heads == 0 || call->heads % call->kv_heads != 0) {
    arguments_range_error(args, "heads (%lld) must be a multiple of kvHeads (%lld)",
                          (long long)call->heads, (long long)call->kv_heads);
  } else if (call->key_length > call->key_capacity) {
    arguments_range_error(args, "keyLength (%lld) exceeds keyCapacity (%lld)",
                          (long long)call->key_length, (long long)call->key_capacity);
  }
  if (key_mask.data) {
    arguments_require(args, "keyMask", key_mask.length, (double)call->batch * call->key_capacity);
  }
}

static double query_elements(const attention_arguments *call) {
  return (double)call->batch * call->query_length * call->heads * call->head_dim;
}

static double key_elements(const attention_arguments *call) {
  return (double)call->batch * call->key_capacity * call->kv_heads * call->head_dim;
}

static double probability_elements(const attention_arguments *call) {
  return (double)call->batch * call->heads * call->query_length * call->key_length;
}

static napi_value attention(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "attention", 15)) return NULL;
  float_array query = arguments_floats(&args, 0, "query", false);
  float_array key = arguments_floats(&args, 1, "key", false);
  float_array value = arguments_floats(&args, 2, "value", false);
  float_array output = arguments_floats(&args, 3, "output", false);
  float_array probabilities = arguments_floats(&args, 4, "probabilities", true);
  attention_arguments call = {.query = query.data, .key = key.data, .value = value.data,
                              .output = output.data, .probabilities = probabilities.data};
  read_attention_shape(&args, 5, &call);
  arguments_require(&args, "query", query.length, query_elements(&call));
  arguments_require(&args, "output", output.length, query_elements(&call));
  arguments_require(&args, "key", key.length, key_elements(&call));
  arguments_require(&args, "value", value.length, key_elements(&call));
  if (probabilities.data) {
    arguments_require(&args, "probabilities", probabilities.length, probability_elements(&call));
  }
  if (args.failed) return NULL;
  kernel_attention(&call);
  return NULL;
}

static napi_value attention_backward(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "attentionBackward", 18)) return NULL;
  float_array query = arguments_floats(&args, 0, "query", false);
  float_array key = arguments_floats(&args, 1, "key", false);
  float_array value = arguments_floats(&args, 2, "value", false);
  float_array probabilities = arguments_floats(&args, 3, "probabilities", false);
  float_array grad_output = arguments_floats(&args, 4, "gradOutput", false);
  float_array grad_query = arguments_floats(&args, 5, "gradQuery", false);
  float_array grad_key = arguments_floats(&args, 6, "gradKey", false);
  float_array grad_value = arguments_floats(&args, 7, "gradValue", false);
  attention_arguments call = {
      .query = query.data, .key = key.data, .value = value.data,
      .saved_probabilities = probabilities.data, .grad_output = grad_output.data,
      .grad_query = grad_query.data, .grad_key = grad_key.data, .grad_value = grad_value.data};
  read_attention_shape(&args, 8, &call);
  arguments_require(&args, "query", query.length, query_elements(&call));
  arguments_require(&args, "gradOutput", grad_output.length, query_elements(&call));
  arguments_require(&args, "gradQuery", grad_query.length, query_elements(&call));
  arguments_require(&args, "key", key.length, key_elements(&call));
  arguments_require(&args, "value", value.length, key_elements(&call));
  arguments_require(&args, "gradKey", grad_key.length, key_elements(&call));
  arguments_require(&args, "gradValue", grad_value.length, key_elements(&call));
  arguments_require(&args, "probabilities", probabilities.length, probability_elements(&call));
  if (args.failed) return NULL;
  kernel_attention_backward(&call);
  return NULL;
}

static napi_value swiglu(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "swiglu", 3)) return NULL;
  float_array gate = arguments_floats(&args, 0, "gate", false);
  float_array up = arguments_floats(&args, 1, "up", false);
  float_array output = arguments_floats(&args, 2, "output", false);
  arguments_require(&args, "up", up.length, (double)gate.length);
  arguments_require(&args, "output", output.length, (double)gate.length);
  if (args.failed) return NULL;
  kernel_swiglu(gate.data, up.data, output.data, (int64_t)gate.length);
  return NULL;
}

static napi_value swiglu_backward(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "swigluBackward", 5)) return NULL;
  float_array gate = arguments_floats(&args, 0, "gate", false);
  float_array up = arguments_floats(&args, 1, "up", false);
  float_array grad_output = arguments_floats(&args, 2, "gradOutput", false);
  float_array grad_gate = arguments_floats(&args, 3, "gradGate", false);
  float_array grad_up = arguments_floats(&args, 4, "gradUp", false);
  arguments_require(&args, "up", up.length, (double)gate.length);
  arguments_require(&args, "gradOutput", grad_output.length, (double)gate.length);
  arguments_require(&args, "gradGate", grad_gate.length, (double)gate.length);
  arguments_require(&args, "gradUp", grad_up.length, (double)gate.length);
  if (args.failed) return NULL;
  kernel_swiglu_backward(gate.data, up.data, grad_output.data, grad_gate.data, grad_up.data,
                         (int64_t)gate.length);
  return NULL;
}

static napi_value gelu(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "gelu", 2)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array output = arguments_floats(&args, 1, "output", false);
  arguments_require(&args, "output", output.length, (double)input.length);
  if (args.failed) return NULL;
  kernel_gelu(input.data, output.data, (int64_t)input.length);
  return NULL;
}

static napi_value gelu_backward(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "geluBackward", 3)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array grad_output = arguments_floats(&args, 1, "gradOutput", false);
  float_array grad_input = arguments_floats(&args, 2, "gradInput", false);
  arguments_require(&args, "gradOutput", grad_output.length, (double)input.length);
  arguments_require(&args, "gradInput", grad_input.length, (double)input.length);
  if (args.failed) return NULL;
  kernel_gelu_backward(input.data, grad_output.data, grad_input.data, (int64_t)input.length);
  return NULL;
}

static napi_value adamw(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "adamw", 11)) return NULL;
  float_array parameter = arguments_floats(&args, 0, "parameter", false);
  float_array gradient = arguments_floats(&args, 1, "gradient", false);
  float_array first_moment = arguments_floats(&args, 2, "firstMoment", false);
  float_array second_moment = arguments_floats(&args, 3, "secondMoment", false);
  adamw_arguments call = {
      .parameter = parameter.data, .gradient = gradient.data,
      .first_moment = first_moment.data, .second_moment = second_moment.data,
      .length = (int64_t)parameter.length,
      .learning_rate = arguments_number(&args, 4, "learningRate"),
      .beta1 = arguments_number(&args, 5, "beta1"),
      .beta2 = arguments_number(&args, 6, "beta2"),
      .epsilon = arguments_number(&args, 7, "epsilon"),
      .weight_decay = arguments_number(&args, 8, "weightDecay"),
      .step = arguments_number(&args, 9, "step"),
      .gradient_scale = arguments_number(&args, 10, "gradientScale"),
  };
  arguments_require(&args, "gradient", gradient.length, (double)parameter.length);
  arguments_require(&args, "firstMoment", first_moment.length, (double)parameter.length);
  arguments_require(&args, "secondMoment", second_moment.length, (double)parameter.length);
  if (args.failed) return NULL;
  kernel_adamw(&call);
  return NULL;
}

static napi_value sum_of_squares(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "sumOfSquares", 1)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  if (args.failed) return NULL;
  napi_value result;
  napi_create_double(env, kernel_sum_of_squares(input.data, (int64_t)input.length), &result);
  return result;
}

static napi_value axpy(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "axpy", 3)) return NULL;
  double alpha = arguments_number(&args, 0, "alpha");
  float_array x = arguments_floats(&args, 1, "x", false);
  float_array y = arguments_floats(&args, 2, "y", false);
  arguments_require(&args, "y", y.length, (double)x.length);
  if (args.failed) return NULL;
  kernel_axpy((float)alpha, x.data, y.data, (int64_t)x.length);
  return NULL;
}

void addon_register_model(napi_env env, napi_value exports) {
  const addon_function functions[] = {
      {"rope", rope},
      {"attention", attention},
      {"attentionBackward", attention_backward},
      {"swiglu", swiglu},
      {"swigluBackward", swiglu_backward},
      {"gelu", gelu},
      {"geluBackward", gelu_backward},
      {"adamw", adamw},
      {"sumOfSquares", sum_of_squares},
      {"axpy", axpy},
  };
  addon_export(env, exports, functions, sizeof functions / sizeof functions[0]);
}
