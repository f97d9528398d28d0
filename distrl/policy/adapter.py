"""``Adapter``: a policy's LoRA adapter as state: its weights by name, its PEFT folder, switched off for a
reference pass, or served folded into the base weights.

Serving folded is what a worker does, since it never trains. An unmerged LoRA adds two small matmuls (and
their kernel launches) to every adapted layer at every decode step; folded in, W' = W + s·B·A, a step
costs what the base model's does. The fold keeps a pristine copy of every adapted layer's base weight (on
the CPU, so the accelerator's memory holds one model) and folds each new version into that copy, never
into the previous fold: rounding does not accumulate over thousands of versions, and loading the zero
adapter gives back the base bit for bit.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import peft
import torch
from peft.tuners.lora import LoraLayer
from safetensors import SafetensorError

from distrl.config import BUILT_IN_MODELS
from distrl.errors import PolicyError

__all__ = ["Adapter"]


class Adapter:
    """The LoRA adapter of ``model``, whose base is the model ``base`` (a built-in name or a folder)."""

    def __init__(self, model: peft.PeftModel, base: str) -> None:
        self._model = model
        self._base = base
        self._layers = [module for module in model.modules() if isinstance(module, LoraLayer)]
        self._folded: _Folded | None = None
        """The adapter folded into the base weights, once ``serve_merged`` is called."""

    def save(self, folder: str | Path) -> None:
        """Write the adapter as a PEFT folder (``adapter_config.json``, ``adapter_model.safetensors``)
        that ``peft.PeftModel.from_pretrained(base_model, folder)`` loads without distrl.

        Its config names its base: the model folder (absolute, so that
        ``AutoPeftModelForImageTextToText.from_pretrained(folder)`` finds it and downloads nothing), or
        for the built-in models their name (``tiny-bc``: ``distrl.policy.tiny.build_pretrained()`` builds
        it)."""
        self._model.save_pretrained(str(folder), save_embedding_layers=False)
        base = self._base if self._base in BUILT_IN_MODELS else str(Path(self._base).resolve())
        config = Path(folder) / "adapter_config.json"
        data = json.loads(config.read_text(encoding="utf-8"))
        data["base_model_name_or_path"] = base
        config.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def state(self) -> dict[str, torch.Tensor]:
        """The adapter's weights by their PEFT file names, as CPU copies (what ``weights`` snapshots)."""
        return {
            name: tensor.detach().to("cpu", copy=True) for name, tensor in _state_dict(self._model).items()
        }

    def load_state(self, state: Mapping[str, torch.Tensor]) -> None:
        """Set the adapter's weights to ``state`` exactly (the names, shapes and dtypes of ``state()``),
        folded in again when served merged. All or nothing: a mismatch raises ``PolicyError`` and changes
        nothing."""
        current = _state_dict(self._model)
        missing = sorted(current.keys() - state.keys())
        unknown = sorted(state.keys() - current.keys())
        if missing or unknown:
            problem = f"lacks {missing[0]!r}" if missing else f"has the unknown tensor {unknown[0]!r}"
            raise PolicyError(
                f"the adapter state does not fit this adapter: it {problem}"
                f" ({len(missing)} missing, {len(unknown)} unknown)",
                phase="adapter",
            )
        for name, tensor in current.items():
            new = state[name]
            if new.shape != tensor.shape or new.dtype != tensor.dtype:
                raise PolicyError(
                    f"the adapter state's {name!r} is {new.dtype} {tuple(new.shape)},"
                    f" the adapter's is {tensor.dtype} {tuple(tensor.shape)}",
                    phase="adapter",
                )
        with torch.no_grad():
            for name, tensor in current.items():
                tensor.copy_(state[name])
        if self._folded is not None:
            self._folded.refold()

    def load_folder(self, folder: str | Path) -> None:
        """Set the adapter's weights to those ``save`` wrote to ``folder`` for an adapter of this one's
        shape (another checkpoint of the same run), as ``load_state`` does: the base model is not loaded
        again. ``PolicyError`` when the folder holds no adapter weights, they cannot be read or they do not
        fit; the weights are then unchanged. A folder only: nothing is looked up on the Hugging Face Hub."""
        weights = Path(folder).expanduser() / peft.utils.SAFETENSORS_WEIGHTS_NAME
        if not weights.is_file():
            raise PolicyError(f"{str(folder)!r} holds no adapter weights ({weights.name})", phase="adapter")
        try:
            state = peft.utils.load_peft_weights(str(weights.parent), device="cpu")
        except (OSError, ValueError, SafetensorError) as exc:
            raise PolicyError(f"cannot read the adapter in {folder} ({exc})", phase="adapter") from exc
        self.load_state(state)

    @property
    def changes_nothing(self) -> bool:
        """Whether the adapter leaves the base model as it is: every LoRA B matrix zero, as peft initialises
        them (a run's checkpoint saved before its first actor update, in the critic's warm-up)."""
        return not any(
            bool(tensor.any()) for name, tensor in self._model.named_parameters() if "lora_B" in name
        )

    def serve_merged(self) -> None:
        """Fold the adapter into the base weights from now on: each answer costs what the base model's
        does, and every ``load_state`` folds the new adapter into a pristine copy of the base. For a
        worker, which never trains; idempotent."""
        if self._folded is None:
            self._folded = _Folded(self._layers)

    @property
    def merged(self) -> bool:
        """Whether the adapter is served folded into the base weights."""
        return self._folded is not None

    @contextlib.contextmanager
    def disabled(self) -> Iterator[None]:
        """The base model alone for the duration: what peft's ``disable_adapter`` does, without its walk
        over every module to check their state on each call (a tenth of an update on ``tiny``)."""
        for layer in self._layers:
            layer.enable_adapters(False)
        try:
            yield
        finally:
            for layer in self._layers:
                layer.enable_adapters(True)


class _Folded:
    """The adapter of ``layers`` folded into their base weights, refolded by ``refold`` after each new
    adapter state."""

    def __init__(self, layers: Sequence[LoraLayer]) -> None:
        self._layers = layers
        self._weights = [_weight(layer) for layer in layers]
        self._pristine = [weight.detach().to("cpu", copy=True) for weight in self._weights]
        self.refold()

    def refold(self) -> None:
        """Put every adapted layer's pristine base weight back, then fold the adapter in as it is now."""
        with torch.no_grad():
            for layer, weight, pristine in zip(self._layers, self._weights, self._pristine, strict=True):
                weight.copy_(pristine)
                layer.merged_adapters.clear()  # the base is pristine again: nothing is folded in
                layer.merge()


def _state_dict(model: peft.PeftModel) -> dict[str, torch.Tensor]:
    """The adapter's weights by their PEFT file names. ``save_embedding_layers=False``: the adapter never
    resizes the vocabulary, and peft's default ("auto") looks the base model's name up on the Hugging Face
    Hub each time when it is no local folder (``tiny-bc``), a request per weights snapshot."""
    state: dict[str, torch.Tensor] = peft.get_peft_model_state_dict(model, save_embedding_layers=False)
    return state


def _weight(layer: LoraLayer) -> torch.Tensor:
    weight = layer.get_base_layer().weight
    assert isinstance(weight, torch.Tensor)
    return weight
