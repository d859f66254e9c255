"""A cookbook-style loop of the official Tinker Python SDK against `teamtr serve --tinker`.

Run by src/serve/tinker/sdk-conformance.test.ts, which extracts the SDK's source into a temporary
directory, finds a Python that can import it, starts the server and passes where things are:

    python tinker-sdk-conformance.py probe
    python tinker-sdk-conformance.py train    BASE_URL BASE_MODEL STATE_JSON TOKEN_TEXTS_JSON
    python tinker-sdk-conformance.py restart  BASE_URL BASE_MODEL STATE_JSON

It uses the SDK's public API only: `tinker.ServiceClient(base_url=...)` with no private options,
the API key from TINKER_API_KEY. Each check prints one line `ok <name>: <detail>`; the first one
that fails raises with what was expected and what came back (exit status 1). `train` writes what
`restart` needs (a sampler path and its seeded samples) to STATE_JSON, and the measured figures.

Environment: TEAMTR_PYTHON_PREPEND / TEAMTR_PYTHON_APPEND are os.pathsep-separated directories
put before / after this interpreter's own sys.path (the SDK's source goes before; Debian's
dist-packages, where its HTTP and protobuf dependencies come from, after).
"""

import json
import os
import sys
import time

for _entry in reversed(os.environ.get("TEAMTR_PYTHON_PREPEND", "").split(os.pathsep)):
    if _entry:
        sys.path.insert(0, _entry)
for _entry in os.environ.get("TEAMTR_PYTHON_APPEND", "").split(os.pathsep):
    if _entry:
        sys.path.append(_entry)


def probe():
    """Prints the versions of what the SDK needs, or fails saying what is missing."""
    import numpy
    import pydantic
    import torch

    if int(pydantic.VERSION.split(".")[0]) != 2:
        raise SystemExit(f"pydantic {pydantic.VERSION} (the SDK's types need pydantic 2)")
    torch.zeros(2).numpy()  # forward_backward_custom hands torch gradients to numpy
    import tinker

    print(json.dumps({
        "python": sys.version.split()[0],
        "pydantic": pydantic.VERSION,
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "tinker": tinker.__version__,
    }))


def check(name, condition, detail):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok {name}: {detail}", flush=True)


def close(a, b, tolerance=1e-4):
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def all_close(xs, ys, tolerance=1e-4):
    return len(xs) == len(ys) and all(close(x, y, tolerance) for x, y in zip(xs, ys))


def next_token_datum(types, tokens, weights=None):
    """Each token predicts the next; cross-entropy weights 1 unless given."""
    inputs, targets = tokens[:-1], tokens[1:]
    return types.Datum(
        model_input=types.ModelInput.from_ints(inputs),
        loss_fn_inputs={
            "target_tokens": targets,
            "weights": weights if weights is not None else [1.0] * len(targets),
        },
    )


def forward_logprobs(types, training_client, data):
    output = training_client.forward(data, "cross_entropy").result()
    return [list(map(float, item["logprobs"].data)) for item in output.loss_fn_outputs]


TRAINING_SEQUENCE = [286, 40, 71, 103, 72, 44, 110, 33, 97, 52, 88, 61]
PROMPT = [286, 17, 42, 99, 5, 64]


