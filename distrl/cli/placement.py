"""Where the learner's ranks go on this machine, checked before anything is loaded: ``check`` and ``run``
refuse in one sentence naming the file and the key (``learner.device``, ``learner.devices[1]``,
``learner.ranks``) a device torch does not know, one this machine does not have, and more ranks than it
can hold.

The bound on ``learner.ranks``: every rank is a process that loads the whole model. Without
``learner.devices``, rank r of a CUDA learner trains on ``cuda:r``, so there are at most as many ranks as
visible GPUs; CPU ranks share this machine's cores out (each gets cores / ranks threads, at least one), so
more ranks than cores add copies of the model and no arithmetic. Under ``torchrun`` the ranks are
``torchrun``'s, spread over its machines, and only the device names are checked here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from distrl.config import Inventory
from distrl.errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = ["placement_problem"]

_KINDS = ("cpu", "cuda", "mps")
"""The kinds of torch device the learner trains on."""


def placement_problem(inventory: Inventory) -> str:
    """Why the learner's ranks cannot be placed on this machine as ``inventory`` says, as
    ``file: learner.key: problem`` ("": they can)."""
    learner = inventory.learner
    if learner.ranks == 1 and not learner.devices and learner.device in ("auto", "cpu"):
        return ""  # one rank, on the CPU or the first GPU: nothing to check, and torch is not imported
    import torch

    from distrl.learner.ranks import torchrun_rank

    source = inventory.source or None
    named = [(f"learner.devices[{index}]", name) for index, name in enumerate(learner.devices)] or [
        ("learner.device", learner.device)
    ]
    devices: list[torch.device] = []
    for key, name in named:
        device, problem = _device(name)
        if problem:
            return str(ConfigError.at(key, problem, source))
        devices.append(device)
    if torchrun_rank() is not None:
        return ""
    if learner.devices:
        problem = _one_kind_each_gpu_once(devices)
        return str(ConfigError.at("learner.devices", problem, source)) if problem else ""
    if devices[0].type == "cuda":
        gpus = torch.cuda.device_count()
        if learner.ranks > gpus:
            return str(
                ConfigError.at(
                    "learner.ranks",
                    f"= {learner.ranks} puts rank r on cuda:r, and this machine has {_gpus(gpus)}: give"
                    " fewer ranks, or name each rank's device in learner.devices",
                    source,
                )
            )
    elif learner.ranks > (cores := _cores()):
        return str(
            ConfigError.at(
                "learner.ranks",
                f"= {learner.ranks} CPU ranks, and this machine has {cores} cores: each rank is a process"
                " holding the model, and more ranks than cores only share the same cores",
                source,
            )
        )
    return ""


def _device(name: str) -> tuple[torch.device, str]:
    """The device ``name`` is here (``auto``: CUDA where present, else the CPU), and why it cannot train
    on this machine ("": it can)."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu"), ""
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        return torch.device("cpu"), f"{name!r} is not a device torch knows (cpu, cuda, cuda:N or mps)"
    if device.type not in _KINDS:
        return device, f"{name!r} is no device the learner trains on (cpu, cuda, cuda:N or mps)"
    if device.type == "cuda":
        gpus = torch.cuda.device_count()
        if (device.index or 0) >= gpus:
            return device, f"{name!r} is no GPU of this machine, which has {_gpus(gpus)}"
    if device.type == "mps" and not torch.backends.mps.is_available():
        return device, f"{name!r}: this machine has no MPS device"
    return device, ""


def _one_kind_each_gpu_once(devices: list[torch.device]) -> str:
    """Why ``learner.devices`` cannot link its ranks ("": they can): one backend links them all, NCCL for
    CUDA ranks and gloo for CPU ones, and NCCL takes one rank per GPU; CPU ranks share the cores."""
    kinds = sorted({device.type for device in devices})
    if len(kinds) > 1:
        return f"mixes {' and '.join(kinds)} ranks: NCCL links CUDA ranks and gloo CPU ones, never both"
    gpus = [device.index or 0 for device in devices if device.type == "cuda"]
    twice = sorted({index for index in gpus if gpus.count(index) > 1})
    if twice:
        return f"names cuda:{twice[0]} for more than one rank: NCCL takes one rank per GPU"
    cpu_ranks = sum(device.type == "cpu" for device in devices)
    if cpu_ranks > (cores := _cores()):
        return (
            f"names {cpu_ranks} CPU ranks, and this machine has {cores} cores: each rank is a process"
            " holding the model, and more ranks than cores only share the same cores"
        )
    return ""


def _gpus(count: int) -> str:
    if count == 0:
        return "no CUDA GPU torch can use"
    return f"{count} CUDA GPU{'s' * (count != 1)} (cuda:0{f' to cuda:{count - 1}' * (count > 1)})"


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
