"""How ``Policy.sample`` draws each row of a batch: at its own temperature, and from its own key.

Two logits processors, chosen by ``sampling_plan``:

- ``RowTemperatures``: each row at its own temperature, for transformers' sampler at 1: its logits over
  T, or for T = 0 all but the highest at -inf. The random draws are the batch's: one generator for all
  rows, so a row's answer depends on the batch it is in.
- ``KeyedRows``: each sampled row draws its noise from a generator of its own, seeded by the row's
  ``PolicyInput.sampling_key``, and greedy decoding takes the argmax of logits / T + Gumbel noise. That
  is a sample of softmax(z / T) (the Gumbel-max trick: argmax_v z_v / T + G_v, with G_v independent
  standard Gumbel, is v with probability softmax(z / T)_v), so the distribution and the behaviour
  log-probs are those of ``RowTemperatures``; but a row's answer depends only on its prompt and its key,
  whatever else is in the batch. Two policies asked the same question with the same key see the same
  noise: evaluated at one seed, their paired difference counts where they differ, not where the draws
  did (common random numbers). Rows at T = 0 take the argmax of their logits, as greedy decoding does;
  a sampled row without a key draws its noise from torch's generator (seeded by ``sample``'s seed).

The key's noise is drawn on the CPU (a ``torch.Generator`` per row, one vocabulary of uniforms per step),
which is cheap for local evaluation and training; workers in the fleet pass no keys and sample as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import LogitsProcessor, LogitsProcessorList

__all__ = ["KeyedRows", "RowTemperatures", "sampling_plan"]


def sampling_plan(
    temperatures: Sequence[float], keys: Sequence[int | None], device: torch.device
) -> tuple[dict[str, Any], LogitsProcessorList]:
    """The ``GenerationConfig`` sampling fields and the processors for rows at ``temperatures`` with
    ``keys`` (None: no key): keyed rows as ``KeyedRows``; else one temperature by the generator's own
    sampling, several by sampling at 1 after ``RowTemperatures``; all greedy, greedy decoding."""
    sampled = [row for row, t in enumerate(temperatures) if t > 0]
    if any(keys[row] is not None for row in sampled):
        return {"do_sample": False}, LogitsProcessorList([KeyedRows(temperatures, keys)])
    if not sampled:
        return {"do_sample": False}, LogitsProcessorList()
    mixed = len(set(temperatures)) > 1
    config = {"do_sample": True, "temperature": 1.0 if mixed else temperatures[0], "top_k": 0, "top_p": 1.0}
    return config, LogitsProcessorList([RowTemperatures(temperatures, device)] if mixed else [])


class RowTemperatures(LogitsProcessor):
    """Each row of a batch at its own temperature, for a generator sampling at 1: its logits over T, or
    for T = 0 all but the highest at -inf, so that sampling picks what greedy decoding would."""

    def __init__(self, temperatures: Sequence[float], device: torch.device) -> None:
        values = torch.tensor(temperatures, dtype=torch.float32, device=device)
        self._greedy = (values == 0)[:, None]
        self._scale = torch.where(values == 0, 1.0, values)[:, None]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        best = scores.argmax(dim=-1, keepdim=True)
        only_best = torch.full_like(scores, float("-inf")).scatter(-1, best, 0.0)
        return torch.where(self._greedy, only_best, scores / self._scale.to(scores.dtype))  # type: ignore[return-value]


class KeyedRows(LogitsProcessor):
    """For greedy decoding: each sampled row's logits over its temperature plus standard Gumbel noise from
    its own generator (seeded by its key; torch's generator for a row without one), so that the argmax is
    a sample of softmax(z / T) that depends on the row's key and prompt only. Rows at T = 0 pass as they
    are. Each call draws the next step's noise."""

    def __init__(self, temperatures: Sequence[float], keys: Sequence[int | None]) -> None:
        if len(temperatures) != len(keys):
            raise ValueError(f"{len(temperatures)} temperatures but {len(keys)} keys")
        self._rows = [
            (row, temperature, None if key is None else torch.Generator().manual_seed(key))
            for row, (temperature, key) in enumerate(zip(temperatures, keys, strict=True))
            if temperature > 0
        ]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        noisy = scores.clone()
        for row, temperature, generator in self._rows:
            uniform = torch.rand(
                scores.shape[-1],
                generator=generator,
                dtype=torch.float32,
                device="cpu" if generator is not None else scores.device,
            )
            gumbel = -torch.log(-torch.log(uniform))  # a uniform of 0 gives -inf: never the argmax
            noisy[row] = scores[row] / temperature + gumbel.to(device=scores.device, dtype=scores.dtype)
        return noisy  # type: ignore[return-value]
