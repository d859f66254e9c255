/* N-API entry points for rope, attention, the activations and the optimizer kernels. */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"

KERNEL_ENTRY(rope) {
  READ_KERNEL_ARGUMENTS(ROPE)
  if (!args.failed && head_dim % 2 != 0) {
    arguments_range_error(&args, "headDim must be even, got %lld", (long long)head_dim);
  }
  double rows = (double)batch * length;
  arguments_require(&args, "data", data.length, rows * heads * head_dim);
  arguments_require(&args, "positions", positions.length, rows);
  if (args.failed) return NULL;
  rope_arguments call = {.data = data.data, .positions = positions.data, .batch = batch,
                         .length = length, .heads = heads, .head_dim = head_dim,
                         .theta = theta, .inverse = inverse};
  kernel_rope(&call);
  return NULL;
}

/*
 * The attention shape, read into `call` from the locals of READ_KERNEL_ARGUMENTS (both
 * attention kernels end their signatures with the same shape arguments), then checked.
 */
#define ATTENTION_SHAPE                                                                        \
  .key_mask = key_mask.data, .batch = batch, .query_length = query_length,                    \
  .key_length = key_length, .key_capacity = key_capacity, .heads = heads, .kv_heads = kv_heads, \
  .head_dim = head_dim, .query_start = query_start, .scale = (float)scale

static void check_attention_shape(arguments *args, const attention_arguments *call,
                                  float_array key_mask) {
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

KERNEL_ENTRY(attention) {
  READ_KERNEL_ARGUMENTS(ATTENTION)
  attention_arguments call = {.query = query.data, .key = key.data, .value = value.data,
                              .output = output.data, .probabilities = probabilities.data,
                              ATTENTION_SHAPE};
  check_attention_shape(&args, &call, key_mask);
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

KERNEL_ENTRY(attention_backward) {
  READ_KERNEL_ARGUMENTS(ATTENTION_BACKWARD)
  attention_arguments call = {
      .query = query.data, .key = key.data, .value = value.data,
      .saved_probabilities = probabilities.data, .grad_output = grad_output.data,
      .grad_query = grad_query.data, .grad_key = grad_key.data, .grad_value = grad_value.data,
      ATTENTION_SHAPE};
  check_attention_shape(&args, &call, key_mask);
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

/* Every array after the first holds as many elements as the first (elementwise kernels). */
static bool require_same_length(arguments *args, size_t length, size_t count,
                                const char *const names[], const float_array arrays[]) {
  for (size_t i = 0; i < count; i++) arguments_require(args, names[i], arrays[i].length, length);
  return !args->failed;
}

KERNEL_ENTRY(swiglu) {
  READ_KERNEL_ARGUMENTS(SWIGLU)
  const char *const names[] = {"up", "output"};
  if (!require_same_length(&args, gate.length, 2, names, (float_array[]){up, output}))
    return NULL;
  kernel_swiglu(gate.data, up.data, output.data, (int64_t)gate.length);
  return NULL;
}

KERNEL_ENTRY(swiglu_backward) {
  READ_KERNEL_ARGUMENTS(SWIGLU_BACKWARD)
  const char *const names[] = {"up", "gradOutput", "gradGate", "gradUp"};
  if (!require_same_length(&args, gate.length, 4, names,
                           (float_array[]){up, grad_output, grad_gate, grad_up}))
    return NULL;
  kernel_swiglu_backward(gate.data, up.data, grad_output.data, grad_gate.data, grad_up.data,
                         (int64_t)gate.length);
  return NULL;
}

KERNEL_ENTRY(gelu) {
  READ_KERNEL_ARGUMENTS(GELU)
  const char *const names[] = {"output"};
  if (!require_same_length(&args, input.length, 1, names, (float_array[]){output})) return NULL;
  kernel_gelu(input.data, output.data, (int64_t)input.length);
  return NULL;
}

KERNEL_ENTRY(gelu_backward) {
  READ_KERNEL_ARGUMENTS(GELU_BACKWARD)
  const char *const names[] = {"gradOutput", "gradInput"};
  if (!require_same_length(&args, input.length, 2, names,
                           (float_array[]){grad_output, grad_input}))
    return NULL;
  kernel_gelu_backward(input.data, grad_output.data, grad_input.data, (int64_t)input.length);
  return NULL;
}

KERNEL_ENTRY(adamw) {
  READ_KERNEL_ARGUMENTS(ADAMW)
  const char *const names[] = {"gradient", "firstMoment", "secondMoment"};
  if (!require_same_length(&args, parameter.length, 3, names,
                           (float_array[]){gradient, first_moment, second_moment}))
    return NULL;
  adamw_arguments call = {
      .parameter = parameter.data, .gradient = gradient.data,
      .first_moment = first_moment.data, .second_moment = second_moment.data,
      .length = (int64_t)parameter.length, .learning_rate = learning_rate, .beta1 = beta1,
      .beta2 = beta2, .epsilon = epsilon, .weight_decay = weight_decay, .step = step,
      .gradient_scale = gradient_scale};
  kernel_adamw(&call);
  return NULL;
}

KERNEL_ENTRY(sum_of_squares) {
  READ_KERNEL_ARGUMENTS(SUM_OF_SQUARES)
  if (args.failed) return NULL;
  napi_value result;
  napi_create_double(env, kernel_sum_of_squares(input.data, (int64_t)input.length), &result);
  return result;
}

KERNEL_ENTRY(axpy) {
  READ_KERNEL_ARGUMENTS(AXPY)
  const char *const names[] = {"y"};
  if (!require_same_length(&args, x.length, 1, names, (float_array[]){y})) return NULL;
  kernel_axpy((float)alpha, x.data, y.data, (int64_t)x.length);
  return NULL;
}

/* ---- exact element-wise kernels ---- */

KERNEL_ENTRY(add_scaled) {
  READ_KERNEL_ARGUMENTS(ADD_SCALED)
  const char *const names[] = {"b", "output"};
  if (!require_same_length(&args, a.length, 2, names, (float_array[]){b, output})) return NULL;
  kernel_add_scaled(a.data, b.data, scale, output.data, (int64_t)a.length);
  return NULL;
}
