"""The learner on 1 and 2 ranks (``[learner] ranks``, gloo on the CPU, one thread each), and an estimate of
what data parallelism costs on GPUs.

What it measures: updates/s of ``Learner.update()`` (A-RIDE, ``critic_warmup_updates = 0`` so every
update trains the actor, the anchor on) with one rank on one thread, and with two ranks of one thread each
(rank 0 in this process, rank 1 its child), on the same replay buffer of ``--episodes`` episodes that
``tiny-bc`` played at temperature 1 on in-process sim phones, with the same seed (so the same batches).
The two learners live side by side and take turns, ``--updates`` timed updates each per turn, for
``--turns`` turns: a machine whose load changes meanwhile changes both alike. Reported: each one's median
updates/s over the turns, the speed-up (goal: at least 1.7 on 2 cores, issue 32: every exchange, the
batch's broadcast and the scores' gather included, is inside it) and the gradient bytes all-reduced per
update (the adapter's, summed, and the critics', averaged).

The estimate (``estimate``): gradient bytes against compute per update at the 2B and 7B shapes of
Qwen2-VL with LoRA r16 on all linear layers (float32 adapter, as peft keeps it), for 8 GPUs on one node
(NVLink, 300 GB/s of all-reduce bus bandwidth per GPU) and on 2 nodes of 8 (400 Gb/s InfiniBand per
node: 50 GB/s, which the ring's inter-node step is bound by). A ring all-reduce moves 2·(n−1)/n of the
bytes per GPU. Compute per trained step: 8·N·T FLOPs (the scoring pass 2NT, the actor's forward 2NT,
its backward to the inputs 2NT, gradient checkpointing's recompute 2NT; the frozen base needs no weight
gradients, the adapter's are negligible), with N the model's parameters, T = 1,330 tokens (a 1080×2400
screen at the 1,003,520-pixel cap), at 35% of an H100's 989 TFLOP/s in bfloat16. Per update:
``batch_size`` 8 trajectories of about 6 steps, split over the GPUs. These are estimates, not
measurements: no GPU was used.

Prints one JSON line; writes ``--figure`` (default ``benchmarks/figures/learner-ranks.png``).
Bounded: the episodes (about a minute on 2 cores), rank 1's start (seconds), and the turns (about
``2 · turns · updates`` updates of 1–3 s); ``--seconds`` (default 300) stops the turns early.
Run: ``python benchmarks/learner_ranks.py [--turns 3 --updates 4]``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from plotting import saved_figure

from distrl.config import LearnerSettings, PolicySettings
from distrl.learner.core import Learner
from distrl.learner.ranks import Ranks
from distrl.local.play import rollouts
from distrl.policy import Policy
from distrl.sim.suites import tasks

FIGURE = Path(__file__).parent / "figures" / "learner-ranks.png"

SHAPES = {
    # text: hidden, layers, query heads, key-value heads, MLP; vision: width, blocks, MLP; all parameters
    "2b": {"hidden": 1536, "layers": 28, "heads": 12, "kv_heads": 2, "mlp": 8960, "params": 2.21e9},
    "7b": {"hidden": 3584, "layers": 28, "heads": 28, "kv_heads": 4, "mlp": 18944, "params": 8.29e9},
}
VISION = {"width": 1280, "blocks": 32, "mlp": 5120}
"""Qwen2-VL's vision tower, the same in both shapes (its merger's MLP goes to the text width)."""


def lora_parameters(shape: dict[str, float], rank: int = 16) -> int:
    """LoRA parameters on every linear layer of a Qwen2-VL shape: r·(in + out) for each."""
    hidden, heads, kv = int(shape["hidden"]), int(shape["heads"]), int(shape["kv_heads"])
    head_dim = hidden // heads
    text = [
        (hidden, hidden),  # q
        (hidden, kv * head_dim),  # k
        (hidden, kv * head_dim),  # v
        (hidden, hidden),  # o
        (hidden, int(shape["mlp"])),  # gate
        (hidden, int(shape["mlp"])),  # up
        (int(shape["mlp"]), hidden),  # down
    ]
    width = VISION["width"]
    vision = [(width, 3 * width), (width, width), (width, VISION["mlp"]), (VISION["mlp"], width)]
    merged = 4 * width  # 2×2 patches merged
    merger = [(merged, merged), (merged, hidden)]
    total = int(shape["layers"]) * sum(i + o for i, o in text)
    total += VISION["blocks"] * sum(i + o for i, o in vision)
    return rank * (total + sum(i + o for i, o in merger))


def estimate(gpus: int = 8, tokens: int = 1330, steps: int = 48) -> dict[str, object]:
    """Gradient all-reduce time against compute time per update, per shape, on 1 and 2 nodes of ``gpus``."""
    flops_per_s = 0.35 * 989e12
    out: dict[str, object] = {}
    for name, shape in SHAPES.items():
        gradient_bytes = 4 * lora_parameters(shape)
        compute_s = 8 * shape["params"] * tokens * steps / (gpus * flops_per_s)
        row: dict[str, object] = {
            "lora_parameters": lora_parameters(shape),
            "gradient_mb": round(gradient_bytes / 1e6, 1),
            "compute_s_per_update_8_gpus": round(compute_s, 3),
        }
        for nodes, bus_gb_s in ((1, 300.0), (2, 50.0)):
            n = gpus * nodes
            moved = 2 * (n - 1) / n * gradient_bytes
            reduce_s = moved / (bus_gb_s * 1e9)
            per_gpu_compute = compute_s * gpus / n
            row[f"{nodes}_node"] = {
                "gpus": n,
                "all_reduce_s": round(reduce_s, 4),
                "compute_s": round(per_gpu_compute, 3),
                "all_reduce_share": round(reduce_s / (reduce_s + per_gpu_compute), 4),
            }
        out[name] = row
    return out


def _learner(policy: Policy, ranks: int, batch_size: int, micro_batch: int) -> Learner:
    settings = LearnerSettings(
        batch_size=batch_size, micro_batch=micro_batch, critic_warmup_updates=0, ranks=ranks, lr_actor=1e-4
    )
    return Learner(policy, settings, seed=0)


def _timed(learner: Learner, updates: int) -> float:
    started = time.perf_counter()
    for _ in range(updates):
        learner.update()
    return updates / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=16, help="the learner's default")
    parser.add_argument("--updates", type=int, default=4, help="timed updates per learner and turn")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--figure", type=Path, default=FIGURE)
    args = parser.parse_args()
    started = time.monotonic()
    torch.set_num_threads(1)  # one core per rank: rank 0 and each child get one thread
    settings = PolicySettings(model="tiny-bc", max_new_tokens=48, temperature=1.0, lora_dropout=0.0)
    player = Policy.load(settings, device="cpu", seed=0)
    chosen = tasks("general", "train")[: args.episodes]
    played = rollouts(player, chosen, version=0, seed=1, parallel=8, width=270, height=600)
    steps = sum(len(t.steps) for t in played)
    learners = {
        ranks: _learner(Policy.load(settings, device="cpu", seed=0), ranks, args.batch_size, args.micro_batch)
        for ranks in (1, 2)
    }
    rates: dict[int, list[float]] = {1: [], 2: []}
    try:
        for learner in learners.values():
            for trajectory in played:
                learner.add(trajectory)
            learner.update()  # warm-up, untimed
        for _ in range(args.turns):
            if time.monotonic() - started > args.seconds and rates[2]:
                break
            for ranks, learner in learners.items():
                rates[ranks].append(_timed(learner, args.updates))
        two = learners[2].ranks
        assert isinstance(two, Ranks)
        reduced = two.reduced_bytes / learners[2].updates
    finally:
        for learner in learners.values():
            learner.close()
    one, both = statistics.median(rates[1]), statistics.median(rates[2])
    result = {
        "benchmark": "learner_ranks",
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores",
        "episodes": len(played),
        "steps": steps,
        "batch_size": args.batch_size,
        "micro_batch": args.micro_batch,
        "updates_per_s": {"1_rank": round(one, 3), "2_ranks": round(both, 3)},
        "turns": {"1_rank": [round(r, 3) for r in rates[1]], "2_ranks": [round(r, 3) for r in rates[2]]},
        "speedup": round(both / one, 3),
        "goal_met": both / one >= 1.7,
        "all_reduced_bytes_per_update": int(reduced),
        "estimate": estimate(),
        "wall_s": round(time.monotonic() - started, 1),
    }
    print(json.dumps(result))
    try:
        with saved_figure(args.figure, 1, size=(5.0, 3.2)) as axis:
            axis.bar(["1 rank", "2 ranks"], [one, both], color=["#888888", "#2a7ab0"])
            for x, rate in ((0, rates[1]), (1, rates[2])):
                axis.scatter([x] * len(rate), rate, color="black", s=10, zorder=3)
            axis.set_ylabel("updates/s (tiny-bc, CPU)")
            axis.set_title(f"learner ranks: {both / one:.2f}× with 2 (one thread each)")
    except ImportError:
        print("no matplotlib: no figure", file=sys.stderr)


if __name__ == "__main__":
    main()
