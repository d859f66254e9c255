"""Adds to src/tinker/test-support/sdk-fixtures.json (key "jsonRequests") the JSON request
bodies the Tinker Python SDK itself sends, so teamtr's tests compare the client's bodies with
the SDK's rather than with field names read off its types.

Usage: python3 scripts/tinker-sdk-json-fixtures.py <tinker SDK checkout>/src
(needs pydantic 1.9+ or 2, httpx, anyio, distro, sniffio, typing_extensions>=4.10; no network).
Recorded with SDK 0.25.0 (commit d595dc2), pydantic 2.13.4 and Debian's python3-httpx,
python3-anyio and python3-distro (their dist-packages directory appended to sys.path below).

Unlike tinker-sdk-fixtures.py (which loads only the protobuf encoder), this imports the real
`tinker` package: each request is built with the SDK's own request type, with the arguments its
clients pass (lib/public_interfaces/*.py, lib/internal_client_holder.py), and dumped exactly as
its resources do before POSTing (tinker/resources/*.py:
`model_dump(request, exclude_unset=False, exclude_none=True, mode="json")`). Nothing is sent.
The values (ids, names, numbers) are the ones src/tinker/sdk-json-bodies.test.ts drives the
TypeScript client with.
"""

import json
import sys
import tempfile
from importlib import metadata
from pathlib import Path

sdk_src = Path(sys.argv[1]).resolve()
sys.path.insert(0, str(sdk_src))
# Debian's python3-httpx/anyio/distro, after the interpreter's own packages (whose pydantic and
# typing_extensions stay first).
sys.path.append("/usr/lib/python3/dist-packages")

# tinker/_version.py reads the installed distribution's version; an unpacked checkout has none,
# so give it the version its pyproject.toml declares.
try:
    metadata.version("tinker")
except metadata.PackageNotFoundError:
    version = next(
        line.split('"')[1]
        for line in (sdk_src.parent / "pyproject.toml").read_text().splitlines()
        if line.startswith("version = ")
    )
    dist_dir = Path(tempfile.mkdtemp()) / f"tinker-{version}.dist-info"
    dist_dir.mkdir()
    (dist_dir / "METADATA").write_text(f"Metadata-Version: 2.1\nName: tinker\nVersion: {version}\n")
    sys.path.append(str(dist_dir.parent))

import pydantic  # noqa: E402
import tinker  # noqa: E402
from tinker import types  # noqa: E402
from tinker._compat import model_dump  # noqa: E402


def body(request):
    """What tinker/resources/*.py POSTs for `request`."""
    return model_dump(request, exclude_unset=False, exclude_none=True, mode="json")


session_id = "session-1"
model_id = "model-1"
sampling_session_id = "sampling-1"
base_model = "Qwen/Qwen3-8B"