def train(base_url, base_model, state_path, token_texts_path):
    import tinker
    from tinker import types

    figures = {}
    service = tinker.ServiceClient(base_url=base_url)
    capabilities = service.get_server_capabilities()
    names = [model.model_name for model in capabilities.supported_models]
    check("capabilities", base_model in names, f"supported models {names}")

    training = service.create_lora_training_client(base_model=base_model, rank=4)
    info = training.get_info()
    check("lora training client", info.lora_rank == 4, f"model {info.model_id}, rank {info.lora_rank}")

    datum = next_token_datum(types, TRAINING_SEQUENCE)
    losses = []
    for _ in range(6):
        result = training.forward_backward([datum], "cross_entropy").result()
        losses.append(result.metrics["loss:sum"])
        training.optim_step(types.AdamParams(learning_rate=2e-2)).result()
    check("cross_entropy loss falls", losses[-1] < losses[0] - 0.1, f"loss:sum {losses}")

    # importance_sampling on a completion sampled from these very weights: every ratio is 1,
    # so the loss is −Σ advantages, and forward's log-probs equal the sampler's.
    sampler = training.save_weights_and_get_sampling_client()
    sampled = sampler.sample(
        types.ModelInput.from_ints(PROMPT), 1, types.SamplingParams(max_tokens=6, seed=11)
    ).result().sequences[0]
    check("save_weights_and_get_sampling_client", len(sampled.tokens) > 0,
          f"sampled {sampled.tokens} with log-probs {[round(x, 3) for x in sampled.logprobs]}")
    sequence = PROMPT + list(sampled.tokens)
    pad = [0.0] * (len(PROMPT) - 1)
    policy_datum = types.Datum(
        model_input=types.ModelInput.from_ints(sequence[:-1]),
        loss_fn_inputs={
            "target_tokens": sequence[1:],
            "logprobs": pad + list(sampled.logprobs),
            "advantages": pad + [1.0] * len(sampled.tokens),
        },
    )
    result = training.forward_backward([policy_datum], "importance_sampling").result()
    scored = list(result.loss_fn_outputs[0]["logprobs"].data)[len(pad):]
    check("importance_sampling loss", close(result.metrics["loss:sum"], -len(sampled.tokens), 1e-3),
          f"loss:sum {result.metrics['loss:sum']} for {len(sampled.tokens)} tokens of advantage 1")
    check("sampler log-probs equal forward's", all_close(scored, list(sampled.logprobs), 1e-3),
          f"forward {[round(x, 4) for x in scored]}")

    # forward_backward_custom: −Σ logprobs is cross-entropy, so both give the same loss:sum.
    import torch

    def negative_log_likelihood(data, logprobs_list):
        loss = -torch.stack([logprobs.sum() for logprobs in logprobs_list]).sum()
        return loss, {"custom_nll": float(loss)}

    custom = training.forward_backward_custom([datum], negative_log_likelihood).result()
    plain = training.forward([datum], "cross_entropy").result()
    check("forward_backward_custom",
          close(custom.metrics["custom_nll"], plain.metrics["loss:sum"], 1e-4),
          f"custom loss {custom.metrics['custom_nll']}, cross_entropy {plain.metrics['loss:sum']}")
    training.optim_step(types.AdamParams(learning_rate=1e-3)).result()

    # Seeds: on the random base model every draw is far from deterministic.
    base_sampler = service.create_sampling_client(base_model=base_model)
    check("get_base_model", base_sampler.get_base_model() == base_model, base_model)
    prompt = types.ModelInput.from_ints(PROMPT)

    def draw(seed):
        response = base_sampler.sample(prompt, 2, types.SamplingParams(max_tokens=8, seed=seed)).result()
        return [list(sequence.tokens) for sequence in response.sequences]

    first, second = draw(None), draw(None)
    check("unseeded samples differ", first != second, f"{first} vs {second}")
    seeded = draw(1234)
    check("seeded samples repeat", seeded == draw(1234), f"{seeded}")

    # Stop strings, decoded with the model's tokenizer: the sample ends at the token whose text
    # completes the stop string (kept, as a stop token is).
    with open(token_texts_path) as handle:
        texts = json.load(handle)
    long_draw = base_sampler.sample(prompt, 1, types.SamplingParams(max_tokens=12, seed=99)).result()
    tokens = list(long_draw.sequences[0].tokens)
    stop_at = next(i for i in range(3, len(tokens)) if texts[tokens[i]].strip())
    stop_text = texts[tokens[stop_at]].strip()[:1]
    running = ""
    expected_end = None
    for index, token in enumerate(tokens):
        running += texts[token]
        if stop_text in running:
            expected_end = index + 1
            break
    stopped = base_sampler.sample(
        prompt, 1, types.SamplingParams(max_tokens=12, seed=99, stop=[stop_text])
    ).result().sequences[0]
    check("stop strings", list(stopped.tokens) == tokens[:expected_end] and stopped.stop_reason == "stop",
          f"stop {stop_text!r}: {list(stopped.tokens)} ({stopped.stop_reason}) from {tokens}")

    # compute_logprobs and top-k prompt log-probs against the training model's own scoring.
    scorer_path = training.save_weights_for_sampler("scorer").result().path
    scorer = service.create_sampling_client(model_path=scorer_path)
    computed = scorer.compute_logprobs(prompt).result()
    forward = forward_logprobs(types, training, [next_token_datum(types, PROMPT)])[0]
    check("compute_logprobs", computed[0] is None and all_close(computed[1:], forward),
          f"{[None if x is None else round(x, 4) for x in computed]}")
    k = 3
    response = scorer.sample(prompt, 1, types.SamplingParams(max_tokens=1),
                             include_prompt_logprobs=True, topk_prompt_logprobs=k).result()
    top = response.topk_prompt_logprobs
    check("prompt_logprobs", all_close(response.prompt_logprobs[1:], forward),
          f"{len(response.prompt_logprobs)} prompt log-probs")
    check("top-k shape", top is not None and top[0] is None and all(len(row) == k for row in top[1:]),
          f"{top}")
    # Score every top-k token with forward: position i's candidates follow PROMPT[:i].
    candidates = [(i, token) for i in range(1, len(PROMPT)) for token, _ in top[i]]
    data = [next_token_datum(types, PROMPT[:i] + [token]) for i, token in candidates]
    scored = [row[-1] for row in forward_logprobs(types, training, data)]
    reported = [logprob for i in range(1, len(PROMPT)) for _, logprob in top[i]]
    ordered = all(
        top[i][j][1] >= top[i][j + 1][1] for i in range(1, len(PROMPT)) for j in range(k - 1)
    )
    check("top-k prompt log-probs", all_close(reported, scored) and ordered
          and all(top[i][0][1] >= forward[i - 1] - 1e-5 for i in range(1, len(PROMPT))),
          f"{len(reported)} candidates equal forward's scoring, in descending order")

    # save_state / load_state, overwrite and ttl_seconds.
    before = forward_logprobs(types, training, [datum])[0]
    checkpoint = training.save_state("checkpoint-a").result().path
    training.forward_backward([datum], "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=5e-2)).result()
    moved = forward_logprobs(types, training, [datum])[0]
    training.load_state(checkpoint).result()
    restored = forward_logprobs(types, training, [datum])[0]
    check("save_state / load_state", restored == before and moved != before,
          f"{checkpoint}: log-probs restored exactly")
    try:
        training.save_state("checkpoint-a").result()
        refused = None
    except Exception as error:  # noqa: BLE001 - the SDK's own error type is what a user sees
        refused = str(error)
    check("overwrite refused by default", refused is not None and "overwrite" in refused, f"{refused}")
    training.save_state("checkpoint-a", overwrite=True).result()
    short = training.save_state("short-lived", ttl_seconds=1).result().path

    rest = service.create_rest_client()
    listed = rest.list_checkpoints(training.model_id).result().checkpoints
    by_id = {entry.checkpoint_id: entry for entry in listed}
    check("list_checkpoints", "weights/checkpoint-a" in by_id and "sampler_weights/scorer" in by_id
          and by_id["weights/short-lived"].expires_at is not None,
          f"{sorted(by_id)}")
    rest.delete_checkpoint(training.model_id, "sampler_weights/scorer").result()
    remaining = {entry.checkpoint_id for entry in rest.list_checkpoints(training.model_id).result().checkpoints}
    check("delete_checkpoint", "sampler_weights/scorer" not in remaining, f"{sorted(remaining)}")
    run = rest.get_training_run(training.model_id).result()
    check("get_training_run", run.base_model == base_model and run.lora_rank == 4 and run.is_lora,
          f"{run.training_run_id}: {run.base_model}, rank {run.lora_rank}")
    weights_info = rest.get_weights_info_by_tinker_path(checkpoint).result()
    check("weights_info", weights_info.lora_rank == 4 and weights_info.base_model == base_model,
          f"{weights_info}")

    resumed = service.create_training_client_from_state(checkpoint)
    check("create_training_client_from_state",
          forward_logprobs(types, resumed, [datum])[0] == before, f"model {resumed.model_id}")
    resumed_with_optimizer = service.create_training_client_from_state_with_optimizer(checkpoint)
    check("create_training_client_from_state_with_optimizer",
          forward_logprobs(types, resumed_with_optimizer, [datum])[0] == before,
          f"model {resumed_with_optimizer.model_id}")

    time.sleep(1.5)
    try:
        training.load_state(short).result()
        expired = None
    except Exception as error:  # noqa: BLE001
        expired = str(error)
    check("ttl_seconds", expired is not None and "expired" in expired, f"{expired}")

    # A failed call is answered at once: the server takes the telemetry the SDK flushes first.
    started = time.monotonic()
    try:
        training.forward_backward([datum], "no_such_loss").result()
        failure = None
    except Exception as error:  # noqa: BLE001
        failure = str(error)
    figures["failedCallSeconds"] = time.monotonic() - started
    check("a failed call says why", failure is not None and "no_such_loss" in failure, f"{failure}")

    # For the restart: a sampler path saved now, and what it samples with a seed.
    sampler_path = training.save_weights_for_sampler("before-restart").result().path
    kept = service.create_sampling_client(model_path=sampler_path).sample(
        prompt, 2, types.SamplingParams(max_tokens=6, seed=7)).result()
    with open(state_path, "w") as handle:
        json.dump({
            "samplerPath": sampler_path,
            "samples": [list(sequence.tokens) for sequence in kept.sequences],
            "figures": figures,
        }, handle)


def restart(base_url, base_model, state_path):
    import tinker
    from tinker import types

    with open(state_path) as handle:
        state = json.load(handle)
    service = tinker.ServiceClient(base_url=base_url)
    sampler = service.create_sampling_client(model_path=state["samplerPath"])
    again = sampler.sample(types.ModelInput.from_ints(PROMPT), 2,
                           types.SamplingParams(max_tokens=6, seed=7)).result()
    tokens = [list(sequence.tokens) for sequence in again.sequences]
    check("sampling a pre-restart sampler path", tokens == state["samples"],
          f"{state['samplerPath']}: {tokens}")
    check("get_base_model after restart", sampler.get_base_model() == base_model, base_model)


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    status = 0
    try:
        {"probe": probe, "train": train, "restart": restart}[command](*arguments)
    except BaseException as error:  # noqa: BLE001 - reported, then the exit status says it
        import traceback

        traceback.print_exc()
        print(f"FAILED {type(error).__name__}: {error}", file=sys.stderr)
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    # The SDK's background threads (heartbeat, telemetry) would hold the exit: leave at once.
    os._exit(status)
