/* N-API entry points for matmul, the softmax family and the norms: read, validate, call. */
#include "addon.h"

#include "arguments.h"
#include "kernels.h"

/* Elements an operand spans: the last batch item's start plus one item (0 if empty). */
static double batched_span(int64_t batch, int64_t stride, double item) {
  if (batch == 0 || item == 0) return 0;
  return (double)(batch - 1) * (double)stride + item;
}

KERNEL_ENTRY(matmul) {
  READ_KERNEL_ARGUMENTS(MATMUL)
  arguments_require(&args, "a", a.length, batched_span(batch, stride_a, (double)m * k));
  arguments_require(&args, "b", b.length, batched_span(batch, stride_b, (double)k * n));
  arguments_require(&args, "c", c.length, (double)batch * m * n);
  if (args.failed) return NULL;
  matmul_arguments call = {
      .a = a.data, .b = b.data, .c = c.data, .batch = batch, .m = m, .n = n, .k = k,
      .transpose_a = transpose_a, .transpose_b = transpose_b, .stride_a = stride_a,
      .stride_b = stride_b, .alpha = (float)alpha, .beta = (float)beta};
  kernel_matmul(&call);
  return NULL;
}

/* Input and output of a row-wise softmax hold rows × columns. */
static bool check_rows(arguments *args, float_array input, float_array output, int64_t rows,
                       int64_t columns) {
  arguments_require(args, "input", input.length, (double)rows * columns);
  arguments_require(args, "output", output.length, (double)rows * columns);
  return !args->failed;
}

KERNEL_ENTRY(softmax) {
  READ_KERNEL_ARGUMENTS(SOFTMAX)
  if (!check_rows(&args, input, output, rows, columns)) return NULL;
  kernel_softmax(input.data, output.data, rows, columns, false);
  return NULL;
}

