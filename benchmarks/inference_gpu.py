"""A worker's decoding against its floor: the decode step and tokens/s by batch size, with the adapter
folded into the base weights as workers serve it, next to the memory-bandwidth floor measured in the same
run.

What it measures, for each batch size (default 1, 8, 32, 64): the prefill (the time to generate one token)
and the decode step, (time to generate ``--tokens`` tokens − time to generate 1) / (``--tokens`` − 1),
both through the policy's own model (``Policy.load`` then ``Adapter.serve_merged``, a fresh LoRA r16
adapter with small random weights folded in) on real sim screens (``general`` tasks, 1080×2400 JPEG as a
worker gets them; ``--max-image-pixels`` caps them as the policy's setting does). Every answer is forced
to the same length (``min_new_tokens``), greedy. The median of ``--repeats`` runs each.

The floor: one decode step must read the language model's weights once (the vision tower runs in the
prefill only). floor = those weights' bytes / the copy bandwidth, measured here as the bytes read and
written by ``Tensor.copy_`` of a 1 GiB buffer (256 MiB on a CPU) per second. Reported: each step's ratio
to the floor (issue 31's goal: within 3× at batch 1–8) and tokens/s.

Each engine of ``--engine`` (default ``eager,compiled``: ``distrl.policy.engine``, ``[policy] engine``) in
turn, on the same policy: ``first_call_s`` is its first call at a batch size, which for ``compiled``
includes compiling the decode step for that shape (inductor caches kernels on disk, so a later process
compiles faster). Measured on the 2-core CPU machine, ``--shape tiny --batch 1,4,16`` (one run, the cores
shared with a pretraining run): decode step eager 2.74 / 4.46 / 5.66 ms, compiled 2.03 / 2.51 / 6.44 ms
(1.35× and 1.78× faster at batch 1 and 4, 0.88× at 16); first calls 8-14 s for the new shapes. On an
NVIDIA H200 (``--repeats 2``), where the compiled step is a CUDA graph: eager 23.1 / 28.1 / 28.8 ms at
batch 1 / 8 / 64 (30-38× the 0.76 ms floor), compiled 5.2 / 6.4 / 17.3 ms (6.9 / 8.6 / 23.1×; 3,700
tokens/s at 64), each new shape compiled in about 30 s (docs/results/benchmarks.md).

``--shape 2b`` (the default) is the Qwen2-VL-2B shape of ``learner_gpu.py`` (random bfloat16 weights,
the built-in tokenizer); without CUDA it prints a ``skipped`` line and exits 0. ``--shape tiny`` runs the
built-in ``tiny`` on whatever device there is (the CPU here: a smoke test of the method, not a GPU figure).

Prints one JSON line. Bounded: the model build (about a minute for 2b on a GPU) plus ``repeats`` × 2
generations per batch size. Run: ``python benchmarks/inference_gpu.py [--batch 1,8,32,64]``, or on a CPU
``python benchmarks/inference_gpu.py --shape tiny --batch 1,4``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from inference_throughput import _inputs as screens
from learner_gpu import _sync, write_model
from transformers import GenerationConfig, LogitsProcessorList

from distrl.config import PolicySettings
from distrl.policy import Policy, PolicyInput
from distrl.policy.engine import make_engine


def copy_bandwidth(device: torch.device, repeats: int = 5) -> float:
    """Bytes read plus written per second by ``Tensor.copy_`` of a large buffer on ``device``."""
    size = (1 << 30) if device.type == "cuda" else (256 << 20)
    source = torch.empty(size, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    target.copy_(source)
    _sync(device)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        target.copy_(source)
        _sync(device)
        times.append(time.perf_counter() - started)
    return 2 * size / statistics.median(times)


def language_bytes(policy: Policy) -> int:
    """The bytes of every weight a decode step reads: all but the vision tower's."""
    return sum(
        p.numel() * p.element_size()
        for name, p in policy.model.named_parameters()
        if ".visual." not in name and "lora_" not in name
    )


