"""PyTorch reference for `teamtr bench --real-model`: the same workloads at SmolLM2-135M's shape.

Run by `teamtr bench --real-model` with Debian's /usr/bin/python3 (python3-torch), one process per
workload so each peak resident set is that workload's own:
    python3 src/bench/pytorch/torch_real_model.py --workload smollm2-135m-shape-generate-batch64 --threads 1,2
prints one JSON object per line, {"name", "value", "unit", "threads"}, with the names teamtr's own
figures have (so `ratio-...` lines come out), each figure once per thread setting (the caller keeps
the best), then the process's peak RSS. `--list` prints the workload names.

The model is written out (no transformers dependency): Llama with grouped-query attention (9 query
heads sharing 3 key/value heads), RoPE θ = 100000 (rotate-half), RMSNorm, SwiGLU, tied embeddings,
random weights. It is tuned as one would tune a CPU inference/training loop by hand, so that it is a
fair yardstick: the query/key/value and gate/up projections are fused into one product each, the
KV cache is preallocated and written in place, grouped-query attention reads the shared key/value
heads without repeating them, logits are computed only where they are used, everything runs under
torch.inference_mode (or, for training, with the frozen base excluded from autograd).
"""
import argparse
import ctypes
import json
import math
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The tiny-model reference's timer (median of timed runs after warm-ups); this script's folder
# is on sys.path when it runs as a script.
from torch_reference import timed

VOCAB, HIDDEN, LAYERS, HEADS, KV_HEADS, INTERMEDIATE = 49152, 576, 30, 9, 3, 1536
HEAD_DIM = HIDDEN // HEADS
GROUP = HEADS // KV_HEADS
ROPE_THETA, EPSILON, MAX_POSITIONS = 100000.0, 1e-5, 2048
PREFIX = 'smollm2-135m-shape'
PROMPT_TOKENS, NEW_TOKENS = 32, 32
LORA_RANK, LORA_ALPHA = 8, 16
# The trust region's exact-KL memory budget (src/trainer/update/local/reference-distributions.ts): log-distributions
# of at most this many bytes at once, whole sequences per chunk.
DISTRIBUTION_BUDGET_BYTES = 64 * 1024 * 1024


def set_threads(count):
    """PyTorch's own threads and OpenBLAS's (Debian's torch calls OpenBLAS for its products, whose
    pool was sized by OPENBLAS_NUM_THREADS at start-up): both `count`."""
    torch.set_num_threads(count)
    for library in ('libblas.so.3', 'libopenblas.so.0'):
        try:
            ctypes.CDLL(library).openblas_set_num_threads(count)
        except (OSError, AttributeError):
            pass


def linear(x, weight):
    """x·Wᵀ; one row goes through a matrix-vector product, which OpenBLAS runs about twice as
    fast as the same product as a 1-row matrix product (measured on this machine)."""
    if x.numel() == x.shape[-1]:
        return torch.mv(weight, x.reshape(-1)).view(*x.shape[:-1], weight.shape[0])
    return F.linear(x, weight)


def rms_norm(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPSILON) * weight


