"""RLOO (Ahmadian et al. 2024) as a loss module; its settings are ``[learner.rloo]``.

GRPO's machinery (``distrl.learner.algorithms.grpo``) with the leave-one-out baseline: each play's
advantage is its outcome minus the mean outcome of the other plays of its task group,
A_i = R_i − (1/(K − 1))·Σ_{j≠i} R_j, unscaled. Groups whose plays all scored alike are dropped and
counted as GRPO's are.
"""

from __future__ import annotations

import dataclasses

from distrl.config.fields import num_field
from distrl.learner.algorithms.grpo import GRPO, GRPOSettings

__all__ = ["RLOO", "RLOOSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RLOOSettings:
    """``[learner.rloo]``: RLOO's hyper-parameters."""

    clip: float = num_field(0.2, gt=0, le=1)
    """ε: the ratio is clipped to [1 − ε, 1 + ε]."""
    decoupled: bool = True
    """The ratio against the update's starting policy and a capped importance weight to the behaviour
    policy; false: the ratio against the behaviour policy."""
    behaviour_cap: float = num_field(5.0, gt=0)
    """c, the cap of the decoupled importance weight π_prox/μ."""
    entropy_coef: float = num_field(0.0, ge=0)
    """β of an entropy bonus −β·H (0: none)."""


class RLOO(GRPO):
    """RLOO as a loss module (module docstring)."""

    name = "rloo"
    Settings = RLOOSettings  # type: ignore[assignment]  # its own table, without GRPO's ``scale``
    leave_one_out = True

    def __init__(self, settings: RLOOSettings, *, features: int) -> None:
        own = dataclasses.asdict(settings)
        super().__init__(GRPOSettings(**own, scale=False), features=features)
