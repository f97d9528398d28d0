"""Batched inference of ``tiny`` on CPU: samples per second and latency against batch size (issue 4 (b)).

Two ways in:

- ``direct``: ``Policy.sample`` on batches of 1, 2, 4, 8, 16, 32 observations (real sim screens of the
  ``general`` suite, 1080×2400 JPEG as a worker gets them, one previous action in the prompt);
  latency is one call's wall time, samples/s = batch / latency.
- ``batcher``: the worker's path, ``Batcher(policy.sample)`` with ``max_batch`` = the batch size and
  ``max_wait_s`` = 20 ms, fed by 32 concurrent requesters (coroutines standing in for devices) that each
  ask ``--requests`` times; latency is each request's wall time from ask to answer (median, p90).

The policy is the checkpoint in ``--model`` (a ``pretrain`` folder, whose answers end after one action)
or, by default, a ``tiny`` of the built-in size (screens at most 224×504: 136 image tokens) trained for a
few steps here so that its answers have the length of real ones (an untrained model babbles up to
``max_new_tokens``). ``pretrain`` folders made with its default ``PRETRAIN_SPEC`` see 112×252 screens
(36 image tokens) and answer faster. Sampling at temperature 1, seeded. The adapter holds small random
weights (a trained one, not LoRA's zero start) and is folded into the base weights as a worker serves it
(``Adapter.serve_merged``, ``[policy] merge_adapter``); ``--unmerged`` applies it beside them, as the
learner does.

Measured on the 2-core development machine (``--model`` a 224×504 ``pretrain`` folder): ``direct`` 3.3
samples/s at batch 1 (301 ms), 9.6 at 4, 14.7 at 8, 20.4 at 16 (783 ms), 21.6 at 32; ``batcher`` with 32
requesters 7.0 / 11.4 / 16.8 / 21.7 samples/s at max_batch 4 / 8 / 16 / 32. Answers are about 50 tokens,
so each sample is 50 decoding steps; beyond 16 the two cores are saturated. With a default ``pretrain``
folder (112×252 screens): ``direct`` 3.0 samples/s at batch 1 (329 ms), 9.2 at 4, 16.7 at 8, 26.7 at 16
(600 ms), 35.5 at 32 (901 ms); ``batcher`` 6.2 / 12.2 / 23.4 / 33.9 samples/s at max_batch 4 / 8 / 16 / 32.

Prints one JSON line. Bounded: about 2–4 minutes on 2 cores (``--quick``: batch sizes 1, 4 only).
Run: ``python benchmarks/inference_throughput.py [--model runs/tiny-bc]``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import torch

from distrl.config import PolicySettings
from distrl.local.demos import demonstrations
from distrl.local.pretrain import pretrain
from distrl.policy import Policy, PolicyInput, TinySpec
from distrl.policy.batching import Batcher

SIZES = (1, 2, 4, 8, 16, 32)


def _inputs(count: int) -> list[PolicyInput]:
    out: list[PolicyInput] = []
    for episode in demonstrations(
        "general", episodes=count, seed=7, width=1080, height=2400, image_format="jpeg"
    ):
        for step in episode.steps:
            out.append(PolicyInput(goal=step.task.goal, observation=step.observation, history=step.history))
    return out[:count]


def _direct(policy: Policy, inputs: list[PolicyInput], size: int, repeats: int) -> dict[str, float]:
    policy.sample(inputs[:size], seed=0)  # warm-up
    times = []
    tokens = 0
    for repeat in range(repeats):
        batch = [inputs[(repeat * size + i) % len(inputs)] for i in range(size)]
        started = time.perf_counter()
        samples = policy.sample(batch, seed=repeat)
        times.append(time.perf_counter() - started)
        tokens += sum(len(s.token_ids) for s in samples)
    latency = statistics.median(times)
    return {
        "batch": size,
        "latency_ms": round(latency * 1000, 1),
        "samples_per_s": round(size / latency, 2),
        "tokens_per_answer": round(tokens / (size * repeats), 1),
    }


async def _through_batcher(
    policy: Policy, inputs: list[PolicyInput], size: int, requesters: int, requests: int
) -> dict[str, float]:
    batcher: Batcher[PolicyInput, object] = Batcher(
        lambda batch: policy.sample(batch, seed=0), max_batch=size, max_wait_s=0.02
    )
    latencies: list[float] = []

    async def requester(k: int) -> None:
        for r in range(requests):
            started = time.perf_counter()
            await batcher(inputs[(k * requests + r) % len(inputs)])
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        async with anyio.create_task_group() as askers:
            for k in range(requesters):
                askers.start_soon(requester, k)
        tg.cancel_scope.cancel()
    wall = time.perf_counter() - started
    latencies.sort()
    return {
        "max_batch": size,
        "requesters": requesters,
        "samples_per_s": round(len(latencies) / wall, 2),
        "mean_batch": round(batcher.stats.mean_batch, 2),
        "latency_p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
        "latency_p90_ms": round(latencies[int(len(latencies) * 0.9)] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="", help="a model folder (default: tiny trained briefly here)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per batch size (default 3)")
    parser.add_argument("--requesters", type=int, default=32, help="concurrent requesters (default 32)")
    parser.add_argument("--requests", type=int, default=2, help="requests per requester (default 2)")
    parser.add_argument("--quick", action="store_true", help="smoke run: batch sizes 1 and 4")
    parser.add_argument(
        "--unmerged",
        action="store_true",
        help="the adapter applied beside the base weights, as the learner runs it (default: folded in, as"
        " a worker serves it)",
    )
    args = parser.parse_args()
    sizes = (1, 4) if args.quick else SIZES
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model
        if not model:
            model = str(Path(scratch) / "tiny")
            steps = 10 if args.quick else 150
            pretrain(model, episodes=30, max_steps=steps, minutes=None, mistake_rate=0.0, spec=TinySpec())
        policy = Policy.load(PolicySettings(model=model, temperature=1.0), device="cpu")
        generator = torch.Generator().manual_seed(0)  # a trained adapter, not LoRA's zero start
        policy.adapter.load_state(
            {
                name: torch.randn(t.shape, generator=generator) * 0.01
                for name, t in policy.adapter.state().items()
            }
        )
        if not args.unmerged:
            policy.adapter.serve_merged()
        inputs = _inputs(max(sizes) * 2)
        direct = [_direct(policy, inputs, size, args.repeats) for size in sizes]
        batched = [
            anyio.run(_through_batcher, policy, inputs, size, args.requesters, args.requests)
            for size in sizes
            if size >= 4 or args.quick
        ]
    print(
        json.dumps(
            {
                "benchmark": "inference_throughput",
                "model": args.model or "tiny (briefly trained)",
                "cpu": platform.processor() or platform.machine(),
                "cores": os.cpu_count(),
                "torch_threads": torch.get_num_threads(),
                "screen": "1080x2400 jpeg",
                "adapter": "unmerged" if args.unmerged else "merged",
                "direct": direct,
                "batcher": batched,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
