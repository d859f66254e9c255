"""PyTorch reference for `teamtr bench`: the same three llama-3m workloads, same shapes.

Run by `teamtr bench` with Debian's /usr/bin/python3 (python3-torch) when it is present:
    python3 src/bench/pytorch/torch_reference.py --threads 2
prints one JSON object per line: {"name": ..., "value": ..., "unit": "tokens/s"}.
The model is written out here (no transformers dependency) to match teamtr's llama exactly:
RMSNorm, RoPE (rotate-half), SwiGLU, causal attention, untied head.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, HIDDEN, LAYERS, HEADS, INTERMEDIATE = 128, 256, 4, 4, 704
HEAD_DIM = HIDDEN // HEADS


class RMSNorm(nn.Module):
    def __init__(self, size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(length, offset=0):
    inverse = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    positions = torch.arange(offset, offset + length).float()
    angles = torch.outer(positions, inverse)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm = RMSNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.out = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.mlp_norm = RMSNorm(HIDDEN)
        self.gate = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x, cos, sin, cache=None):
        batch, length, _ = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).split(HIDDEN, dim=-1)
        shape = (batch, length, HEADS, HEAD_DIM)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            if cache.get('k') is not None:
                k = torch.cat([cache['k'], k], dim=2)
                v = torch.cat([cache['v'], v], dim=2)
            cache['k'], cache['v'] = k, v
        # torch 1.13 (Debian) has no scaled_dot_product_attention: the plain formulation.
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(HEAD_DIM)
        if length > 1:
            mask = torch.ones(length, k.shape[2], dtype=torch.bool).triu(k.shape[2] - length + 1)
            scores = scores.masked_fill(mask, float('-inf'))
        attended = torch.softmax(scores, dim=-1) @ v
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, HIDDEN))
        hidden = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(hidden)) * self.up(hidden))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids, offset=0, caches=None):
        cos, sin = rope_tables(ids.shape[1], offset)
        x = self.embed(ids)
        for index, block in enumerate(self.blocks):
            x = block(x, cos, sin, None if caches is None else caches[index])
        return self.head(self.norm(x))


def timed(run, warmup, repeats):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed_for(run, warmup_seconds, minimum_seconds, minimum_repeats):
    """Median seconds of `run` after warming up for `warmup_seconds`, over at least
    `minimum_repeats` runs and `minimum_seconds` of them: the same measure as our own sgemm's."""
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_seconds:
        run()
    times = []
    while len(times) < minimum_repeats or sum(times) < minimum_seconds:
        begin = time.perf_counter()
        run()
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def print_sgemm(args):
    """The BLAS PyTorch links (OpenBLAS on Debian), on the largest sgemm shape of `teamtr bench`,
    timed as our own (bound.ts): warmed up, then at least one second of products. Two warm-ups
    and five products read 247 GFLOP/s where the same process later read 310 (one quiet run)."""
    a, b = torch.rand(4096, 1024), torch.rand(1024, 1024)
    seconds = timed_for(lambda: torch.mm(a, b), 0.5, 1.0, args.repeats)
    print(json.dumps({'name': 'sgemm-4096x1024x1024', 'value': 2 * 4096 * 1024 * 1024 / seconds / 1e9, 'unit': 'GFLOP/s', 'threads': args.threads}))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--repeats', type=int, default=10)
    parser.add_argument('--sgemm-only', action='store_true',
                        help='only the 4096x1024x1024 product (the machine bound of teamtr bench)')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.sgemm_only:
        print_sgemm(args)
        return
    torch.manual_seed(0)
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    ids = torch.randint(0, VOCAB, (16, 128))
    targets = torch.randint(0, VOCAB, (16, 128))

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(ids).view(-1, VOCAB), targets.view(-1))
        loss.backward()
        optimizer.step()

    seconds = timed(train_step, 3, args.repeats)
    print(json.dumps({'name': 'llama-3m-train-step', 'value': 16 * 128 / seconds, 'unit': 'tokens/s', 'threads': args.threads}))

    print_sgemm(args)

    prompts = torch.randint(0, VOCAB, (16, 16))

    @torch.no_grad()
    def generate():
        caches = [dict() for _ in range(LAYERS)]
        logits = model(prompts, 0, caches)[:, -1]
        position = prompts.shape[1]
        for step in range(64):
            token = torch.multinomial(F.softmax(logits, dim=-1), 1)
            if step == 63:
                break  # as teamtr: no forward after the last sampled token
            logits = model(token, position, caches)[:, -1]
            position += 1

    seconds = timed(generate, 3, args.repeats)
    print(json.dumps({'name': 'llama-3m-generate', 'value': 16 * 64 / seconds, 'unit': 'tokens/s', 'threads': args.threads}))

    @torch.no_grad()
    def score():
        logits = model(ids)
        torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1))

    seconds = timed(score, 3, args.repeats)
    print(json.dumps({'name': 'llama-3m-score', 'value': 16 * 128 / seconds, 'unit': 'tokens/s', 'threads': args.threads}))


if __name__ == '__main__':
    main()