json_requests = {
    # ServiceClient() -> InternalClientHolder._create_session
    "createSession": body(
        types.CreateSessionRequest(
            tags=["teamtr", "fixture"],
            user_metadata={},
            sdk_version=tinker.__version__,
            project_id=None,
        )
    ),
    # resources/service.py session_heartbeat
    "sessionHeartbeat": body(types.SessionHeartbeatRequest(session_id=session_id)),
    # ServiceClient.create_lora_training_client(base_model, rank=32): the SDK's defaults.
    "createModel": body(
        types.CreateModelRequest(
            session_id=session_id,
            model_seq_id=0,
            base_model=base_model,
            lora_config=types.LoraConfig(
                rank=32, seed=None, train_mlp=True, train_attn=True, train_unembed=True
            ),
            user_metadata=None,
        )
    ),
    # ... with a seed and some layers left out.
    "createModelSeeded": body(
        types.CreateModelRequest(
            session_id=session_id,
            model_seq_id=1,
            base_model=base_model,
            lora_config=types.LoraConfig(
                rank=8, seed=7, train_mlp=True, train_attn=False, train_unembed=False
            ),
            user_metadata=None,
        )
    ),
    # TrainingClient.optim_step(AdamParams(learning_rate=5e-5)), the model's first request.
    "optimStep": body(
        types.OptimStepRequest(
            adam_params=types.AdamParams(learning_rate=5e-5), model_id=model_id, seq_id=1
        )
    ),
    "optimStepAllSet": body(
        types.OptimStepRequest(
            adam_params=types.AdamParams(
                learning_rate=0.002,
                beta1=0.8,
                beta2=0.99,
                eps=1e-8,
                weight_decay=0.01,
                grad_clip_norm=1.5,
            ),
            model_id=model_id,
            seq_id=2,
        )
    ),
    # TrainingClient.save_state("step-1")
    "saveWeights": body(
        types.SaveWeightsRequest(
            model_id=model_id, path="step-1", seq_id=3, ttl_seconds=None, overwrite=False
        )
    ),
    # TrainingClient.load_state_with_optimizer(path)
    "loadWeights": body(
        types.LoadWeightsRequest(
            model_id=model_id,
            path="tinker://model-1/weights/step-1",
            seq_id=4,
            optimizer=True,
            weights_access_token=None,
        )
    ),
    # TrainingClient.load_state(path)
    "loadWeightsNoOptimizer": body(
        types.LoadWeightsRequest(
            model_id=model_id,
            path="tinker://model-1/weights/step-1",
            seq_id=5,
            optimizer=False,
            weights_access_token=None,
        )
    ),
    # TrainingClient.save_weights_for_sampler("sampler-1")
    "saveWeightsForSampler": body(
        types.SaveWeightsForSamplerRequest(
            model_id=model_id, path="sampler-1", seq_id=6, ttl_seconds=None
        )
    ),
    # TrainingClient.get_info()
    "getInfo": body(types.GetInfoRequest(model_id=model_id)),
    # ServiceClient.create_sampling_client(model_path=...) / (base_model=...)
    "createSamplingSession": body(
        types.CreateSamplingSessionRequest(
            session_id=session_id,
            sampling_session_seq_id=0,
            model_path="tinker://model-1/sampler_weights/sampler-1",
            base_model=None,
        )
    ),
    "createSamplingSessionBaseModel": body(
        types.CreateSamplingSessionRequest(
            session_id=session_id,
            sampling_session_seq_id=1,
            model_path=None,
            base_model=base_model,
        )
    ),
    # SamplingClient.sample(prompt, num_samples=2, sampling_params=...), its first request.
    "sample": body(
        types.SampleRequest(
            sampling_session_id=sampling_session_id,
            seq_id=0,
            num_samples=2,
            prompt=types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[1, 5, 9])]),
            sampling_params=types.SamplingParams(
                max_tokens=16, temperature=0.7, top_k=40, top_p=0.9, seed=7, stop=[2, 3]
            ),
            prompt_logprobs=False,
            topk_prompt_logprobs=0,
        )
    ),
    # ... the second, with default sampling settings and prompt log-probs.
    "sampleDefaults": body(
        types.SampleRequest(
            sampling_session_id=sampling_session_id,
            seq_id=1,
            num_samples=1,
            prompt=types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[4])]),
            sampling_params=types.SamplingParams(max_tokens=8),
            prompt_logprobs=True,
            topk_prompt_logprobs=0,
        )
    ),
    # lib/api_future_impl.py polling, once the metadata-only peek is off.
    "retrieveFuture": body(
        types.FutureRetrieveRequest(request_id="request-1", allow_metadata_only=False)
    ),
}

out = Path(__file__).resolve().parent.parent / "src/tinker/test-support/sdk-fixtures.json"
fixtures = json.loads(out.read_text()) if out.exists() else {}
fixtures["jsonRequests"] = {
    "recordedWith": f"tinker {tinker.__version__}, pydantic {pydantic.VERSION}",
    **json_requests,
}
out.write_text(json.dumps(fixtures, indent=2) + "\n")
print(f"wrote {out}")
