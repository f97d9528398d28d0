"""``UpdateReport``: what one ``Learner.update`` did, as the fleet's board and TensorBoard read it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

__all__ = ["UpdateReport"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class UpdateReport:
    """What one ``Learner.update`` did."""

    update: int
    """The update's number (1 for the first); the learner's version after it."""
    trajectories: int
    steps: int
    trained_steps: int
    """Steps in the actor loss after the algorithm's filters (those whose weights are not both 0)."""
    actor_loss: float
    critic_loss: float
    """The algorithm's networks' loss (0 without networks)."""
    entropy: float
    """Mean per-token entropy of the sampled steps' answers."""
    mean_rho: float
    clipped_share: float
    """Share of steps whose ρ exceeded the algorithm's clip (its ``clipped_share`` stat; 0 without)."""
    mean_advantage: float
    mean_value: float
    """The mean of the algorithm's values V(s_t) (0 without a value network)."""
    mean_priority: float
    staleness: tuple[int, ...]
    """Per sampled step: learner version − the version that chose it."""
    wall_s: float
    kl: float = 0.0
    """Mean KL(π ‖ π_ref) of the trained answers to the starting policy, per answer (its tokens' KLs
    summed; 0 without the anchor)."""
    losses: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """The algorithm's named losses, each summed over the update's chunks (``actor_loss`` is their total
    with the anchor); with several ranks, over this rank's chunks (a rank may have none, and knows no
    names then)."""
    stats: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """What else the algorithm reported (``Plan.stats``)."""
