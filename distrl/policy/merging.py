"""Serving with the adapter folded into the base weights: what a worker does, since it never trains.

An unmerged LoRA adds two small matmuls (and their kernel launches) to every adapted layer at every decode
step; folded in, W' = W + s·B·A, a step costs what the base model's does. ``Merged`` keeps a pristine
copy of every adapted layer's base weight (on the CPU, so the accelerator's memory holds one model) and
folds each new version into that copy, never into the previous fold: rounding does not accumulate over
thousands of versions, and loading the zero adapter gives back the base bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator

import peft
import torch
from peft.tuners.lora import LoraLayer

__all__ = ["Merged"]


class Merged:
    """The adapter of ``model`` folded into its base weights, refolded by ``refold`` after each new
    adapter state."""

    def __init__(self, model: peft.PeftModel) -> None:
        self._layers = list(_lora_layers(model))
        self._weights = [_weight(layer) for layer in self._layers]
        self._pristine = [weight.detach().to("cpu", copy=True) for weight in self._weights]
        self.refold()

    def refold(self) -> None:
        """Put every adapted layer's pristine base weight back, then fold the adapter in as it is now."""
        with torch.no_grad():
            for layer, weight, pristine in zip(self._layers, self._weights, self._pristine, strict=True):
                weight.copy_(pristine)
                layer.merged_adapters.clear()  # the base is pristine again: nothing is folded in
                layer.merge()


def _weight(layer: LoraLayer) -> torch.Tensor:
    weight = layer.get_base_layer().weight
    assert isinstance(weight, torch.Tensor)
    return weight


def _lora_layers(model: peft.PeftModel) -> Iterator[LoraLayer]:
    for module in model.modules():
        if isinstance(module, LoraLayer):
            yield module
