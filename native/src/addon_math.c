/* N-API entry points for matmul, the softmax family and the norms: validate, then call. */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"

/* Elements an operand spans: the last batch item's start plus one item (0 if empty). */
static double batched_span(int64_t batch, int64_t stride, double item) {
  if (batch == 0 || item == 0) return 0;
  return (double)(batch - 1) * (double)stride + item;
}

static napi_value matmul(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "matmul", 13)) return NULL;
  float_array a = arguments_floats(&args, 0, "a", false);
  float_array b = arguments_floats(&args, 1, "b", false);
  float_array c = arguments_floats(&args, 2, "c", false);
  matmul_arguments call = {
      .a = a.data, .b = b.data, .c = c.data,
      .batch = arguments_size(&args, 3, "batch"),
      .m = arguments_size(&args, 4, "m"),
      .n = arguments_size(&args, 5, "n"),
      .k = arguments_size(&args, 6, "k"),
      .transpose_a = arguments_boolean(&args, 7, "transposeA"),
      .transpose_b = arguments_boolean(&args, 8, "transposeB"),
      .stride_a = arguments_size(&args, 9, "strideA"),
      .stride_b = arguments_size(&args, 10, "strideB"),
      .alpha = (float)arguments_number(&args, 11, "alpha"),
      .beta = (float)arguments_number(&args, 12, "beta"),
  };
  arguments_require(&args, "a", a.length,
                    batched_span(call.batch, call.stride_a, (double)call.m * call.k));
  arguments_require(&args, "b", b.length,
                    batched_span(call.batch, call.stride_b, (double)call.k * call.n));
  arguments_require(&args, "c", c.length, (double)call.batch * call.m * call.n);
  if (args.failed) return NULL;
  kernel_matmul(&call);
  return NULL;
}

static napi_value softmax_common(napi_env env, napi_callback_info info, const char *name,
                                 bool logarithm) {
  arguments args;
  if (!arguments_read(&args, env, info, name, 4)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array output = arguments_floats(&args, 1, "output", false);
  int64_t rows = arguments_size(&args, 2, "rows");
  int64_t columns = arguments_size(&args, 3, "columns");
  arguments_require(&args, "input", input.length, (double)rows * columns);
  arguments_require(&args, "output", output.length, (double)rows * columns);
  if (args.failed) return NULL;
  kernel_softmax(input.data, output.data, rows, columns, logarithm);
  return NULL;
}

static napi_value softmax(napi_env env, napi_callback_info info) {
  return softmax_common(env, info, "softmax", false);
}

static napi_value log_softmax(napi_env env, napi_callback_info info) {
  return softmax_common(env, info, "logSoftmax", true);
}

/* Targets index into each row: checked here so a bad token id cannot read out of bounds. */
static void check_targets(arguments *args, int_array targets, int64_t rows, int64_t columns) {
  arguments_require(args, "targets", targets.length, (double)rows);
  if (args->failed) return;
  for (int64_t r = 0; r < rows; r++) {
    int32_t target = targets.data[r];
    if (target < 0 || target >= columns) {
      arguments_range_error(args, "target %d of row %lld is outside [0, %lld)", target,
                            (long long)r, (long long)columns);
      return;
    }
  }
}

static napi_value gather_log_probs(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "gatherLogProbs", 7)) return NULL;
  float_array logits = arguments_floats(&args, 0, "logits", false);
  int_array targets = arguments_ints(&args, 1, "targets");
  int64_t rows = arguments_size(&args, 2, "rows");
  int64_t columns = arguments_size(&args, 3, "columns");
  float_array log_probs = arguments_floats(&args, 4, "logProbs", false);
  float_array entropy = arguments_floats(&args, 5, "entropy", true);
  float_array log_sum_exp = arguments_floats(&args, 6, "logSumExp", true);
  arguments_require(&args, "logits", logits.length, (double)rows * columns);
  arguments_require(&args, "logProbs", log_probs.length, (double)rows);
  if (entropy.data) arguments_require(&args, "entropy", entropy.length, (double)rows);
  if (log_sum_exp.data) arguments_require(&args, "logSumExp", log_sum_exp.length, (double)rows);
  check_targets(&args, targets, rows, columns);
  if (args.failed) return NULL;
  gather_arguments call = {logits.data, targets.data, rows, columns,
                           log_probs.data, entropy.data, log_sum_exp.data};
  kernel_gather_log_probs(&call);
  return NULL;
}

