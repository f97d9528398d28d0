"""Behaviour cloning of the built-in ``tiny`` policy on the simulated phone's expert demonstrations
(``distrl.local.demos``).

``pretrain``: a fresh ``tiny`` (or a model folder to go on from, such as ``tiny-bc``), every weight
trained (a LoRA on random weights cannot become confident), by teacher-forced cross-entropy on the
demonstrations' actions, within a step or time budget; saved as an ordinary model folder that
``Policy.load(PolicySettings(model=folder))`` loads. Measuring a policy on the sim is
``distrl.local.play.evaluate``.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel

from distrl.actions import format_action
from distrl.config import PolicySettings, cannot_create
from distrl.local.demos import demonstrations
from distrl.policy import PolicyInput, Prompter, TinySpec, build_tiny
from distrl.policy.loading import load_base
from distrl.policy.prompt import Encoded

__all__ = ["PRETRAIN_SPEC", "PretrainReport", "Progress", "pretrain"]

PRETRAIN_SPEC = TinySpec(max_pixels=112 * 252)
"""``pretrain``'s default: ``tiny`` with screens resized to at most 112×252 (4×9 = 36 image tokens instead
of 136). Steps run 2.7 times faster on 2 cores, and in the same 10 minutes the policy does better: 40% on
the ``general`` train split against 8% at 224×504 (``benchmarks/pretrain_tiny.py``)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class PretrainReport:
    """What one ``pretrain`` run did."""

    out: Path
    """The model folder written."""
    steps: int
    """Optimiser steps taken."""
    examples: int
    """Demonstration steps trained on (with repeats: ``steps`` × batch)."""
    demonstrations: int
    """Distinct demonstration steps in the training set."""
    episodes: int
    """Demonstration episodes they came from."""
    wall_s: float
    """Seconds from start to the saved folder, demonstrations included."""
    final_loss: float
    """Mean per-token cross-entropy (nats) over the last few steps."""
    first_loss: float
    """Mean per-token cross-entropy (nats) over the first few steps."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress report of ``pretrain``."""

    step: int
    loss: float
    """Mean per-token cross-entropy of the answer tokens (nats), over the steps since the last report."""
    examples_per_s: float
    """Demonstration steps trained on per second since training began."""
    lr: float
    elapsed_s: float


def pretrain(
    out: str | Path,
    *,
    suites: Sequence[str] = ("general",),
    episodes: int = 1000,
    mistake_rate: float = 0.1,
    seed: int = 0,
    max_steps: int | None = None,
    minutes: float | None = 10.0,
    batch_size: int = 16,
    lr: float = 3e-3,
    warmup_steps: int = 30,
    width: int = 540,
    height: int = 1200,
    history: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: int = 20,
    spec: TinySpec = PRETRAIN_SPEC,
    randomise: float = 0.0,
    drills: int = 0,
    contrasts: int = 0,
    start: str | None = None,
) -> PretrainReport:
    """Behaviour-clone a fresh ``tiny`` (``build_tiny(seed)``, every weight trained) on expert
    demonstrations and save it to the model folder ``out``.

    ``start`` goes on from a model instead: ``tiny-bc`` or a model folder (what ``[policy] model``
    names), every weight trained, its screens as it was trained on them (``spec`` is then not used).
    Raises ``PolicyError`` when it cannot be loaded.

    ``episodes`` demonstrations (``mistake_rate`` of their actions are mistakes) are drawn from the
    ``train`` split of each suite in ``suites``, split evenly; ``randomise`` of them play drawn tasks (fresh
    values and wordings of the train templates, never held-out ones: ``demonstrations``), and ``drills`` and
    ``contrasts`` add examples at their steps (``demonstrations``). Training is AdamW on the cross-entropy
    of the answer tokens (the action text and ``<|im_end|>``) after the prompt that ``Policy`` builds (with
    the last ``history`` actions, default ``PolicySettings().history``), in shuffled passes over the
    demonstrations, with a linear warm-up and a cosine decay to a tenth of ``lr`` over the budget: stop at
    ``max_steps`` or after ``minutes`` of wall time (demonstrations included), whichever comes first (at
    least one of them must be given). Encoded prompts are cached after their first use. ``spec`` sizes the
    model and its screens (the folder's image processor keeps them, so the policy sees what it learnt from).

    The folder is written to a temporary sibling and renamed into place at the end, so an interrupted run
    leaves nothing half-written. Raises ``FileExistsError`` if ``out`` exists and ``ValueError`` for bad
    arguments, an ``out`` that cannot be created among them (``cannot_create``: found before training).
    """
    started = time.monotonic()
    if max_steps is None and minutes is None:
        raise ValueError("give max_steps or minutes (or both): training needs a budget")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be ≥ 1, got {max_steps}")
    if minutes is not None and not minutes > 0:
        raise ValueError(f"minutes must be > 0, got {minutes}")
    if batch_size < 1 or episodes < 1:
        raise ValueError(f"batch_size and episodes must be ≥ 1, got {batch_size} and {episodes}")
    target = Path(out).expanduser()
    if target.exists():
        raise FileExistsError(f"{str(target)!r} already exists; choose another output folder")
    if problem := cannot_create(target):
        raise ValueError(problem)
    budget_s = math.inf if minutes is None else minutes * 60.0
    shown = PolicySettings().history if history is None else history

    torch.manual_seed(seed)
    model, prompter = build_tiny(seed, spec) if start is None else load_base(start, torch.float32, seed)
    model.train()
    examples = _examples(
        suites, episodes, mistake_rate, seed, width, height, prompter, randomise, drills, contrasts
    )
    cache: dict[int, Encoded] = {}
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    rng = random.Random(f"pretrain/{seed}")
    order: list[int] = []
    losses: list[float] = []
    window: list[float] = []
    step = 0
    train_started = time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        if (max_steps is not None and step >= max_steps) or elapsed >= budget_s:
            break
        done = max(step / max_steps if max_steps else 0.0, elapsed / budget_s if budget_s < math.inf else 0.0)
        rate = lr * min(1.0, (step + 1) / warmup_steps) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done)))
        for group in optimiser.param_groups:
            group["lr"] = rate
        batch: list[int] = []
        while len(batch) < batch_size:
            if not order:
                order = rng.sample(range(len(examples)), len(examples))
            batch.append(order.pop())
        loss = _loss(model, prompter, [examples[i] for i in batch], batch, cache, shown)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]  # torch's Tensor.backward is unannotated
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        step += 1
        losses.append(loss.item())
        window.append(losses[-1])
        if on_progress is not None and (step % progress_every == 0 or step == 1):
            spent = time.monotonic() - train_started
            on_progress(
                Progress(
                    step,
                    sum(window) / len(window),
                    step * batch_size / spent,
                    rate,
                    time.monotonic() - started,
                )
            )
            window = []
    folder = _save(model, prompter, target)
    tail = losses[-10:] or [math.nan]
    head = losses[:10] or [math.nan]
    return PretrainReport(
        out=folder,
        steps=step,
        examples=step * batch_size,
        demonstrations=len(examples),
        episodes=episodes,
        wall_s=time.monotonic() - started,
        final_loss=sum(tail) / len(tail),
        first_loss=sum(head) / len(head),
    )