def rope_tables():
    inverse = 1.0 / (ROPE_THETA ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    angles = torch.outer(torch.arange(MAX_POSITIONS).float(), inverse)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    """x [B, heads, L, D]; cos, sin [L, D]."""
    half = HEAD_DIM // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class LoraAdapter(nn.Module):
    """PEFT's LoRA on one projection: s·(x·Aᵀ)·Bᵀ with s = alpha / rank, B starting at zero."""

    def __init__(self, in_features, out_features):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.a = nn.Parameter(torch.empty(LORA_RANK, in_features).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.zeros(out_features, LORA_RANK))
        self.scale = LORA_ALPHA / LORA_RANK

    def forward(self, x):
        return F.linear(F.linear(x, self.a), self.b) * self.scale


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm = nn.Parameter(torch.ones(HIDDEN))
        # Query, key and value in one product: [(9 + 3 + 3)·64, 576].
        self.qkv = nn.Parameter(torch.randn((HEADS + 2 * KV_HEADS) * HEAD_DIM, HIDDEN) * 0.02)
        self.out = nn.Parameter(torch.randn(HIDDEN, HIDDEN) * 0.02)
        self.mlp_norm = nn.Parameter(torch.ones(HIDDEN))
        # Gate and up in one product: [2·1536, 576].
        self.gate_up = nn.Parameter(torch.randn(2 * INTERMEDIATE, HIDDEN) * 0.02)
        self.down = nn.Parameter(torch.randn(HIDDEN, INTERMEDIATE) * 0.02)
        self.lora_query = None
        self.lora_value = None

    def attach_lora(self):
        self.lora_query = LoraAdapter(HIDDEN, HEADS * HEAD_DIM)
        self.lora_value = LoraAdapter(HIDDEN, KV_HEADS * HEAD_DIM)

    def forward(self, x, cos, sin, cache=None, start=0):
        """x [B, L, d]; cache = (keys, values), each [B, kv heads, capacity, D], filled before `start`."""
        batch, length, _ = x.shape
        normed = rms_norm(x, self.attention_norm)
        q, k, v = linear(normed, self.qkv).split(
            [HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM], dim=-1
        )
        if self.lora_query is not None:
            q = q + self.lora_query(normed)
            v = v + self.lora_value(normed)
        q = apply_rope(q.view(batch, length, HEADS, HEAD_DIM).transpose(1, 2), cos, sin)
        k = apply_rope(k.view(batch, length, KV_HEADS, HEAD_DIM).transpose(1, 2), cos, sin)
        v = v.view(batch, length, KV_HEADS, HEAD_DIM).transpose(1, 2)
        if cache is not None:
            keys, values = cache
            keys[:, :, start:start + length] = k
            values[:, :, start:start + length] = v
            k, v = keys[:, :, :start + length], values[:, :, :start + length]
        # Grouped-query attention without repeating keys and values: the 3 query heads of each
        # key/value head become rows of one product, q [B, 3, 3·L, D] against k [B, 3, T, D].
        q = q.reshape(batch, KV_HEADS, GROUP * length, HEAD_DIM)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(HEAD_DIM))
        if length > 1:
            total = k.shape[2]
            query_positions = torch.arange(length).repeat(GROUP) + (total - length)
            mask = torch.arange(total)[None, :] > query_positions[:, None]
            scores = scores.masked_fill(mask, float('-inf'))
        attended = torch.softmax(scores, dim=-1) @ v  # [B, 3, 3·L, D]
        attended = attended.view(batch, HEADS, length, HEAD_DIM).transpose(1, 2).reshape(batch, length, HIDDEN)
        x = x + linear(attended, self.out)
        gate, up = linear(rms_norm(x, self.mlp_norm), self.gate_up).chunk(2, dim=-1)
        return x + linear(F.silu(gate) * up, self.down)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(VOCAB, HIDDEN) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.Parameter(torch.ones(HIDDEN))
        cos, sin = rope_tables()
        self.register_buffer('cos', cos)
        self.register_buffer('sin', sin)

    def hidden(self, ids, caches=None, start=0):
        """Final-normed hidden states [B, L, d] of ids [B, L] at positions start…start+L−1."""
        length = ids.shape[1]
        cos, sin = self.cos[start:start + length], self.sin[start:start + length]
        x = F.embedding(ids, self.embed)
        for index, block in enumerate(self.blocks):
            x = block(x, cos, sin, None if caches is None else caches[index], start)
        return rms_norm(x, self.norm)

    def logits(self, hidden):
        return linear(hidden, self.embed)  # tied head

    def attach_lora(self):
        for parameter in self.parameters():
            parameter.requires_grad_(False)
        for block in self.blocks:
            block.attach_lora()
        return [p for block in self.blocks for p in (*block.lora_query.parameters(), *block.lora_value.parameters())]


def sample(logits):
    """A multinomial draw from softmax at temperature 1, with the drawn token's log-probability
    (what an RL rollout records, as teamtr's generate does). Drawn by inverting the cumulative
    distribution with one uniform per row, as teamtr's sampling kernel does: torch.multinomial
    draws one exponential per vocabulary entry for a single sample (105 ms a step at batch 64,
    a quarter of a decode step, measured), which would make the reference needlessly slow."""
    log_probs = torch.log_softmax(logits, dim=-1)
    cumulative = log_probs.exp().cumsum(dim=-1)
    uniforms = torch.rand(logits.shape[0], 1) * cumulative[:, -1:]
    tokens = torch.searchsorted(cumulative, uniforms).clamp_(max=logits.shape[-1] - 1)
    return tokens, log_probs.gather(-1, tokens)


def generation(model, batch, repeats, emit):
    """KV-cached batched sampling: a 32-token prompt pass (prefill, which samples the first new
    token), then 31 one-token steps (decode); no forward after the last sampled token."""
    prompts = torch.randint(0, VOCAB, (batch, PROMPT_TOKENS))
    capacity = PROMPT_TOKENS + NEW_TOKENS
    seconds = {'prefill': [], 'decode': [], 'total': []}

    @torch.inference_mode()
    def run(new_tokens=NEW_TOKENS):
        begin = time.perf_counter()
        caches = [
            (torch.empty(batch, KV_HEADS, capacity, HEAD_DIM), torch.empty(batch, KV_HEADS, capacity, HEAD_DIM))
            for _ in range(LAYERS)
        ]
        hidden = model.hidden(prompts, caches, 0)
        token, _ = sample(model.logits(hidden[:, -1]))
        middle = time.perf_counter()
        for step in range(1, new_tokens):
            hidden = model.hidden(token, caches, PROMPT_TOKENS + step - 1)
            token, _ = sample(model.logits(hidden[:, -1]))
        end = time.perf_counter()
        return middle - begin, end - middle, end - begin

    run(1)  # warm-up: a prompt pass, as in teamtr's bench
    for _ in range(repeats):
        for key, value in zip(('prefill', 'decode', 'total'), run()):
            seconds[key].append(value)
    prefill, decode, total = (statistics.median(seconds[key]) for key in ('prefill', 'decode', 'total'))
    emit(f'{PREFIX}-prefill-batch{batch}', batch * PROMPT_TOKENS / prefill, 'tokens/s')
    emit(f'{PREFIX}-decode-batch{batch}', batch * (NEW_TOKENS - 1) / decode, 'tokens/s')
    emit(f'{PREFIX}-generate-batch{batch}', batch * NEW_TOKENS / total, 'tokens/s')


