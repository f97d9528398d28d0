"""RLOO (Ahmadian et al. 2024) as a loss module; its settings are ``[learner.rloo]``.

GRPO's machinery (``distrl.learner.algorithms.grpo``) with the leave-one-out baseline: each play's
advantage is its outcome minus the mean outcome of the other plays of its task group,
A_i = R_i − (1/(K − 1))·Σ_{j≠i} R_j, unscaled. Groups whose plays all scored alike are dropped and
counted as GRPO's are.
"""

from __future__ import annotations

import dataclasses

from distrl.learner.algorithm import SurrogateSettings
from distrl.learner.algorithms.grpo import GRPO, GRPOSettings

__all__ = ["RLOO", "RLOOSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RLOOSettings(SurrogateSettings):
    """``[learner.rloo]``: the clipped surrogate's settings (``clip``, ``decoupled``, ``behaviour_cap``,
    ``entropy_coef``)."""


class RLOO(GRPO):
    """RLOO as a loss module (module docstring)."""

    name = "rloo"
    Settings = RLOOSettings  # type: ignore[assignment]  # its own table, without GRPO's ``scale``
    leave_one_out = True

    def __init__(self, settings: RLOOSettings, *, features: int) -> None:
        own = dataclasses.asdict(settings)
        super().__init__(GRPOSettings(**own, scale=False), features=features)
