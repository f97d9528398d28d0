"""How a batch of prompts becomes answers: the decoding engine behind ``Policy.sample`` (``[policy] engine``).

An engine says how many rows it decodes for a batch (``rows``) and runs one ``generate`` call over them
(``generate``): the answers' tokens and the raw logits of each step, from which ``Policy`` takes the
behaviour log-probs. Sampling itself (temperatures, the per-row processor, the seed, forbidden tokens)
stays in the ``GenerationConfig`` and the processors the policy passes, so every engine samples from the
same distribution and the log-probs stay exact.

- ``eager`` (the default): transformers' ``generate`` with its dynamic KV cache, each decode step run
  op by op. No warm-up; a step costs many small kernel launches.
- ``compiled``: a static KV cache (its length rounded up to ``CACHE_STEP`` tokens, so that most prompts
  fit one size) and the decode step compiled by ``torch.compile``: on CUDA in ``reduce-overhead`` mode,
  which captures the step as a CUDA graph and replays it with one launch; on a CPU by inductor's C++
  kernels. The prefill runs eagerly. A compiled step is specialised to its shapes, so a batch is padded
  to the next power of two rows (copies of its last row, whose answers are dropped): a worker compiles
  once per power of two up to ``max_batch`` and once per cache size, each time it first meets it (tens of
  seconds on a CPU). torch recompiles a function at most ``torch._dynamo.config.recompile_limit`` times
  (8) before running it eagerly, so ``max_batch`` above 64 or very varied prompt lengths lose the
  compiled step for the larger shapes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Literal

import torch
from transformers import CompileConfig, GenerationConfig, LogitsProcessorList

__all__ = ["CACHE_STEP", "CompiledEngine", "EagerEngine", "Engine", "make_engine"]

CACHE_STEP = 256
"""The compiled engine's static cache holds a multiple of this many tokens."""


class Engine:
    """What ``Policy.sample`` asks of a decoding engine; as it is, ``eager``: transformers' ``generate``
    with its dynamic KV cache, each step op by op. Another engine overrides ``rows`` and ``generate``."""

    name = "eager"

    def rows(self, batch: int) -> int:
        """How many rows to decode for a batch of ``batch`` prompts (at least ``batch``; the policy fills
        the rest with copies of the last prompt and drops their answers)."""
        return batch

    def generate(
        self,
        model: torch.nn.Module,
        inputs: Mapping[str, torch.Tensor],
        config: GenerationConfig,
        processors: LogitsProcessorList,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """Decode ``inputs`` (collated prompts) under ``config`` (which asks for the logits) and
        ``processors``: the tokens generated after the prompt, ``(rows, steps)``, and each step's raw
        logits, ``steps`` tensors of ``(rows, vocab)``."""
        output = model.generate(**inputs, generation_config=config, logits_processor=processors)  # type: ignore[operator]
        return output.sequences[:, inputs["input_ids"].shape[1] :], tuple(output.logits)


EagerEngine = Engine
"""``[policy] engine = "eager"``: the engine as it is."""


class CompiledEngine(Engine):
    """A static KV cache and a compiled decode step (CUDA graphs on CUDA); batches padded to powers of
    two so that the compiled shapes repeat."""

    name = "compiled"

    def rows(self, batch: int) -> int:
        return 1 << max(batch - 1, 0).bit_length()

    def generate(
        self,
        model: torch.nn.Module,
        inputs: Mapping[str, torch.Tensor],
        config: GenerationConfig,
        processors: LogitsProcessorList,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        cuda = inputs["input_ids"].device.type == "cuda"
        static = copy.deepcopy(config)
        static.cache_implementation = "static"
        longest = int(inputs["input_ids"].shape[1]) + int(config.max_new_tokens)
        static.max_cache_len = -(-longest // CACHE_STEP) * CACHE_STEP
        static.compile_config = CompileConfig(dynamic=False, mode="reduce-overhead" if cuda else "default")
        static.compile_config._compile_all_devices = True  # else transformers compiles on accelerators only
        return super().generate(model, inputs, static, processors)


def make_engine(name: Literal["eager", "compiled"]) -> Engine:
    """The engine ``[policy] engine`` names."""
    if name == "compiled":
        return CompiledEngine()
    if name == "eager":
        return EagerEngine()
    raise ValueError(f"no engine {name!r}: eager or compiled")
