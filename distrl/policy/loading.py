"""Loading a policy's parts: the device and dtype, the base model (``tiny``, ``tiny-bc``, ``tiny-weak`` or a
local Hugging Face folder of the Qwen2-VL family) with its ``Prompter``, and its LoRA adapter (fresh from
the settings, or a PEFT folder). Every failure is one ``PolicyError`` sentence."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import peft
import torch
import transformers
from safetensors import SafetensorError, safe_open
from transformers import AutoConfig, AutoModelForImageTextToText, PreTrainedModel

from distrl.config import BUILT_IN_BASES, PRETRAINED, PolicySettings
from distrl.errors import PolicyError
from distrl.policy.prompt import Prompter
from distrl.policy.tiny import build_pretrained, build_tiny

__all__ = [
    "QWEN_VL_FAMILY",
    "attach_adapter",
    "check_adapter",
    "load_base",
    "model_folder",
    "other_base",
    "resolve_device",
    "resolve_dtype",
]

QWEN_VL_FAMILY = frozenset({"qwen2_vl", "qwen2_5_vl"})
"""``model_type`` values of the models ``Prompter`` builds prompts for."""

_DTYPES: Mapping[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU; anything else as ``torch.device`` reads it."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise PolicyError(f"{device!r} is not a device torch knows", phase="load") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise PolicyError(f"device {device!r} was asked for but CUDA is not available", phase="load")
    return resolved


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` is bfloat16 on a CUDA device that supports it, else float32; the others by name."""
    if dtype == "auto":
        bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if bf16 else torch.float32
    if dtype not in _DTYPES:
        raise PolicyError(f"dtype {dtype!r} is not one of auto, {', '.join(_DTYPES)}", phase="load")
    return _DTYPES[dtype]


def model_folder(model: str) -> Path:
    """The folder ``model`` names, where it holds a Hugging Face model's ``config.json``; else a
    ``PolicyError`` (before anything is loaded: what a command checks before it starts)."""
    folder = Path(model).expanduser()
    where = repr(str(folder))
    if not os.path.isdir(folder):
        what = "is a file, not a folder" if os.path.exists(folder) else "does not exist"
        raise PolicyError(f"the model folder {where} {what}", model=model, phase="load")
    if not (folder / "config.json").is_file():
        raise PolicyError(
            f"{where} is not a Hugging Face model folder (it has no config.json)", model=model, phase="load"
        )
    return folder


def load_base(model: str, dtype: torch.dtype, seed: int) -> tuple[PreTrainedModel, Prompter]:
    if model == "tiny":
        return build_tiny(seed)
    if model in PRETRAINED:
        return build_pretrained(model)
    # a progress bar per load would cut through distrl's own progress lines (and every worker loads)
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # unannotated
    folder = model_folder(model)
    where = repr(str(folder))
    try:
        config = AutoConfig.from_pretrained(str(folder))
    except (OSError, ValueError, KeyError) as exc:
        problem = f"{where} has an unreadable config.json ({exc})"
        raise PolicyError(problem, model=model, phase="load") from exc
    model_type = getattr(config, "model_type", "") or "unknown"
    if model_type not in QWEN_VL_FAMILY:
        raise PolicyError(
            f"{where} holds a {model_type} model, not a vision-language model distrl can prompt"
            f" (supported: {', '.join(sorted(QWEN_VL_FAMILY))})",
            model=model,
            phase="load",
        )
    try:
        base = AutoModelForImageTextToText.from_pretrained(str(folder), dtype=dtype)
        prompter = Prompter.from_pretrained(folder)
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc.message}", model=model, phase="load") from exc
    except SafetensorError as exc:  # a truncated or garbled weights file
        problem = f"the model weights in {where} are damaged ({exc})"
        raise PolicyError(problem, model=model, phase="load") from exc
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        problem = f"the model in {where} cannot be loaded ({exc})"
        raise PolicyError(problem, model=model, phase="load") from exc
    return base, prompter


