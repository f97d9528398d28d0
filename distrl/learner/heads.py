"""Value heads: small networks on the policy's own last hidden state, for the algorithms' critics.

Why heads on the policy's features: the learner already runs the policy over every sampled step (for
log π and the entropy), and that forward pass ends in a hidden state that has read the screen, the goal
and the history. A two-layer MLP on it costs nothing next to the policy; a separate model (DigiRL's
RoBERTa plus BLIP-2 features) would double the learner's work and its memory. The heads see the state
**detached**: critic losses train only the heads, and the actor loss trains only the adapter, so the
two never pull the shared features in different directions. The features drift as the adapter learns,
and the heads follow them, as target networks do.

Each head outputs a logit; the value is its sigmoid, trained with binary cross-entropy as the paper's
critics are. An algorithm holds its heads as its ``networks`` (``distrl.learner.algorithm``).
"""

from __future__ import annotations

import torch

__all__ = ["Heads", "logit", "value_head"]

WIDTH = 256
"""The hidden width of a value head."""


def value_head(features: int, width: int = WIDTH) -> torch.nn.Sequential:
    """A value head over ``features``-wide hidden states: LayerNorm, Linear, GELU, Linear to one logit."""
    return torch.nn.Sequential(
        torch.nn.LayerNorm(features),
        torch.nn.Linear(features, width),
        torch.nn.GELU(),
        torch.nn.Linear(width, 1),
    )


def logit(head: torch.nn.Module, states: torch.Tensor) -> torch.Tensor:
    """The head's logits for ``states`` ``(n, features)``, detached from the policy; ``(n,)``."""
    out: torch.Tensor = head(states.detach().float())
    return out.squeeze(-1)


class Heads(torch.nn.Module):
    """Named value heads over ``features``-wide hidden states, built in the order named (``step``,
    ``trajectory``, ...), each reachable as an attribute."""

    def __init__(self, features: int, *names: str) -> None:
        super().__init__()
        self.features = features
        for name in names:
            self.add_module(name, value_head(features))

    def logit(self, name: str, states: torch.Tensor) -> torch.Tensor:
        """Head ``name``'s logits for ``states`` (``logit``), with gradients to the head; ``(n,)``."""
        head = self.get_submodule(name)
        return logit(head, states)

    def value(self, name: str, states: torch.Tensor) -> torch.Tensor:
        """V = sigmoid(logit) of head ``name`` for ``states``, without gradients; ``(n,)``."""
        with torch.no_grad():
            return torch.sigmoid(self.logit(name, states))