KERNEL_ENTRY(log_softmax) {
  READ_KERNEL_ARGUMENTS(LOG_SOFTMAX)
  if (!check_rows(&args, input, output, rows, columns)) return NULL;
  kernel_softmax(input.data, output.data, rows, columns, true);
  return NULL;
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

/* An optional per-row array, when given, holds one value per row. */
static void require_optional_rows(arguments *args, const char *name, float_array array,
                                  int64_t rows) {
  if (array.data) arguments_require(args, name, array.length, (double)rows);
}

KERNEL_ENTRY(gather_log_probs) {
  READ_KERNEL_ARGUMENTS(GATHER_LOG_PROBS)
  arguments_require(&args, "logits", logits.length, (double)rows * columns);
  arguments_require(&args, "logProbs", log_probs.length, (double)rows);
  require_optional_rows(&args, "entropy", entropy, rows);
  require_optional_rows(&args, "logSumExp", log_sum_exp, rows);
  check_targets(&args, targets, rows, columns);
  if (args.failed) return NULL;
  gather_arguments call = {logits.data, targets.data, rows, columns,
                           log_probs.data, entropy.data, log_sum_exp.data};
  kernel_gather_log_probs(&call);
  return NULL;
}

KERNEL_ENTRY(gather_log_probs_backward) {
  READ_KERNEL_ARGUMENTS(GATHER_LOG_PROBS_BACKWARD)
  arguments_require(&args, "logits", logits.length, (double)rows * columns);
  arguments_require(&args, "gradLogits", grad_logits.length, (double)rows * columns);
  arguments_require(&args, "logSumExp", log_sum_exp.length, (double)rows);
  arguments_require(&args, "gradLogProbs", grad_log_probs.length, (double)rows);
  require_optional_rows(&args, "gradEntropy", grad_entropy, rows);
  check_targets(&args, targets, rows, columns);
  if (args.failed) return NULL;
  gather_backward_arguments call = {logits.data, targets.data, rows, columns, log_sum_exp.data,
                                    grad_log_probs.data, grad_entropy.data, grad_logits.data};
  kernel_gather_log_probs_backward(&call);
  return NULL;
}

KERNEL_ENTRY(sample_rows) {
  READ_KERNEL_ARGUMENTS(SAMPLE_ROWS)
  arguments_require(&args, "logits", logits.length, (double)rows * columns);
  arguments_require(&args, "uniforms", uniforms.length, (double)rows);
  arguments_require(&args, "tokens", tokens.length, (double)rows);
  arguments_require(&args, "maximum", maximum.length, (double)rows);
  arguments_require(&args, "total", total.length, (double)rows);
  if (args.failed) return NULL;
  sample_rows_arguments call = {logits.data, rows,         columns,    uniforms.data,
                                tokens.data, maximum.data, total.data};
  kernel_sample_rows(&call);
  return NULL;
}

/*
 * The arrays every norm's forward shares, checked (per-element arrays hold rows × columns, the
 * weight one row, the saved inverse scale one value per row) and set in `call`.
 */
static bool norm_forward_call(arguments *args, float_array input, float_array weight,
                              float_array output, float_array inverse_scale,
                              const char *inverse_scale_name, int64_t rows, int64_t columns,
                              double epsilon, norm_arguments *call) {
  arguments_require(args, "input", input.length, (double)rows * columns);
  arguments_require(args, "weight", weight.length, (double)columns);
  arguments_require(args, "output", output.length, (double)rows * columns);
  arguments_require(args, inverse_scale_name, inverse_scale.length, (double)rows);
  *call = (norm_arguments){.input = input.data, .weight = weight.data, .output = output.data,
                           .inverse_scale = inverse_scale.data, .rows = rows, .columns = columns,
                           .epsilon = (float)epsilon};
  return !args->failed;
}

/* ...and every norm's backward (gradients accumulated; the weight's gradient optional). */
static bool norm_backward_call(arguments *args, float_array input, float_array weight,
                               float_array inverse_scale, const char *inverse_scale_name,
                               float_array grad_output, float_array grad_input,
                               float_array grad_weight, int64_t rows, int64_t columns,
                               norm_backward_arguments *call) {
  arguments_require(args, "input", input.length, (double)rows * columns);
  arguments_require(args, "weight", weight.length, (double)columns);
  arguments_require(args, "gradOutput", grad_output.length, (double)rows * columns);
  arguments_require(args, "gradInput", grad_input.length, (double)rows * columns);
  if (grad_weight.data) arguments_require(args, "gradWeight", grad_weight.length, (double)columns);
  arguments_require(args, inverse_scale_name, inverse_scale.length, (double)rows);
  *call = (norm_backward_arguments){
      .input = input.data, .weight = weight.data, .inverse_scale = inverse_scale.data,
      .grad_output = grad_output.data, .grad_input = grad_input.data,
      .grad_weight = grad_weight.data, .rows = rows, .columns = columns};
  return !args->failed;
}

KERNEL_ENTRY(rms_norm) {
  READ_KERNEL_ARGUMENTS(RMS_NORM)
  norm_arguments call;
  if (!norm_forward_call(&args, input, weight, output, inverse_rms, "inverseRms", rows, columns,
                         epsilon, &call))
    return NULL;
  kernel_rms_norm(&call);
  return NULL;
}

KERNEL_ENTRY(rms_norm_backward) {
  READ_KERNEL_ARGUMENTS(RMS_NORM_BACKWARD)
  norm_backward_arguments call;
  if (!norm_backward_call(&args, input, weight, inverse_rms, "inverseRms", grad_output,
                          grad_input, grad_weight, rows, columns, &call))
    return NULL;
  kernel_rms_norm_backward(&call);
  return NULL;
}

/* LayerNorm also has a bias (optional) and saves each row's mean. */
KERNEL_ENTRY(layer_norm) {
  READ_KERNEL_ARGUMENTS(LAYER_NORM)
  if (bias.data) arguments_require(&args, "bias", bias.length, (double)columns);
  arguments_require(&args, "mean", mean.length, (double)rows);
  norm_arguments call;
  if (!norm_forward_call(&args, input, weight, output, inverse_std, "inverseStd", rows, columns,
                         epsilon, &call))
    return NULL;
  call.bias = bias.data;
  call.mean = mean.data;
  kernel_layer_norm(&call);
  return NULL;
}

KERNEL_ENTRY(layer_norm_backward) {
  READ_KERNEL_ARGUMENTS(LAYER_NORM_BACKWARD)
  if (grad_bias.data) arguments_require(&args, "gradBias", grad_bias.length, (double)columns);
  arguments_require(&args, "mean", mean.length, (double)rows);
  norm_backward_arguments call;
  if (!norm_backward_call(&args, input, weight, inverse_std, "inverseStd", grad_output,
                          grad_input, grad_weight, rows, columns, &call))
    return NULL;
  call.mean = mean.data;
  call.grad_bias = grad_bias.data;
  kernel_layer_norm_backward(&call);
  return NULL;
}

/* ---- exact element-wise kernels: the residual add fused into the RMSNorm after it ---- */

KERNEL_ENTRY(add_rms_norm) {
  READ_KERNEL_ARGUMENTS(ADD_RMS_NORM)
  add_norm_arguments call;
  arguments_require(&args, "input", input.length, (double)rows * columns);
  arguments_require(&args, "residual", residual.length, (double)rows * columns);
  if (!norm_forward_call(&args, sum, weight, output, inverse_rms, "inverseRms", rows, columns,
                         epsilon, &call.norm))
    return NULL;
  call.base = input.data;
  call.residual = residual.data;
  call.sum = sum.data;
  kernel_add_rms_norm(&call);
  return NULL;
}
