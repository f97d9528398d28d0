"""Loading a policy's parts: the device and dtype, the base model (``tiny``, ``tiny-bc``, ``tiny-weak`` or a
local Hugging Face folder of the Qwen2-VL family) with its ``Prompter``, and its LoRA adapter (fresh from
the settings, or a PEFT folder). Every failure is one ``PolicyError`` sentence."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import peft
import torch
import transformers
from safetensors import SafetensorError
from transformers import AutoConfig, AutoModelForImageTextToText, PreTrainedModel

from distrl.config import PRETRAINED, PolicySettings
from distrl.errors import PolicyError
from distrl.policy.prompt import Prompter
from distrl.policy.tiny import build_pretrained, build_tiny

__all__ = [
    "QWEN_VL_FAMILY",
    "attach_adapter",
    "load_base",
    "model_folder",
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
    if not folder.is_dir():
        raise PolicyError(f"the model folder {where} does not exist", model=model, phase="load")
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
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        problem = f"the model in {where} cannot be loaded ({exc})"
        raise PolicyError(problem, model=model, phase="load") from exc
    return base, prompter


def attach_adapter(base: PreTrainedModel, settings: PolicySettings) -> peft.PeftModel:
    if settings.adapter:
        folder = Path(settings.adapter).expanduser()
        where = repr(str(folder))
        if not (folder / "adapter_config.json").is_file():
            raise PolicyError(
                f"{where} is not a PEFT adapter folder (it has no adapter_config.json)",
                model=settings.model,
                phase="adapter",
            )
        try:
            with _peft_quietly():
                loaded = peft.PeftModel.from_pretrained(base, str(folder), is_trainable=True)
                stored = peft.utils.load_peft_weights(str(folder), device="cpu")
        except SafetensorError as exc:  # a truncated or garbled weights file
            problem = f"the adapter weights in {where} are damaged ({exc})"
            raise PolicyError(problem, model=settings.model, phase="adapter") from exc
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            problem = f"the adapter in {where} does not fit the model ({exc})"
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


@contextlib.contextmanager
def _peft_quietly() -> Iterator[None]:
    """peft reads ``is_gradient_checkpointing``, which transformers 5 deprecates with a FutureWarning; and
    it warns of an adapter file's missing keys, which ``_incomplete`` turns into a refusal."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
        warnings.filterwarnings("ignore", "Found missing adapter keys", UserWarning)
        yield
