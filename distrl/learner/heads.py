"""The critics: three small heads that read the policy's own last hidden state.

Why heads on the policy's features: the learner already runs the policy over every sampled step (for
log π and the entropy), and that forward pass ends in a hidden state that has read the screen, the goal
and the history. A two-layer MLP on it costs nothing next to the policy; a separate model (DigiRL's
RoBERTa plus BLIP-2 features) would double the learner's work and its memory. The heads see the state
**detached**: critic losses train only the heads, and the actor loss trains only the adapter, so the
two never pull the shared features in different directions. The features drift as the adapter learns,
and the heads follow them, as target networks do.

- ``step``: V(s_t) = P(the episode succeeds | s_t), from the state at the last prompt token.
- ``trajectory``: V_traj(s_H, a_H) on the terminal pair (paper: L(V_traj)), from the state at the end
  of the last answer.
- ``instruction``: DigiRL's V_instr(c), from the first step's state (the task's start screen and goal).

Each head outputs a logit; the value is its sigmoid, trained with binary cross-entropy as the paper's
critics are.
"""

from __future__ import annotations

import torch

__all__ = ["Critics"]


def _head(features: int, width: int) -> torch.nn.Sequential:
    return torch.nn.Sequential(
        torch.nn.LayerNorm(features),
        torch.nn.Linear(features, width),
        torch.nn.GELU(),
        torch.nn.Linear(width, 1),
    )


class Critics(torch.nn.Module):
    """The step, trajectory and instruction value heads over ``features``-wide hidden states."""

    def __init__(self, features: int, width: int = 256) -> None:
        super().__init__()
        self.features = features
        self.step = _head(features, width)
        self.trajectory = _head(features, width)
        self.instruction = _head(features, width)

    @staticmethod
    def logit(head: torch.nn.Module, states: torch.Tensor) -> torch.Tensor:
        """The head's logits for ``states`` ``(n, features)``, detached from the policy; ``(n,)``."""
        out: torch.Tensor = head(states.detach().float())
        return out.squeeze(-1)