def attach_adapter(base: PreTrainedModel, settings: PolicySettings) -> peft.PeftModel:
    if settings.adapter:
        folder = Path(settings.adapter).expanduser()
        where = repr(str(folder))
        try:
            check_adapter(folder)
        except PolicyError as exc:
            raise PolicyError(exc.message, model=settings.model, phase="adapter") from exc
        try:
            with _peft_quietly():
                loaded = peft.PeftModel.from_pretrained(base, str(folder), is_trainable=True)
                stored = peft.utils.load_peft_weights(str(folder), device="cpu")
        except SafetensorError as exc:  # a truncated or garbled weights file
            problem = f"the adapter weights in {where} are damaged ({exc})"
            raise PolicyError(problem, model=settings.model, phase="adapter") from exc
        except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
            problem = f"the adapter in {where} does not fit the model ({_misfit(exc)})"
            raise PolicyError(problem, model=settings.model, phase="adapter") from exc
        if problem := _incomplete(loaded, stored.keys()):
            raise PolicyError(f"the adapter in {where} {problem}", model=settings.model, phase="adapter")
        return loaded
    targets: str | list[str] = (
        "all-linear" if settings.lora_targets == ("all-linear",) else list(settings.lora_targets)
    )
    config = peft.LoraConfig(
        r=settings.lora_rank,
        lora_alpha=settings.lora_alpha,  # type: ignore[arg-type]  # annotated int; any number scales
        lora_dropout=settings.lora_dropout,
        target_modules=targets,
    )
    try:
        with _peft_quietly():
            model: peft.PeftModel = peft.get_peft_model(base, config)
    except ValueError as exc:
        raise PolicyError(
            f"the LoRA targets {list(settings.lora_targets)} do not fit the model ({exc})",
            model=settings.model,
            phase="adapter",
        ) from exc
    return model


def check_adapter(adapter: str | Path) -> dict[str, Any]:
    """The ``adapter_config.json`` of the PEFT adapter folder ``adapter``, once what can be seen without a
    model holds: the config is a JSON object naming its ``peft_type``, the weights file is there and whole
    (its header read, not its tensors) and holds tensors, and a LoRA's tensors are of the config's rank.
    Else a ``PolicyError`` that says which (a run's folder with no checkpoint yet, too). Whether the
    tensors fit a model is for ``attach_adapter`` to find."""
    folder = Path(adapter).expanduser()
    where = repr(str(folder))
    config_file = folder / peft.utils.CONFIG_NAME
    if not config_file.is_file():
        raise PolicyError(_no_adapter(folder), phase="adapter")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read {str(config_file)!r} ({exc})", phase="adapter") from exc
    except ValueError as exc:
        raise PolicyError(f"{str(config_file)!r} is not JSON ({exc})", phase="adapter") from exc
    if not isinstance(config, dict) or not isinstance(config.get("peft_type"), str):
        problem = f"{str(config_file)!r} is no PEFT adapter config (it names no peft_type)"
        raise PolicyError(problem, phase="adapter")
    weights = folder / peft.utils.SAFETENSORS_WEIGHTS_NAME
    if not weights.is_file():
        if (folder / peft.utils.WEIGHTS_NAME).is_file():
            return config  # a pickled adapter: peft reads it, and nothing here can look inside unloaded
        problem = f"{where} has no {weights.name} (the adapter's weights), only its {config_file.name}"
        raise PolicyError(problem, phase="adapter")
    try:
        with safe_open(str(weights), framework="pt") as file:
            names = file.keys()  # safe_open is no mapping: not iterable
            shapes = {name: tuple(file.get_slice(name).get_shape()) for name in names}
    except (SafetensorError, OSError) as exc:  # a truncated or garbled weights file
        raise PolicyError(f"the adapter weights in {where} are damaged ({exc})", phase="adapter") from exc
    if not shapes:
        raise PolicyError(
            f"the adapter in {where} holds no tensors (its weights file is empty)", phase="adapter"
        )
    if problem := _off_rank(config, shapes):
        raise PolicyError(f"the adapter in {where}: {problem}", phase="adapter")
    return config


