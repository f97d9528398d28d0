"""Step 2 of an update (``distrl.learner.core``): a sampled batch scored under the current weights,
without gradients, in evaluation mode: the ``Batch`` an algorithm reads."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from distrl.learner.algorithm import Batch
from distrl.learner.ranks import Alone, Ranks
from distrl.learner.replay import ReplaySample
from distrl.learner.retrace import importance_ratios
from distrl.policy import Policy, PolicyInput
from distrl.records import InvalidAction, Step, Trajectory

__all__ = ["Scored", "policy_input", "score"]


class Scored:
    """A scored batch, with each step's prompt and answer for the actor's pass."""

    def __init__(
        self, batch: Batch, steps: Sequence[Step], inputs: Sequence[PolicyInput], texts: Sequence[str]
    ) -> None:
        self.batch = batch
        self.steps = steps
        """The batch's steps in order: trajectory by trajectory."""
        self.inputs = inputs
        self.texts = texts
        """Each step's answer, as the model wrote it."""


def score(
    policy: Policy, sample: ReplaySample, *, micro_batch: int, hidden: int, ranks: Ranks | Alone
) -> Scored:
    """``Policy.score`` over every step of ``sample``, ``micro_batch`` at a time: log π(a_t|s_t), the
    entropy and the hidden states (``hidden`` wide) the algorithms' heads read; then ρ_t from the stored
    behaviour log-probs. Each rank scores its share and the scores are gathered, so that every rank holds
    the whole batch."""
    device = policy.device
    steps = [step for trajectory in sample.trajectories for step in trajectory.steps]
    owners = [i for i, trajectory in enumerate(sample.trajectories) for _ in trajectory.steps]
    inputs = [policy_input(sample.trajectories[i], step) for i, step in zip(owners, steps, strict=True)]
    texts = [step.output for step in steps]
    count = len(inputs)
    first, stop = ranks.shard(count)
    parts: list[list[torch.Tensor]] = [[], [], [], []]  # log-prob, entropy, state, answer state
    with _evaluation(policy), torch.no_grad():
        for start in range(first, stop, micro_batch):
            end = min(start + micro_batch, stop)
            scores = policy.score(inputs[start:end], texts[start:end])
            assert scores.state is not None
            assert scores.answer_state is not None
            for part, tensor in zip(parts, scores, strict=True):
                part.append(tensor)  # type: ignore[arg-type]  # not None: asserted above
        scored = [
            torch.cat(part) if part else torch.zeros((0, *shape), device=device)
            for part, shape in zip(parts, ((), (), (hidden,), (hidden,)), strict=True)
        ]
        logprob, entropy, state, answer_state = (ranks.gather(tensor, count) for tensor in scored)
    behaviour = torch.tensor([step.behaviour_logprob for step in steps], device=device)
    batch = Batch(
        trajectories=sample.trajectories,
        spans=_spans(sample.trajectories),
        logprob=logprob,
        behaviour=behaviour,
        entropy=entropy,
        state=state,
        answer_state=answer_state,
        rhos=importance_ratios(logprob, behaviour),
        weights=torch.tensor([sample.weights[i] for i in owners], dtype=torch.float32, device=device),
        invalid=torch.tensor(
            [isinstance(step.action, InvalidAction) for step in steps], dtype=torch.float32, device=device
        ),
        outcome=torch.tensor(
            [1.0 if t.success else 0.0 for t in sample.trajectories], dtype=torch.float32, device=device
        ),
    )
    return Scored(batch, steps, inputs, texts)


def policy_input(trajectory: Trajectory, step: Step) -> PolicyInput:
    """What the policy saw at ``step``: the goal, the screen and the actions before it."""
    history = tuple(s.action for s in trajectory.steps[: step.index])
    return PolicyInput(goal=trajectory.task.goal, observation=step.observation, history=history)


def _spans(trajectories: Sequence[Trajectory]) -> list[tuple[int, int]]:
    spans = []
    start = 0
    for trajectory in trajectories:
        spans.append((start, start + len(trajectory.steps)))
        start += len(trajectory.steps)
    return spans


class _evaluation:  # used as a context manager, like torch.no_grad
    """Evaluation mode (no dropout) for the duration, then the mode the policy was in."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.training = policy.model.training

    def __enter__(self) -> None:
        self.policy.train(False)

    def __exit__(self, *exc: object) -> None:
        self.policy.train(self.training)
