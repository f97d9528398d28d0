"""Bytes on the wire per adapter update: diffs against the full adapter, for a Qwen2.5-VL-3B-sized LoRA.

The adapter: LoRA r=16 on every linear layer that peft's ``all-linear`` picks in Qwen2.5-VL-3B (the output
layer ``lm_head`` excluded), at the real shapes:

- language model, 36 layers of hidden 2048, intermediate 11008, 16 query and 2 key/value heads of 128:
  ``q_proj`` 2048→2048, ``k_proj`` and ``v_proj`` 2048→256, ``o_proj`` 2048→2048, ``gate_proj`` and
  ``up_proj`` 2048→11008, ``down_proj`` 11008→2048;
- vision tower, 32 blocks of hidden 1280, intermediate 3420: ``qkv`` 1280→3840, ``proj`` 1280→1280,
  ``gate_proj`` and ``up_proj`` 1280→3420, ``down_proj`` 3420→1280; the merger's 5120→5120 and 5120→2048.

That is 41.4M parameters (29.9M in the language model) in 828 tensors: 166 MB in float32, 83 MB in
bfloat16. Initialised as peft does (A kaiming-uniform, B zeros) and trained by ``torch.optim.Adam`` on
gradients with LoRA's structure (a random batch of 16 tokens per layer: ∂B = G (A X)ᵀ, ∂A = Bᵀ G Xᵀ, so A
does not move while B is zero). The learner keeps float32 weights; the ``bfloat16`` figures are for
publishing their bfloat16 cast (what a bf16 worker runs).

Prints one JSON line:
- ``full``: the full snapshot blob (``encode_full``) per dtype, bytes and times;
- ``whole_adapter_updates``: the whole adapter at lr 1e-4, steps 1-3 from the initialisation: the diff
  blob's bytes, its ratio to the full blob, ``encode_diff`` and ``apply`` wall times (ms, this machine,
  which other work may share: see ``load_avg_1m``); every apply is checked bitwise;
- ``per_lr``: for lr 1e-5, 3e-5 and 1e-4, on one language layer and one vision block (to stay within
  time; ratios do not depend on the number of layers), the ratio for steps 1, 2 and 3, for one update
  after 49 steps, and for a diff spanning 4 updates (``publish_every = 4``), with the bytes that ratio
  means for the whole adapter;
- ``compared``: the candidate encodings on the same subset at lr 1e-4, step 50 (sizes only), an
  estimate of the floor for coding each difference on its own, and how often a float delta
  (``old + (new - old)``) fails to give ``new`` back;
- ``summary``: the later updates' diff against each full size, and whether that meets the 25% goal.

Bounded: about 30 s on 2 cores, 2.5 GB of memory. Run: ``python benchmarks/weight_diff.py``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import bz2
import json
import lzma
import math
import os
import time
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from distrl.weights import DIFF_ENCODING, apply, encode_diff, encode_full

RANK = 16
TOKENS = 16
LEARNING_RATES = (1e-5, 3e-5, 1e-4)
STEPS = 3
STEADY_STEPS = 50
SPAN = 4
GOAL = 0.25
FULL_MODEL_LR = 1e-4
Array = npt.NDArray[Any]

LANGUAGE = {
    "self_attn.q_proj": (2048, 2048),
    "self_attn.k_proj": (2048, 256),
    "self_attn.v_proj": (2048, 256),
    "self_attn.o_proj": (2048, 2048),
    "mlp.gate_proj": (2048, 11008),
    "mlp.up_proj": (2048, 11008),
    "mlp.down_proj": (11008, 2048),
}
VISION = {
    "attn.qkv": (1280, 3840),
    "attn.proj": (1280, 1280),
    "mlp.gate_proj": (1280, 3420),
    "mlp.up_proj": (1280, 3420),
    "mlp.down_proj": (3420, 1280),
}
MERGER = {"merger.mlp.0": (5120, 5120), "merger.mlp.2": (5120, 2048)}


def linears(language_layers: int, vision_blocks: int, merger: bool) -> dict[str, tuple[int, int]]:
    """Module name -> (in_features, out_features), named as in peft's state dict."""
    found: dict[str, tuple[int, int]] = {}
    for i in range(language_layers):
        for name, shape in LANGUAGE.items():
            found[f"base_model.model.model.language_model.layers.{i}.{name}"] = shape
    for i in range(vision_blocks):
        for name, shape in VISION.items():
            found[f"base_model.model.model.visual.blocks.{i}.{name}"] = shape
    for name, shape in MERGER.items() if merger else ():
        found[f"base_model.model.model.visual.{name}"] = shape
    return found


