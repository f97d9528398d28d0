"""An algorithm's answers checked against its contract (``distrl.learner.algorithm``) before the core
uses them: a plan that is a ``Plan`` of tensors shaped to its batch, targets whose ``trained`` is ``(N,)``,
losses that are a dict of scalar tensors with gradients. Each check gives what breaks the contract in
words (``"its loss returned a float, not a dict of scalar tensors"``), or "" where nothing does; the core
refuses the update with it. ``Guard`` makes the refusals of one update (``LearnerError``s naming it and
the algorithm): an algorithm that raises, breaks its contract, or answers a NaN or an infinity."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from distrl.errors import LearnerError
from distrl.learner.algorithm import Batch, Plan

__all__ = ["Guard", "losses_problem", "plan_problem", "targets_problem"]

T = TypeVar("T")
_FROM_THE_ALGORITHM = {
    "value": "plan",
    "advantage": "plan",
    "priority": "plan",
    "critic_loss": "plan's network_loss",
    "actor_loss": "loss",
}
"""The quantities an algorithm's own code computes, and which of its parts does."""


@dataclass(frozen=True, kw_only=True)
class Guard:
    """The refusals of one update: each a ``LearnerError`` naming the update, what failed and the
    algorithm, saying that the learner is as it was before it."""

    update: int
    """The update's number (the learner's updates so far + 1)."""
    algorithm: str
    """The algorithm's name."""
    source: str
    """How the inventory named it: ``module:Class`` for a user's own, whose code a hint then names."""

    def asking(self, what: str, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, the algorithm's ``what``; an exception from it refuses the update."""
        try:
            return call(*args)
        except (LearnerError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise LearnerError(
                f"update {self.update} refused: the algorithm {self.algorithm!r} failed in its {what}"
                f" ({type(exc).__name__}: {exc}); the learner is as it was before it",
                quantity=what,
                update=self.update,
            ) from exc

    def contract(self, what: str, problem: str) -> None:
        """Refuse the update where ``problem`` says what of the algorithm's ``what`` breaks the contract
        (one of the checks below); "": nothing does."""
        if problem:
            raise LearnerError(
                f"update {self.update} refused: the algorithm {self.algorithm!r} broke its contract:"
                f" {problem}; the learner is as it was before it",
                quantity=what,
                update=self.update,
            )

    def finite(self, quantity: str, values: torch.Tensor, what: str = "") -> None:
        """Refuse the update where ``values`` hold a NaN or an infinity; ``what`` names the quantity in
        the message (default: ``quantity`` in words)."""
        if bool(torch.isfinite(values).all()):
            return
        causes = "A learning rate too high, or damaged weights, do this"
        if ":" in self.source and quantity in _FROM_THE_ALGORITHM:  # a user's own algorithm computed it
            causes = (
                f"A learning rate too high, damaged weights or {self.source}'s own"
                f" {_FROM_THE_ALGORITHM[quantity]} do this"
            )
        raise LearnerError(
            f"update {self.update} refused: {what or 'the ' + quantity.replace('_', ' ')} is not finite (NaN"
            f" or infinite); the learner is as it was before it. {causes}",
            quantity=quantity,
            update=self.update,
        )


def plan_problem(plan: object, batch: Batch, networks: bool) -> str:
    """What of ``plan``, an algorithm's answer to ``batch``, breaks the contract; "" where nothing does.
    ``networks``: the algorithm has some, which its ``network_loss`` trains."""
    if not isinstance(plan, Plan):
        return f"its plan returned {_kind(plan)}, not a Plan"
    steps = len(batch.logprob)
    if plan.network_loss is not None:
        if not networks:  # nothing would train it, save it in checkpoints or move it to the device
            return (
                "its plan returned a network_loss, but its networks are None: the core trains, saves and"
                " moves only the modules in its networks (set networks to them)"
            )
        if problem := _scalar_problem(plan.network_loss, "its networks"):
            return f"its plan's network_loss {problem}"
    for name in ("advantages", "values"):
        tensor = getattr(plan, name)
        if tensor is not None and not (isinstance(tensor, torch.Tensor) and tuple(tensor.shape) == (steps,)):
            return f"its plan's {name} are {_kind(tensor)}, not a tensor of the batch's {steps} steps"
        if tensor is not None and not tensor.is_floating_point():
            return f"its plan's {name} are a tensor of {tensor.dtype}, not of floating point (.float() them)"
    priorities = plan.priorities
    if priorities is not None and not (
        isinstance(priorities, Sequence)
        and len(priorities) == len(batch.trajectories)
        and all(_number(p) for p in priorities)
    ):
        return f"its plan's priorities are {_kind(priorities)}, not a number for each of its trajectories"
    if priorities is not None and (low := min(priorities, default=0.0)) < 0:
        return f"its plan's priorities hold {low:g}: a priority is a sampling weight, 0 or more"
    if not (isinstance(plan.stats, Mapping) and all(_number(v) for v in plan.stats.values())):
        return f"its plan's stats are {_kind(plan.stats)}, not a dict of numbers"
    return ""


def targets_problem(targets: object, steps: int) -> str:
    """What of ``targets`` breaks the contract (their ``trained``, ``(N,)``); "" where nothing does."""
    trained = getattr(targets, "trained", None)
    if isinstance(trained, torch.Tensor) and tuple(trained.shape) == (steps,):
        return ""
    return f"its targets' trained is {_kind(trained)}, not a tensor of the batch's {steps} steps"


def losses_problem(losses: object) -> str:
    """What of ``losses``, an algorithm's loss on a chunk, breaks the contract; "" where nothing does."""
    if not isinstance(losses, Mapping):
        return f"its loss returned {_kind(losses)}, not a dict of scalar tensors"
    if not losses:
        return "its loss returned no loss for steps it trains (an empty dict)"
    devices = set()
    for name, value in losses.items():
        if problem := _scalar_problem(value, "the chunk's log-probs"):
            return f"its loss {name!r} {problem}"
        devices.add(value.device)
    if len(devices) > 1:
        where = ", ".join(f"{name!r} on {value.device}" for name, value in losses.items())
        return f"its losses are on different devices ({where}): compute each on the batch's device"
    return ""


def _scalar_problem(value: object, computed_from: str) -> str:
    """What keeps ``value`` from being a loss: a scalar tensor with a gradient (``computed_from`` names
    where it should come from); "" where nothing does."""
    if not isinstance(value, torch.Tensor):
        return f"is {_kind(value)}, not a scalar tensor"
    if value.dim() != 0:
        return f"is a tensor of shape {tuple(value.shape)}, not a scalar (sum or average it)"
    if not value.requires_grad:
        return f"has no gradient: it is not computed from {computed_from} (a constant, or detached)"
    return ""


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str:
    """``value``'s type in words: "a float", "None", "a tensor of shape (3, 2)"."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    name = type(value).__name__
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"
