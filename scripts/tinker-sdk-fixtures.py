"""Writes src/tinker/test-support/sdk-fixtures.json: protobuf bodies encoded by the Tinker
Python SDK's own code, so teamtr's tests decode exactly what the SDK sends.

Usage: python3 scripts/tinker-sdk-fixtures.py <tinker SDK checkout>/src  (needs protobuf, numpy)

It imports the SDK's generated schema (tinker/proto/tinker_public_pb2.py) and its request
encoder (tinker/proto/request_conv.py) unchanged. The SDK's pydantic types and HTTP client are
not needed for that, so small stand-ins with the same attributes replace them (the encoder only
reads fields off them). Recorded with SDK 0.25.0 (commit d595dc2).
"""

import importlib.util
import json
import sys
import types as pytypes
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sdk_src = Path(sys.argv[1])


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def package(name):
    module = pytypes.ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    return module


package("tinker")
package("tinker.proto")
package("tinker.types")


@dataclass
class EncodedTextChunk:
    tokens: list


@dataclass
class ImageChunk:
    data: bytes
    format: str
    expected_tokens: int | None = None


@dataclass
class DmelChunk:
    dmel: bytes


@dataclass
class TensorData:
    dtype: str
    data: list
    shape: list | None = None
    sparse_crow_indices: list | None = None
    sparse_col_indices: list | None = None

    @property
    def _numpy(self):
        return np.asarray(self.data, dtype=np.float32 if self.dtype == "float32" else np.int64)


@dataclass
class ModelInput:
    chunks: list


@dataclass
class Datum:
    model_input: ModelInput
    loss_fn_inputs: dict


@dataclass
class ForwardBackwardInput:
    data: list
    loss_fn: str
    loss_fn_config: dict | None = None


@dataclass
class ForwardBackwardRequest:
    forward_backward_input: ForwardBackwardInput
    model_id: str
    seq_id: int | None = None


for module_name, attribute, value in [
    ("tinker.types.dmel_chunk", "DmelChunk", DmelChunk),
    ("tinker.types.encoded_text_chunk", "EncodedTextChunk", EncodedTextChunk),
    ("tinker.types.forward_backward_request", "ForwardBackwardRequest", ForwardBackwardRequest),
    ("tinker.types.image_chunk", "ImageChunk", ImageChunk),
    ("tinker.types.model_input_chunk", "ModelInputChunk", object),
    ("tinker.types.tensor_data", "TensorData", TensorData),
]:
    module = pytypes.ModuleType(module_name)
    setattr(module, attribute, value)
    sys.modules[module_name] = module

public_pb = load("tinker.proto.tinker_public_pb2", sdk_src / "tinker/proto/tinker_public_pb2.py")
request_conv = load("tinker.proto.request_conv", sdk_src / "tinker/proto/request_conv.py")


def datum(tokens, inputs):
    return Datum(ModelInput([EncodedTextChunk(tokens)]), inputs)


# A policy-gradient batch as the SDK's training client sends it for forward_backward.
importance_sampling = ForwardBackwardRequest(
    ForwardBackwardInput(
        data=[
            datum(
                [1, 5, 9],
                {
                    "target_tokens": TensorData("int64", [5, 9, 2], [3]),
                    "logprobs": TensorData("float32", [-0.5, -1.25, -2.0], [3]),
                    "advantages": TensorData("float32", [0.0, 1.5, 1.5], [3]),
                },
            ),
            datum(
                [1, 7],
                {
                    "target_tokens": TensorData("int64", [7, 300000], [2]),
                    "logprobs": TensorData("float32", [-0.75, -3.5], [2]),
                    "advantages": TensorData("float32", [0.0, -0.5], [2]),
                },
            ),
        ],
        loss_fn="importance_sampling",
        loss_fn_config={"clip_low_threshold": 0.8},
    ),
    model_id="model-a",
    seq_id=3,
)
importance_sampling_proto = request_conv.forward_backward_request_to_proto(importance_sampling)

# forward(): the same encoder, then forward_only set (as the SDK's training resource does).
forward = ForwardBackwardRequest(
    ForwardBackwardInput(
        data=[
            datum(
                [2, 4, 6, 8],
                {
                    "target_tokens": TensorData("int64", [4, 6, 8, 3], [4]),
                    "weights": TensorData("float32", [0.0, 1.0, 1.0, 0.5], [4]),
                },
            )
        ],
        loss_fn="cross_entropy",
    ),
    model_id="model-b",
    seq_id=1,
)
forward_proto = request_conv.forward_backward_request_to_proto(forward)
forward_proto.forward_only = True

# Answers the SDK decodes (tinker/proto/response_conv.py): built with the SDK's schema.
output = public_pb.ForwardBackwardOutput()
output.loss_fn_output_type = "ArrayRecord"
output.metrics["loss:sum"] = 2.5
record = output.loss_fn_outputs.add()
record.type_tag = "ArrayRecord"
record.num_datums = 2
logprobs = [np.array([-0.5, -1.0, -1.5], np.float32), np.array([-2.0, -2.5], np.float32)]
batched = record.fields["logprobs"]
batched.dtype = public_pb.DTYPE_FLOAT32
batched.data = b"".join(part.tobytes() for part in logprobs)
batched.offsets = np.array([0, 12, 20], np.int64).tobytes()

sample = public_pb.SampleResponse()
first = sample.sequences.add()
first.stop_reason = public_pb.STOP_REASON_STOP
first.tokens = np.array([11, 12, 13], np.int32).tobytes()
first.logprobs = np.array([-0.25, -0.5, -0.125], np.float32).tobytes()
second = sample.sequences.add()
second.stop_reason = public_pb.STOP_REASON_LENGTH
second.tokens = np.array([14], np.int32).tobytes()
second.logprobs = np.array([-4.0], np.float32).tobytes()

out = Path(__file__).resolve().parent.parent / "src/tinker/test-support/sdk-fixtures.json"
# Keeps what other scripts recorded there (tinker-sdk-json-fixtures.py's "jsonRequests").
fixtures = json.loads(out.read_text()) if out.exists() else {}
fixtures |= {
    "sdk": "tinker 0.25.0 (github.com/thinking-machines-lab/tinker commit d595dc2)",
    "importanceSamplingRequest": importance_sampling_proto.SerializeToString().hex(),
    "forwardOnlyRequest": forward_proto.SerializeToString().hex(),
    "forwardBackwardOutput": output.SerializeToString().hex(),
    "sampleResponse": sample.SerializeToString().hex(),
}
out.write_text(json.dumps(fixtures, indent=2) + "\n")
print(f"wrote {out}")