def lora_step(model, repeats, emit):
    """Rank-8 LoRA on the query and value projections (alpha 16), frozen base, next-token
    cross-entropy over the whole vocabulary, backward, AdamW on the adapters; 4 × 128 tokens."""
    parameters = model.attach_lora()
    optimizer = torch.optim.AdamW(parameters, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0)
    ids = torch.randint(0, VOCAB, (4, 128))
    targets = torch.randint(0, VOCAB, (4, 128))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model.logits(model.hidden(ids)).view(-1, VOCAB), targets.view(-1))
        loss.backward()
        optimizer.step()

    emit(f'{PREFIX}-lora-train-step', 4 * 128 / timed(step, 1, repeats), 'tokens/s')


def scoring_and_exact_kl(model, repeats, emit):
    """16 sequences of 128 tokens (one context token, 127 scored): their log-probs without
    gradients, and the trust region's check, the exact full-vocabulary KL(π_old ‖ π_new) at every
    scored token against the adapters as they were before a step. As in teamtr, the
    log-distributions are produced in chunks of whole sequences within the trust region's memory
    budget, the old ones recomputed from the saved adapters."""
    adapters = model.attach_lora()
    sequences, length = 16, 128
    ids = torch.randint(0, VOCAB, (sequences, length))
    scored = sequences * (length - 1)
    old = [p.detach().clone() for p in adapters]
    with torch.no_grad():
        for parameter in adapters:
            parameter.add_(torch.randn_like(parameter) * 0.01)
    new = [p.detach().clone() for p in adapters]

    def load(values):
        for parameter, value in zip(adapters, values):
            parameter.copy_(value)

    def log_distributions(chunk):
        return torch.log_softmax(model.logits(model.hidden(chunk)[:, :-1]), dim=-1)

    @torch.inference_mode()
    def score():
        # The head and log-softmax in slices of 4 sequences: 100 MB of logits at a time, not 400.
        for first in range(0, sequences, 4):
            chunk = ids[first:first + 4]
            log_distributions(chunk).gather(-1, chunk[:, 1:].unsqueeze(-1))

    per_chunk = max(1, DISTRIBUTION_BUDGET_BYTES // (4 * VOCAB) // (length - 1))

    @torch.inference_mode()
    def exact_kl():
        kl = torch.empty(sequences, length - 1)
        for first in range(0, sequences, per_chunk):
            chunk = ids[first:first + per_chunk]
            load(old)
            old_log = log_distributions(chunk)
            load(new)
            new_log = log_distributions(chunk)
            kl[first:first + per_chunk] = F.kl_div(new_log, old_log, reduction='none', log_target=True).sum(-1)
        return kl

    emit(f'{PREFIX}-score', scored / timed(score, 1, repeats), 'tokens/s')
    emit(f'{PREFIX}-exact-kl', scored / timed(exact_kl, 1, repeats), 'tokens/s')


WORKLOADS = {
    f'{PREFIX}-generate-batch1': lambda model, repeats, emit: generation(model, 1, repeats, emit),
    f'{PREFIX}-generate-batch8': lambda model, repeats, emit: generation(model, 8, repeats, emit),
    f'{PREFIX}-generate-batch64': lambda model, repeats, emit: generation(model, 64, repeats, emit),
    f'{PREFIX}-score-exact-kl': scoring_and_exact_kl,
    f'{PREFIX}-lora-train-step': lora_step,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--workload', help='one of --list')
    parser.add_argument('--threads', default='1,2', help='comma-separated thread counts to try')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--list', action='store_true', help='print the workload names and exit')
    args = parser.parse_args()
    if args.list:
        print('\n'.join(WORKLOADS))
        return
    if args.workload not in WORKLOADS:
        sys.exit(f'unknown workload {args.workload!r} (known: {", ".join(WORKLOADS)})')
    for threads in (int(value) for value in args.threads.split(',')):
        set_threads(threads)
        torch.manual_seed(0)
        model = Model()

        def emit(name, value, unit):
            print(json.dumps({'name': name, 'value': value, 'unit': unit, 'threads': threads}), flush=True)

        WORKLOADS[args.workload](model, args.repeats, emit)
        del model
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({'name': f'{args.workload}-peak-rss', 'value': peak, 'unit': 'MiB'}), flush=True)


if __name__ == '__main__':
    main()