@dataclass(frozen=True, slots=True)
class _Example:
    prompt: PolicyInput
    answer: list[int]
    """The action's token ids, ending with ``<|im_end|>``."""


def _examples(
    suites: Sequence[str],
    episodes: int,
    mistake_rate: float,
    seed: int,
    width: int,
    height: int,
    prompter: Prompter,
    randomise: float = 0.0,
    drills: int = 0,
    contrasts: int = 0,
) -> list[_Example]:
    if not suites:
        raise ValueError("give at least one suite to learn from")
    out: list[_Example] = []
    for index, name in enumerate(suites):
        share = episodes // len(suites) + (1 if index < episodes % len(suites) else 0)
        for episode in demonstrations(
            name,
            episodes=share,
            mistake_rate=mistake_rate,
            seed=seed,
            width=width,
            height=height,
            image_format="jpeg",
            randomise=randomise,
            drills=drills,
            contrasts=contrasts,
        ):
            for step in (*episode.steps, *episode.drills, *episode.contrasts):
                prompt = PolicyInput(goal=step.task.goal, observation=step.observation, history=step.history)
                out.append(_Example(prompt, prompter.action_ids(format_action(step.action))))
    return out


def _loss(
    model: PreTrainedModel,
    prompter: Prompter,
    batch: Sequence[_Example],
    keys: Sequence[int],
    cache: dict[int, Encoded],
    history: int,
) -> torch.Tensor:
    """Mean cross-entropy per answer token of ``batch``, teacher-forced (a scalar with gradients)."""
    missing = [i for i, key in enumerate(keys) if key not in cache]
    if missing:
        fresh = prompter.encode([batch[i].prompt for i in missing], history)
        for i, item in zip(missing, fresh, strict=True):
            # bfloat16 halves the cache; the pixels were 8-bit before normalisation, so nothing is lost
            cache[keys[i]] = Encoded(item.ids, item.pixel_values.to(torch.bfloat16), item.grid_thw)
    encoded = [Encoded(cache[key].ids, cache[key].pixel_values.float(), cache[key].grid_thw) for key in keys]
    answers = [example.answer for example in batch]
    window = max(len(ids) for ids in answers)
    inputs = prompter.collate(
        [[*item.ids, *ids] for item, ids in zip(encoded, answers, strict=True)], encoded
    )
    output = model(**inputs, logits_to_keep=window + 1, use_cache=False)
    logits = output.logits[:, :-1].float()  # position p predicts p + 1: (batch, window, vocab)
    targets = inputs["input_ids"][:, -window:].clone()
    lengths = torch.tensor([len(ids) for ids in answers])
    mask = torch.arange(window)[None, :] >= (window - lengths)[:, None]
    targets[~mask] = -100
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _save(model: PreTrainedModel, prompter: Prompter, target: Path) -> Path:
    """Write the model folder next to ``target`` and rename it into place (nothing half-written)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        model.save_pretrained(str(staging))
        prompter.save_pretrained(staging)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