def generate_s(policy: Policy, batch: list[PolicyInput], tokens: int) -> float:
    """Seconds for the policy's engine to generate exactly ``tokens`` tokens for each of ``batch``
    (greedy; the rows the engine decodes for it, as ``Policy.sample`` would)."""
    rows = [batch[min(i, len(batch) - 1)] for i in range(policy.engine.rows(len(batch)))]
    encoded = policy.prompter.encode(rows, policy.settings.history)
    inputs = {
        k: v.to(policy.device) for k, v in policy.prompter.collate([e.ids for e in encoded], encoded).items()
    }
    config = GenerationConfig(  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
        do_sample=False,
        max_new_tokens=tokens,
        min_new_tokens=tokens,
        eos_token_id=policy.prompter.end_id,
        pad_token_id=policy.prompter.pad_id,
        output_logits=True,
        return_dict_in_generate=True,
    )
    _sync(policy.device)
    started = time.perf_counter()
    with torch.no_grad():
        policy.engine.generate(policy.model, inputs, config, LogitsProcessorList())
    _sync(policy.device)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=("2b", "tiny"), default="2b")
    parser.add_argument("--batch", default="1,8,32,64")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--engine", default="eager,compiled", help="engines to measure, in turn")
    parser.add_argument("--max-image-pixels", type=int, default=None, help="default: 1003520 for 2b")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    if args.shape == "2b" and not cuda:
        reason = "no CUDA device (torch.cuda.is_available() is false); the 2B decode floor is a GPU figure"
        print(json.dumps({"benchmark": "inference_gpu", "skipped": reason}), flush=True)
        return
    device = torch.device("cuda" if cuda else "cpu")
    sizes = [int(size) for size in args.batch.split(",") if size.strip()]
    engines = [name.strip() for name in args.engine.split(",") if name.strip()]
    pixels = (
        args.max_image_pixels
        if args.max_image_pixels is not None
        else (1_003_520 if args.shape == "2b" else 0)
    )
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / args.shape
        write_model(folder, args.shape, 0, device)
        settings = PolicySettings(model=str(folder), max_image_pixels=pixels, temperature=0.0)
        policy = Policy.load(settings, device=str(device), seed=0)
        generator = torch.Generator().manual_seed(0)
        policy.adapter.load_state(
            {
                name: torch.randn(t.shape, generator=generator) * 0.01
                for name, t in policy.adapter.state().items()
            }
        )
        policy.adapter.serve_merged()
        bandwidth = copy_bandwidth(device)
        floor_s = language_bytes(policy) / bandwidth
        inputs = screens(max(sizes))
        rows = []
        for engine in engines:
            policy.engine = make_engine(engine)
            generate_s(policy, inputs[:1], 2)  # warm-up: kernels, allocator
            for size in sizes:
                batch = [inputs[i % len(inputs)] for i in range(size)]
                # this size's own warm-up: its shapes (compiled once), its cache, the allocator
                compile_s = generate_s(policy, batch, args.tokens)
                first = statistics.median(generate_s(policy, batch, 1) for _ in range(args.repeats))
                whole = statistics.median(generate_s(policy, batch, args.tokens) for _ in range(args.repeats))
                step = (whole - first) / (args.tokens - 1)
                rows.append(
                    {
                        "engine": engine,
                        "batch": size,
                        "first_call_s": round(compile_s, 2),
                        "prefill_s": round(first, 4),
                        "decode_step_ms": round(step * 1e3, 3),
                        "floor_ms": round(floor_s * 1e3, 3),
                        "times_floor": round(step / floor_s, 1),
                        "tokens_per_s": round(size / step, 1),
                    }
                )
    print(
        json.dumps(
            {
                "benchmark": "inference_gpu",
                "shape": args.shape,
                "device": torch.cuda.get_device_name(device) if cuda else "cpu",
                "torch": torch.__version__,
                "language_model_gb": round(language_bytes(policy) / 1e9, 3),
                "copy_bandwidth_gb_s": round(bandwidth / 1e9, 1),
                "adapter": "merged",
                "rows": rows,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