class Trainer:
    """LoRA weights stepped by Adam on gradients with LoRA's structure (``fresh``: as peft initialises
    them)."""

    def __init__(self, weights: dict[str, torch.Tensor], lr: float, generator: torch.Generator) -> None:
        self.generator = generator
        self.weights = {name: w.detach().float().clone() for name, w in weights.items()}
        self.pairs = [
            (self.weights[name], self.weights[name.replace(".lora_A.", ".lora_B.")])
            for name in self.weights
            if ".lora_A." in name
        ]
        self.optimizer = torch.optim.Adam(list(self.weights.values()), lr=lr)

    @classmethod
    def fresh(cls, modules: dict[str, tuple[int, int]], lr: float, seed: int, rank: int = RANK) -> Trainer:
        generator = torch.Generator().manual_seed(seed)
        weights: dict[str, torch.Tensor] = {}
        for name, (fan_in, fan_out) in modules.items():
            a = torch.empty(rank, fan_in)
            torch.nn.init.kaiming_uniform_(a, a=math.sqrt(5), generator=generator)
            weights[f"{name}.lora_A.default.weight"] = a
            weights[f"{name}.lora_B.default.weight"] = torch.zeros(fan_out, rank)
        return cls(weights, lr, generator)

    def step(self) -> None:
        for a, b in self.pairs:
            x = torch.randn(a.shape[1], TOKENS, generator=self.generator)
            g = torch.randn(b.shape[0], TOKENS, generator=self.generator) * 1e-2
            b.grad = g @ (a @ x).T
            a.grad = (b.T @ g) @ x.T
        self.optimizer.step()

    def snapshot(self, dtype: torch.dtype) -> dict[str, torch.Tensor]:
        return {name: w.detach().to(dtype, copy=True) for name, w in self.weights.items()}


def measure_update(
    old: dict[str, torch.Tensor], new: dict[str, torch.Tensor], full: int, step: int
) -> dict[str, Any]:
    started = time.perf_counter()
    blob = encode_diff(old, new, step - 1, step)
    encoded = time.perf_counter()
    tensors, version = apply(old, blob, expected_base=step - 1)
    applied = time.perf_counter()
    assert version == step
    assert all(torch.equal(tensors[n].view(torch.uint8), new[n].view(torch.uint8)) for n in new), "not exact"
    return {
        "step": step,
        "diff_bytes": len(blob),
        "ratio": round(len(blob) / full, 3),
        "encode_ms": round((encoded - started) * 1000),
        "apply_ms": round((applied - encoded) * 1000),
    }


def bits(tensors: dict[str, torch.Tensor]) -> Array:
    parts = [t.reshape(-1).view(torch.uint8).numpy() for _, t in sorted(tensors.items())]
    flat = np.concatenate(parts)
    return flat.view({2: np.uint16, 4: np.uint32}[next(iter(tensors.values())).element_size()])


def planes(values: Array) -> list[bytes]:
    grouped = values.view(np.uint8).reshape(-1, values.dtype.itemsize)
    return [np.ascontiguousarray(grouped[:, k]).tobytes() for k in range(values.dtype.itemsize)]