static napi_value gather_log_probs_backward(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "gatherLogProbsBackward", 8)) return NULL;
  float_array logits = arguments_floats(&args, 0, "logits", false);
  int_array targets = arguments_ints(&args, 1, "targets");
  int64_t rows = arguments_size(&args, 2, "rows");
  int64_t columns = arguments_size(&args, 3, "columns");
  float_array log_sum_exp = arguments_floats(&args, 4, "logSumExp", false);
  float_array grad_log_probs = arguments_floats(&args, 5, "gradLogProbs", false);
  float_array grad_entropy = arguments_floats(&args, 6, "gradEntropy", true);
  float_array grad_logits = arguments_floats(&args, 7, "gradLogits", false);
  arguments_require(&args, "logits", logits.length, (double)rows * columns);
  arguments_require(&args, "gradLogits", grad_logits.length, (double)rows * columns);
  arguments_require(&args, "logSumExp", log_sum_exp.length, (double)rows);
  arguments_require(&args, "gradLogProbs", grad_log_probs.length, (double)rows);
  if (grad_entropy.data) arguments_require(&args, "gradEntropy", grad_entropy.length, (double)rows);
  check_targets(&args, targets, rows, columns);
  if (args.failed) return NULL;
  gather_backward_arguments call = {logits.data, targets.data, rows, columns, log_sum_exp.data,
                                    grad_log_probs.data, grad_entropy.data, grad_logits.data};
  kernel_gather_log_probs_backward(&call);
  return NULL;
}

static napi_value rms_norm(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "rmsNorm", 7)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array weight = arguments_floats(&args, 1, "weight", false);
  float_array output = arguments_floats(&args, 2, "output", false);
  float_array inverse_rms = arguments_floats(&args, 3, "inverseRms", false);
  int64_t rows = arguments_size(&args, 4, "rows");
  int64_t columns = arguments_size(&args, 5, "columns");
  double epsilon = arguments_number(&args, 6, "epsilon");
  arguments_require(&args, "input", input.length, (double)rows * columns);
  arguments_require(&args, "output", output.length, (double)rows * columns);
  arguments_require(&args, "weight", weight.length, (double)columns);
  arguments_require(&args, "inverseRms", inverse_rms.length, (double)rows);
  if (args.failed) return NULL;
  norm_arguments call = {.input = input.data, .weight = weight.data, .output = output.data,
                         .inverse_scale = inverse_rms.data, .rows = rows, .columns = columns,
                         .epsilon = (float)epsilon};
  kernel_rms_norm(&call);
  return NULL;
}

static napi_value rms_norm_backward(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "rmsNormBackward", 8)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array weight = arguments_floats(&args, 1, "weight", false);
  float_array inverse_rms = arguments_floats(&args, 2, "inverseRms", false);
  float_array grad_output = arguments_floats(&args, 3, "gradOutput", false);
  float_array grad_input = arguments_floats(&args, 4, "gradInput", false);
  float_array grad_weight = arguments_floats(&args, 5, "gradWeight", true);
  int64_t rows = arguments_size(&args, 6, "rows");
  int64_t columns = arguments_size(&args, 7, "columns");
  double elements = (double)rows * columns;
  arguments_require(&args, "input", input.length, elements);
  arguments_require(&args, "gradOutput", grad_output.length, elements);
  arguments_require(&args, "gradInput", grad_input.length, elements);
  arguments_require(&args, "weight", weight.length, (double)columns);
  if (grad_weight.data) arguments_require(&args, "gradWeight", grad_weight.length, (double)columns);
  arguments_require(&args, "inverseRms", inverse_rms.length, (double)rows);
  if (args.failed) return NULL;
  norm_backward_arguments call = {
      .input = input.data, .weight = weight.data, .inverse_scale = inverse_rms.data,
      .grad_output = grad_output.data, .grad_input = grad_input.data,
      .grad_weight = grad_weight.data, .rows = rows, .columns = columns};
  kernel_rms_norm_backward(&call);
  return NULL;
}