def other_base(adapter: str | Path, model: str) -> str:
    """The model the adapter folder ``adapter`` was trained on, as its config's ``base_model_name_or_path``
    names it, where that is a built-in model or a folder on this machine and not ``model`` (a built-in
    name or a folder); "" when it is ``model``, or names nothing that can be told apart from it (empty, a
    Hub id, a folder that is gone). Every adapter distrl writes names its base (``Adapter.save``)."""
    try:
        config = json.loads((Path(adapter).expanduser() / peft.utils.CONFIG_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""  # check_adapter's to refuse
    base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    if not isinstance(base, str) or not base:
        return ""
    if base in BUILT_IN_BASES:
        return "" if base == model else base
    folder = Path(base).expanduser()
    if not folder.is_dir():
        return ""
    if model in BUILT_IN_BASES or folder.resolve() != Path(model).expanduser().resolve():
        return base
    return ""


def _no_adapter(folder: Path) -> str:
    """Why ``folder``, which holds no ``adapter_config.json``, is no adapter, in words."""
    where = repr(str(folder))
    if not folder.exists():
        return f"the adapter folder {where} does not exist"
    if (folder / "checkpoints").is_dir():
        return f"{where} is a run folder with no complete checkpoint yet (in its checkpoints folder)"
    if (folder / "latest").is_file() or any(folder.glob("step-*")):
        return f"{where} is a checkpoints folder with no complete checkpoint"
    return f"{where} is not a PEFT adapter folder (it has no adapter_config.json)"


def _off_rank(config: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> str:
    """Where a LoRA adapter's tensors (``shapes`` by name) are of another rank than its config's ``r``, in
    words ("": nowhere, or not a LoRA of one rank for all its layers)."""
    rank = config.get("r")
    if config.get("peft_type") != "LORA" or not isinstance(rank, int) or config.get("rank_pattern"):
        return ""
    ranks = {
        name: shape[0] if ".lora_A." in name else shape[1]
        for name, shape in shapes.items()
        if (".lora_A." in name and shape) or (".lora_B." in name and len(shape) > 1)
    }
    wrong = sorted(name for name, found in ranks.items() if found != rank)
    if not wrong:
        return ""
    found = sorted({ranks[name] for name in wrong})
    mismatch = "its tensors do not match its adapter_config.json"
    if len(wrong) == len(ranks) and len(found) == 1:
        return f"{mismatch}: lora rank {found[0]} in the weights, {rank} in the config"
    return (
        f"{mismatch}: {len(wrong)} of its {len(ranks)} LoRA tensors are not of rank {rank}, such as"
        f" {wrong[0]!r} of shape {shapes[wrong[0]]}"
    )


_SIZE_MISMATCH = re.compile(
    r"size mismatch for (\S+): copying a param with shape torch\.Size\((\[[^\]]*\])\) from checkpoint,"
    r" the shape in current model is torch\.Size\((\[[^\]]*\])\)"
)


def _misfit(exc: Exception) -> str:
    """Why loading an adapter failed, in one line: torch's list of every tensor of the wrong shape (a
    line each) as their count and the first."""
    mismatches = _SIZE_MISMATCH.findall(str(exc))
    if not mismatches:
        return " ".join(str(exc).split())
    name, got, wanted = mismatches[0]
    counted = f"{len(mismatches)} tensor{'s' if len(mismatches) != 1 else ''}"
    return f"{counted} of the wrong shape, such as {name!r}: {got} in the adapter, {wanted} in the model"


def _incomplete(model: peft.PeftModel, stored: Iterable[str]) -> str:
    """What the adapter file's tensor names ``stored`` lack of ``model``'s adapter, in words ("": nothing).
    peft loads what is there and leaves the rest as initialised, so a file of no tensors would pass for an
    adapter that changes nothing."""
    wanted = set(peft.get_peft_model_state_dict(model, save_embedding_layers=False))
    names = set(stored)
    if not names:
        return "holds no tensors (its weights file is empty)"
    if missing := sorted(wanted - names):
        return f"lacks {len(missing)} of the model's {len(wanted)} adapter tensors, such as {missing[0]!r}"
    return ""


_QUIET = threading.Lock()
"""``warnings.catch_warnings`` swaps the process's one list of filters: two threads inside it at once
(the learner's and a worker's load run side by side) put back each other's lists, so a warning slips out
or a filter stays behind. One at a time, they do not."""


@contextlib.contextmanager
def _peft_quietly() -> Iterator[None]:
    """peft reads ``is_gradient_checkpointing``, which transformers 5 deprecates with a FutureWarning; and
    it warns of an adapter file's missing keys, which ``_incomplete`` turns into a refusal."""
    with _QUIET, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
        warnings.filterwarnings("ignore", "Found missing adapter keys", UserWarning)
        yield