def zigzag(delta: Array) -> Array:
    signed = delta.view({2: np.int16, 4: np.int32}[delta.dtype.itemsize])
    return ((signed << 1) ^ (signed >> (8 * delta.dtype.itemsize - 1))).view(delta.dtype)


def rle(data: bytes) -> bytes:
    deflater = zlib.compressobj(1, zlib.DEFLATED, 15, 8, zlib.Z_RLE)
    return deflater.compress(data) + deflater.flush()


def floor(zigzagged: Array) -> float:
    """What an ideal coder of each difference on its own needs: its bit length's entropy + the lower bits."""
    values = zigzagged.astype(np.float64)
    lengths = np.zeros(values.shape, dtype=np.int64)
    nonzero = values > 0
    lengths[nonzero] = np.floor(np.log2(values[nonzero])).astype(np.int64) + 1
    counts = np.bincount(lengths)
    p = counts[counts > 0] / lengths.size
    entropy = float(-(p * np.log2(p)).sum())
    return (entropy + float(np.maximum(lengths - 1, 0).mean())) / (8 * zigzagged.dtype.itemsize)


def compare(old: dict[str, torch.Tensor], new: dict[str, torch.Tensor]) -> dict[str, float]:
    """Sizes of the candidate exact encodings, relative to the raw bytes of the adapter."""
    before, after = bits(old), bits(new)
    raw = before.nbytes
    xor = before ^ after
    sub = zigzag(after - before)
    codecs: dict[str, Callable[[bytes], bytes]] = {
        "zlib1": lambda b: zlib.compress(b, 1),
        "zlib-rle": rle,
        "zlib6": lambda b: zlib.compress(b, 6),
        "lzma0": lambda b: lzma.compress(b, preset=0),
        "bz2": lambda b: bz2.compress(b, 9),
    }
    found: dict[str, float] = {}
    for transform, values in (("xor", xor), ("sub-zigzag", sub)):
        found[f"{transform}/zlib1 (no shuffle)"] = len(zlib.compress(values.tobytes(), 1)) / raw
        for codec, compress in codecs.items():
            found[f"{transform}/shuffle/{codec}"] = sum(len(compress(p)) for p in planes(values)) / raw
    found["floor: order-0 entropy of the bit length + the bits below it"] = floor(sub)
    found["new/shuffle/zlib1 (no diff)"] = sum(len(zlib.compress(p, 1)) for p in planes(after)) / raw
    if before.dtype == np.uint32:
        a, b = before.view(np.float32), after.view(np.float32)
        found["float delta/shuffle/zlib-rle"] = (
            sum(len(rle(p)) for p in planes((b - a).view(np.uint32))) / raw
        )
        found["float delta: share of elements not exact"] = float(
            np.mean((a + (b - a)).view(np.uint32) != after)
        )
    return {name: round(value, 4) for name, value in found.items()}


