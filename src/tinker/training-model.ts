import { checkJson, type TinkerConnection } from './connection.js';
import {
  adamParamsBody,
  getInfoResponseSchema,
  optimStepResponseSchema,
  routes,
  weightsPathResponseSchema,
} from './json-wire.js';
import { encodeForwardBackwardRequest } from './wire-codec.js';
import {
  defaultAdamParameters,
  type AdamParameters,
  type Datum,
  type ForwardBackwardResult,
} from './types.js';

/**
 * Computes a custom loss from per-token log-probs (one array per datum) and returns its value,
 * its gradient with respect to each log-prob (same layout) and any metrics.
 */
export type CustomLoss = (logProbs: number[][]) => {
  loss: number;
  gradients: number[][];
  metrics?: Record<string, number>;
};

/**
 * One LoRA model on the service (a `model_id`). Requests carry increasing `seq_id`s (from 1, as
 * the SDK numbers them), which the service uses to keep one model's requests in order.
 */
export class TinkerTrainingModel {
  private sequence = 0;

  constructor(
    private readonly client: TinkerConnection,
    readonly modelId: string,
  ) {}

  private nextSeqId(): number {
    return ++this.sequence;
  }

  private async runForwardBackward(
    data: Datum[],
    lossFunction: string,
    lossFunctionConfig: Record<string, number>,
    forwardOnly: boolean,
  ): Promise<ForwardBackwardResult> {
    const protobuf = encodeForwardBackwardRequest({
      modelId: this.modelId,
      seqId: this.nextSeqId(),
      data,
      lossFunction,
      lossFunctionConfig,
      forwardOnly,
    });
    return (await this.client.submit(
      routes.forwardBackward,
      { protobuf },
      'forwardBackward',
    )) as ForwardBackwardResult;
  }

  /** Log-probs (`logprobs` per datum) and the loss, without gradients. */
  forward(data: Datum[], lossFunction: string, config: Record<string, number> = {}) {
    return this.runForwardBackward(data, lossFunction, config, true);
  }

  /** Accumulates the loss's gradient on the service (applied by the next optimStep). */
  forwardBackward(data: Datum[], lossFunction: string, config: Record<string, number> = {}) {
    return this.runForwardBackward(data, lossFunction, config, false);
  }

  /**
   * Any loss of the per-token log-probs, as the SDK's forward_backward_custom does it: a
   * forward pass for the log-probs, the loss and its gradient here, then a cross-entropy
   * backward weighted by minus that gradient (the service's cross-entropy is
   * −Σ weights·logprobs, so its gradient is then exactly the custom loss's).
   */
  async forwardBackwardCustom(data: Datum[], loss: CustomLoss): Promise<ForwardBackwardResult> {
    const forwardData = data.map((datum) => ({
      inputTokens: datum.inputTokens,
      lossInputs: { target_tokens: datum.lossInputs.target_tokens! },
    }));
    const forward = await this.forward(forwardData, 'cross_entropy');
    const logProbs = forward.lossOutputs.map((outputs) => outputs.logprobs!.data);
    const computed = loss(logProbs);
    const weighted = data.map((datum, index) => ({
      inputTokens: datum.inputTokens,
      lossInputs: {
        target_tokens: datum.lossInputs.target_tokens!,
        weights: {
          dtype: 'float32' as const,
          data: computed.gradients[index]!.map((gradient) => -gradient),
          shape: [computed.gradients[index]!.length],
        },
      },
    }));
    const backward = await this.forwardBackward(weighted, 'cross_entropy');
    return {
      lossOutputs: backward.lossOutputs,
      metrics: { ...backward.metrics, ...computed.metrics, 'custom_loss:sum': computed.loss },
    };
  }

  /** One Adam step from the accumulated gradients. */
  async optimStep(adam: Partial<AdamParameters> = {}): Promise<Record<string, number>> {
    const result = await this.client.submit(
      routes.optimStep,
      {
        json: {
          adam_params: adamParamsBody({ ...defaultAdamParameters, ...adam }),
          model_id: this.modelId,
          seq_id: this.nextSeqId(),
          type: 'optim_step',
        },
      },
      'json',
    );
    return checkJson(routes.optimStep, result, optimStepResponseSchema).metrics ?? {};
  }

  /** Saves weights and optimizer state under `name`; returns their `tinker://` path. */
  async saveWeights(name: string): Promise<string> {
    const result = await this.client.submit(
      routes.saveWeights,
      {
        json: {
          model_id: this.modelId,
          path: name,
          seq_id: this.nextSeqId(),
          overwrite: false,
          type: 'save_weights',
        },
      },
      'json',
    );
    return checkJson(routes.saveWeights, result, weightsPathResponseSchema).path;
  }

  /** Restores weights (and the optimizer state when asked) saved by saveWeights. */
  async loadWeights(path: string, options: { optimizer: boolean }): Promise<void> {
    await this.client.submit(
      routes.loadWeights,
      {
        json: {
          model_id: this.modelId,
          seq_id: this.nextSeqId(),
          path,
          optimizer: options.optimizer,
          type: 'load_weights',
        },
      },
      'json',
    );
  }

  /** Saves weights for sampling under `name`; returns their `tinker://` path. */
  async saveWeightsForSampler(name: string): Promise<string> {
    const result = await this.client.submit(
      routes.saveWeightsForSampler,
      {
        json: {
          model_id: this.modelId,
          path: name,
          seq_id: this.nextSeqId(),
          type: 'save_weights_for_sampler',
        },
      },
      'json',
    );
    return checkJson(routes.saveWeightsForSampler, result, weightsPathResponseSchema).path;
  }

  async info() {
    return this.client.post(
      routes.getInfo,
      { model_id: this.modelId, type: 'get_info' },
      getInfoResponseSchema,
    );
  }
}
