"""The learner's CPU work per update: turning an update's screens into a vision model's patches.

What it measures: ``Prompter.encode`` of one update's steps (``--trajectories`` expert episodes of the
sim's ``general`` suite, default 8 as the learner's ``batch_size``, on 1080×2400 JPEG screens as the
workers send them, inside ``remembering_screens`` so that each distinct screen is processed once, as the
learner does), at the screen cap of ``--max-image-pixels`` (default 1,003,520: the 2B benchmark's, 672×1484
after resizing, 5,088 patches a screen), with the screens processed side by side in 1, 2, 4, ... threads
up to the machine's cores (``torch.set_num_threads``, which ``Prompter`` follows). Each thread count is
timed ``--repeats`` times (default 3, the median kept), its first run untimed.

This work runs on the learner's critical path, before the scoring pass. Its share of an update is its
time over ``--update-s`` seconds of the rest of the update (default 37.8 s: 48 steps at the 1.27 steps/s
an NVIDIA H200 trained the 2B shape at, as issue 31 measured with the screens processed twice and on one
thread; the GPU part of that figure, not measured here). The goal is 5% or less of an update three times
as fast (12.6 s).

Prints one JSON line. Bounded: about 1 minute on 2 cores.
Run: ``python benchmarks/screen_preprocessing.py [--trajectories 8] [--max-image-pixels 1003520]``.
"""

from __future__ import annotations

import distrl  # noqa: F401  # before torch, so that its OpenMP threads sleep while they wait

# isort: split
import argparse
import json
import os
import platform
import statistics
import time

import torch

from distrl.local.demos import demonstrations
from distrl.policy import PolicyInput
from distrl.policy.tiny import build_tiny


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectories", type=int, default=8)
    parser.add_argument("--max-image-pixels", type=int, default=1_003_520)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--update-s", type=float, default=48 / 1.27)
    args = parser.parse_args()

    episodes = demonstrations(
        "general", episodes=args.trajectories, seed=0, width=1080, height=2400, image_format="jpeg"
    )
    inputs = [
        PolicyInput(goal=episode.task.goal, observation=step.observation)
        for episode in episodes
        for step in episode.steps
    ]
    screens = len({item.observation.screenshot for item in inputs})
    _, prompter = build_tiny(0)
    prompter.limit_pixels(args.max_image_pixels)
    cores = os.cpu_count() or 1
    counts = sorted({1 << k for k in range(cores.bit_length()) if 1 << k <= cores} | {cores})
    rows = []
    for threads in counts:
        torch.set_num_threads(threads)
        times = []
        for repeat in range(args.repeats + 1):
            started = time.perf_counter()
            with prompter.remembering_screens():
                encoded = prompter.encode(inputs, history=4)
            if repeat:
                times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        rows.append(
            {
                "threads": threads,
                "seconds_per_update": round(seconds, 3),
                "ms_per_screen": round(1000 * seconds / screens, 1),
                "share_of_update": round(seconds / (seconds + args.update_s), 4),
                "share_of_update_3x": round(seconds / (seconds + args.update_s / 3), 4),
            }
        )
        each = rows[-1]["ms_per_screen"]
        print(f"{threads} threads: {seconds:.2f} s per update ({each} ms a screen)", flush=True)
    print(
        json.dumps(
            {
                "benchmark": "screen_preprocessing",
                "steps": len(inputs),
                "distinct_screens": screens,
                "patches_per_screen": int(encoded[0].grid_thw.prod()),
                "max_image_pixels": args.max_image_pixels,
                "update_s": round(args.update_s, 2),
                "by_threads": rows,
                "speedup": round(rows[0]["seconds_per_update"] / rows[-1]["seconds_per_update"], 2),
                "cores": cores,
                "machine": platform.machine(),
                "python": platform.python_version(),
            }
        )
    )


if __name__ == "__main__":
    main()