def full_model(dtypes: dict[str, torch.dtype]) -> tuple[int, dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """The whole adapter at lr 1e-4: real blob sizes and times, each apply checked bitwise."""
    trainer = Trainer.fresh(linears(36, 32, merger=True), FULL_MODEL_LR, seed=0)
    params = sum(w.numel() for w in trainer.weights.values())
    full: dict[str, Any] = {}
    previous = {name: trainer.snapshot(dtype) for name, dtype in dtypes.items()}
    for name, snapshot in previous.items():
        t0 = time.perf_counter()
        blob = encode_full(snapshot, 0)
        t1 = time.perf_counter()
        apply({}, blob, expected_base=None)
        t2 = time.perf_counter()
        full[name] = {
            "bytes": len(blob),
            "encode_ms": round((t1 - t0) * 1000),
            "apply_ms": round((t2 - t1) * 1000),
        }
    updates: dict[str, list[dict[str, Any]]] = {name: [] for name in dtypes}
    for step in range(1, STEPS + 1):
        trainer.step()
        for name, dtype in dtypes.items():
            current = trainer.snapshot(dtype)
            updates[name].append(measure_update(previous[name], current, full[name]["bytes"], step))
            previous[name] = current
    return params, full, updates


def per_learning_rate(
    dtypes: dict[str, torch.dtype], full: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """Ratios on one language layer and one vision block, and the diff bytes they imply for the whole."""
    found: dict[str, Any] = {name: {} for name in dtypes}
    compared: dict[str, dict[str, float]] = {}
    for seed, lr in enumerate(LEARNING_RATES):
        trainer = Trainer.fresh(linears(1, 1, merger=False), lr, seed=100 + seed)
        history: dict[int, dict[str, dict[str, torch.Tensor]]] = {
            0: {name: trainer.snapshot(dtype) for name, dtype in dtypes.items()}
        }
        for step in range(1, STEADY_STEPS + 1):
            trainer.step()
            if step <= STEPS or step >= STEADY_STEPS - SPAN:
                history[step] = {name: trainer.snapshot(dtype) for name, dtype in dtypes.items()}
        spans = [(step - 1, step) for step in range(1, STEPS + 1)]
        spans += [(STEADY_STEPS - 1, STEADY_STEPS), (STEADY_STEPS - SPAN, STEADY_STEPS)]
        for name in dtypes:
            rows = []
            for base, step in spans:
                new = history[step][name]
                ratio = len(encode_diff(history[base][name], new, base, step)) / len(encode_full(new, step))
                rows.append(
                    {
                        "steps": f"{base}->{step}",
                        "ratio": round(ratio, 3),
                        "diff_bytes_whole_adapter": round(ratio * full[name]["bytes"]),
                    }
                )
            found[name][f"{lr:g}"] = rows
            if lr == LEARNING_RATES[-1]:
                compared[name] = compare(history[STEADY_STEPS - 1][name], history[STEADY_STEPS][name])
    return found, compared


def summary(rates: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    """Smallest and largest diff of the later updates (step 1 from B = 0 is a one-off), per full size."""
    found: dict[str, Any] = {}
    for name, by_lr in rates.items():
        sizes = [row["diff_bytes_whole_adapter"] for rows in by_lr.values() for row in rows[1:]]
        for against in ("float32", name) if name != "float32" else ("float32",):
            ratios = [size / full[against]["bytes"] for size in sizes]
            found[f"{name}_diff_over_{against}_full"] = {
                "min": round(min(ratios), 3),
                "max": round(max(ratios), 3),
                "meets_goal": max(ratios) <= GOAL,
            }
    return found


def main() -> None:
    started = time.perf_counter()
    torch.set_num_threads(1)  # the simulated training is small work; the codec uses its own threads
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    params, full, updates = full_model(dtypes)
    rates, compared = per_learning_rate(dtypes, full)
    modules = linears(36, 32, merger=True)
    print(
        json.dumps(
            {
                "benchmark": "weight_diff",
                "model": "Qwen2.5-VL-3B: 36 language layers, 32 vision blocks, merger; lm_head excluded",
                "lora": {"rank": RANK, "targets": "all linear layers", "init": "A kaiming-uniform, B zeros"},
                "optimizer": "Adam(betas=(0.9, 0.999), eps=1e-8), float32 weights; bfloat16: their cast",
                "adapter_params": params,
                "tensors": 2 * len(modules),
                "encoding": DIFF_ENCODING,
                "full": full,
                "whole_adapter_lr": FULL_MODEL_LR,
                "whole_adapter_updates": updates,
                "per_lr_subset": "1 language layer + 1 vision block; bytes scaled to the whole adapter",
                "per_lr": rates,
                "compared": {
                    "case": f"lr {LEARNING_RATES[-1]:g}, step {STEADY_STEPS}, same subset",
                    **compared,
                },
                "goal_ratio": GOAL,
                "summary": summary(rates, full),
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
                "wall_s": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