static napi_value layer_norm(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "layerNorm", 9)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array weight = arguments_floats(&args, 1, "weight", false);
  float_array bias = arguments_floats(&args, 2, "bias", true);
  float_array output = arguments_floats(&args, 3, "output", false);
  float_array mean = arguments_floats(&args, 4, "mean", false);
  float_array inverse_std = arguments_floats(&args, 5, "inverseStd", false);
  int64_t rows = arguments_size(&args, 6, "rows");
  int64_t columns = arguments_size(&args, 7, "columns");
  double epsilon = arguments_number(&args, 8, "epsilon");
  arguments_require(&args, "input", input.length, (double)rows * columns);
  arguments_require(&args, "output", output.length, (double)rows * columns);
  arguments_require(&args, "weight", weight.length, (double)columns);
  if (bias.data) arguments_require(&args, "bias", bias.length, (double)columns);
  arguments_require(&args, "mean", mean.length, (double)rows);
  arguments_require(&args, "inverseStd", inverse_std.length, (double)rows);
  if (args.failed) return NULL;
  norm_arguments call = {.input = input.data, .weight = weight.data, .bias = bias.data,
                         .output = output.data, .mean = mean.data,
                         .inverse_scale = inverse_std.data, .rows = rows, .columns = columns,
                         .epsilon = (float)epsilon};
  kernel_layer_norm(&call);
  return NULL;
}

static napi_value layer_norm_backward(napi_env env, napi_callback_info info) {
  arguments args;
  if (!arguments_read(&args, env, info, "layerNormBackward", 10)) return NULL;
  float_array input = arguments_floats(&args, 0, "input", false);
  float_array weight = arguments_floats(&args, 1, "weight", false);
  float_array mean = arguments_floats(&args, 2, "mean", false);
  float_array inverse_std = arguments_floats(&args, 3, "inverseStd", false);
  float_array grad_output = arguments_floats(&args, 4, "gradOutput", false);
  float_array grad_input = arguments_floats(&args, 5, "gradInput", false);
  float_array grad_weight = arguments_floats(&args, 6, "gradWeight", true);
  float_array grad_bias = arguments_floats(&args, 7, "gradBias", true);
  int64_t rows = arguments_size(&args, 8, "rows");
  int64_t columns = arguments_size(&args, 9, "columns");
  double elements = (double)rows * columns;
  arguments_require(&args, "input", input.length, elements);
  arguments_require(&args, "gradOutput", grad_output.length, elements);
  arguments_require(&args, "gradInput", grad_input.length, elements);
  arguments_require(&args, "weight", weight.length, (double)columns);
  if (grad_weight.data) arguments_require(&args, "gradWeight", grad_weight.length, (double)columns);
  if (grad_bias.data) arguments_require(&args, "gradBias", grad_bias.length, (double)columns);
  arguments_require(&args, "mean", mean.length, (double)rows);
  arguments_require(&args, "inverseStd", inverse_std.length, (double)rows);
  if (args.failed) return NULL;
  norm_backward_arguments call = {
      .input = input.data, .weight = weight.data, .mean = mean.data,
      .inverse_scale = inverse_std.data, .grad_output = grad_output.data,
      .grad_input = grad_input.data, .grad_weight = grad_weight.data,
      .grad_bias = grad_bias.data, .rows = rows, .columns = columns};
  kernel_layer_norm_backward(&call);
  return NULL;
}

void addon_register_math(napi_env env, napi_value exports) {
  const addon_function functions[] = {
      {"matmul", matmul},
      {"softmax", softmax},
      {"logSoftmax", log_softmax},
      {"gatherLogProbs", gather_log_probs},
      {"gatherLogProbsBackward", gather_log_probs_backward},
      {"rmsNorm", rms_norm},
      {"rmsNormBackward", rms_norm_backward},
      {"layerNorm", layer_norm},
      {"layerNormBackward", layer_norm_backward},
  };
  addon_export(env, exports, functions, sizeof functions / sizeof functions[0]);
}
